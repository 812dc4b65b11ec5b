import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import t from 'tap'
import { SqliteStore } from '../lib/stores/sqlite-store.ts'
import { storeSuite } from './store-suite.ts'

storeSuite(t, async (t) => SqliteStore.open(join(t.testdir(), 'plants.db')))

t.test('the file and its directory are created; plants survive a reopen', async (t) => {
  const path = join(t.testdir(), 'deep', 'er', 'plants.db')
  const first = await SqliteStore.open(path)
  await first.create({ id: 9007199254740993n, name: 'Fern', tag: 'green' })
  await first.close()
  const second = await SqliteStore.open(path)
  t.teardown(() => second.close())
  t.same(await second.get(9007199254740993n), { id: 9007199254740993n, name: 'Fern', tag: 'green' })
})

t.test('durable settings: WAL and synchronous=FULL, schema version recorded', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const store = await SqliteStore.open(path)
  t.teardown(() => store.close())
  const db = new DatabaseSync(path)
  t.teardown(() => db.close())
  t.same(db.prepare('PRAGMA journal_mode').get(), { journal_mode: 'wal' })
  t.same(db.prepare('SELECT version FROM plant_store_migrations').all().map((row) => ({ ...row })), [{ version: 1 }])
})

t.test('concurrent creates share commits (group commit)', async (t) => {
  const store = await SqliteStore.open(join(t.testdir(), 'plants.db'))
  t.teardown(() => store.close())
  const outcomes = await Promise.all(Array.from({ length: 500 }, (_, i) => store.create({ id: BigInt(i), name: `p${i}` })))
  t.ok(outcomes.every((outcome) => outcome === 'created'), 'all 500 created')
  t.ok(store.commits < 100, `500 creates took ${store.commits} commits`)
  t.equal((await store.list({ limit: 1000 })).length, 500)
})

t.test('a full database is a 503 kind of error, and nothing is half-written', async (t) => {
  const store = await SqliteStore.open(join(t.testdir(), 'plants.db'), { pragmas: { max_page_count: 8 } })
  t.teardown(() => store.close())
  const big = 'x'.repeat(3000)
  let error: unknown
  let created = 0
  for (let id = 0n; id < 100n && error === undefined; id++) {
    try {
      await store.create({ id, name: big })
      created++
    } catch (err) {
      error = err
    }
  }
  t.match(error, { code: 'PLANT_STORE_UNAVAILABLE', statusCode: 503, message: /unavailable \(full\)/ })
  t.equal((await store.list({ limit: 1000 })).length, created, 'exactly the acknowledged plants are there')
  t.equal(await store.delete(0n), true, 'deleting makes room: the store is still usable')
})

t.test('stores opening one new file at once migrate it once', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const stores = await Promise.all(Array.from({ length: 4 }, () => SqliteStore.open(path)))
  t.teardown(() => Promise.all(stores.map((store) => store.close())))
  t.equal(await stores[0]!.create({ id: 1n, name: 'Fern' }), 'created')
  t.same(await stores[3]!.get(1n), { id: 1n, name: 'Fern' })
  const db = new DatabaseSync(path)
  t.teardown(() => db.close())
  t.same(db.prepare('SELECT version FROM plant_store_migrations').all().map((row) => ({ ...row })), [{ version: 1 }])
})
