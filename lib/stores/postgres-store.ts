// PostgreSQL through a pg connection pool: for several instances of the
// service on one database. Every write is one autocommitted statement, so a
// 200 means committed.
import pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { StoreUnavailableError } from '../errors.ts'
import type { CreateOutcome, ListOptions, PlantStore, StoredPlant } from './plant-store.ts'

/** Applied in order; a released migration is never edited, only added to. */
export const POSTGRES_MIGRATIONS: readonly string[] = [
  `CREATE TABLE plants (
     id   BIGINT PRIMARY KEY,
     name TEXT NOT NULL,
     tag  TEXT              -- NULL: no tag; '' is a tag
   )`
]

// Any key will do, as long as every instance uses the same one.
const MIGRATION_LOCK = 7_263_548_913

// Errors that mean "the database is not there right now", not "wrong".
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])

function isUnavailable (err: { code?: string, message?: string }): boolean {
  const code = err.code ?? ''
  return UNAVAILABLE_CODES.has(code) ||
    code.startsWith('08') || // connection exception
    code.startsWith('53') || // insufficient resources: disk full, out of memory, too many connections
    code.startsWith('57P') || // operator intervention: shutdown, cannot connect now
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout/i.test(err.message ?? '')
}

interface Row { id: string, name: string, tag: string | null }

function toPlant ({ id, name, tag }: Row): StoredPlant {
  // int8 arrives as text, which BigInt reads exactly.
  return tag === null ? { id: BigInt(id), name } : { id: BigInt(id), name, tag }
}

export interface PostgresStoreOptions {
  log?: FastifyBaseLogger
  /** Connections in the pool. Default 10. */
  poolSize?: number
}

export class PostgresStore implements PlantStore {
  readonly #pool: pg.Pool

  private constructor (pool: pg.Pool) {
    this.#pool = pool
  }

  /** Connects, and creates or migrates the schema (safe when instances start at once). */
  static async open (url: string, { log, poolSize = 10 }: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: poolSize,
      connectionTimeoutMillis: 5_000,
      // A query on a connection that died silently fails instead of hanging.
      query_timeout: 10_000,
      keepAlive: true
    })
    // An idle connection that breaks (the server restarts) must not crash
    // the process; the pool replaces it on next use.
    pool.on('error', (err) => log?.warn({ err }, 'idle PostgreSQL connection lost'))
    const store = new PostgresStore(pool)
    try {
      await store.#migrate()
    } catch (err) {
      await pool.end()
      throw err
    }
    return store
  }

  async #migrate (): Promise<void> {
    const client = await this.#pool.connect()
    try {
      await client.query('BEGIN')
      // Instances starting together wait here, then find the work done.
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
      await client.query('CREATE TABLE IF NOT EXISTS plant_store_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())')
      const { rows } = await client.query<{ version: number }>('SELECT COALESCE(MAX(version), 0)::int AS version FROM plant_store_migrations')
      for (let version = rows[0]!.version + 1; version <= POSTGRES_MIGRATIONS.length; version++) {
        await client.query(POSTGRES_MIGRATIONS[version - 1]!)
        await client.query('INSERT INTO plant_store_migrations (version) VALUES ($1)', [version])
      }
      await client.query('COMMIT')
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw err
    } finally {
      client.release()
    }
  }

  async #query<R extends pg.QueryResultRow> (text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.#pool.query<R>({ text, values, name: text })
    } catch (err) {
      if (isUnavailable(err as Error)) throw new StoreUnavailableError('unreachable')
      throw err
    }
  }

  async create (plant: StoredPlant): Promise<CreateOutcome> {
    const tag = plant.tag ?? null
    for (;;) {
      // ON CONFLICT waits for a racing insert of the same id to commit, so
      // of two instances creating one id exactly one gets 'created'.
      const inserted = await this.#query('INSERT INTO plants (id, name, tag) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING', [plant.id.toString(), plant.name, tag])
      if (inserted.rowCount === 1) return 'created'
      const { rows } = await this.#query<Row>('SELECT name, tag FROM plants WHERE id = $1', [plant.id.toString()])
      // Deleted between the two statements: try again.
      if (rows[0] === undefined) continue
      return rows[0].name === plant.name && rows[0].tag === tag ? 'replayed' : 'conflict'
    }
  }

  async get (id: bigint): Promise<StoredPlant | undefined> {
    const { rows } = await this.#query<Row>('SELECT id, name, tag FROM plants WHERE id = $1', [id.toString()])
    return rows[0] && toPlant(rows[0])
  }

  async list ({ after, limit }: ListOptions): Promise<StoredPlant[]> {
    const { rows } = after === undefined
      ? await this.#query<Row>('SELECT id, name, tag FROM plants ORDER BY id LIMIT $1', [limit])
      : await this.#query<Row>('SELECT id, name, tag FROM plants WHERE id > $1 ORDER BY id LIMIT $2', [after.toString(), limit])
    return rows.map(toPlant)
  }

  async delete (id: bigint): Promise<boolean> {
    return (await this.#query('DELETE FROM plants WHERE id = $1', [id.toString()])).rowCount === 1
  }

  async close (): Promise<void> {
    await this.#pool.end()
  }
}
