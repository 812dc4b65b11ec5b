// The PostgreSQL the tests use: PLANT_STORE_TEST_POSTGRES, or the local
// server CI provides. Each test gets a schema of its own, so that test files
// running in parallel never see each other's plants.
import { randomBytes } from 'node:crypto'
import pg from 'pg'
import type { Test } from 'tap'

export const POSTGRES_URL = process.env.PLANT_STORE_TEST_POSTGRES ?? 'postgres://postgres@127.0.0.1:5432/test'

async function probe (): Promise<string | false> {
  const client = new pg.Client({ connectionString: POSTGRES_URL, connectionTimeoutMillis: 3000 })
  try {
    await client.connect()
    await client.query('SELECT 1')
    return false
  } catch (err) {
    const reason = `PostgreSQL is not reachable at ${POSTGRES_URL} (${(err as Error).message}); ` +
      'set PLANT_STORE_TEST_POSTGRES=postgres://user@host:port/db to run these tests'
    // CI has a server: there, a missing one is a failure, not a skip.
    if (process.env.PLANT_STORE_REQUIRE_POSTGRES === '1') throw new Error(reason)
    return reason
  } finally {
    await client.end().catch(() => {})
  }
}

/** Why the PostgreSQL tests cannot run here, or false when they can. */
export const POSTGRES_SKIP = await probe()

async function admin<T> (query: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL })
  await client.connect()
  try {
    return await query(client)
  } finally {
    await client.end()
  }
}

/** A database URL whose search_path is a new, empty schema, dropped after the test. */
export async function freshSchemaUrl (t: Test): Promise<string> {
  const schema = `plant_store_test_${randomBytes(6).toString('hex')}`
  await admin((client) => client.query(`CREATE SCHEMA ${schema}`))
  t.teardown(() => admin((client) => client.query(`DROP SCHEMA ${schema} CASCADE`)))
  const url = new URL(POSTGRES_URL)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return url.toString()
}
