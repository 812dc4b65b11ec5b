import t from 'tap'
import { PostgresStore } from '../lib/stores/postgres-store.ts'
import { POSTGRES_SKIP, freshSchemaUrl } from './postgres.ts'
import { storeSuite } from './store-suite.ts'

t.test('the PostgreSQL store', { skip: POSTGRES_SKIP }, async (t) => {
  storeSuite(t, async (t) => PostgresStore.open(await freshSchemaUrl(t)))

  t.test('instances starting at once migrate the schema once', async (t) => {
    const url = await freshSchemaUrl(t)
    const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresStore.open(url)))
    t.teardown(() => Promise.all(stores.map((store) => store.close())))
    t.equal(await stores[0]!.create({ id: 1n, name: 'Fern' }), 'created')
    t.same(await stores[3]!.get(1n), { id: 1n, name: 'Fern' }, 'they share one table')
  })

  t.test('racing creates of one id: exactly one is created', async (t) => {
    const url = await freshSchemaUrl(t)
    const stores = await Promise.all([PostgresStore.open(url), PostgresStore.open(url)])
    t.teardown(() => Promise.all(stores.map((store) => store.close())))
    for (let id = 1n; id <= 20n; id++) {
      const outcomes = await Promise.all([
        stores[0]!.create({ id, name: 'A' }),
        stores[1]!.create({ id, name: 'B' })
      ])
      t.same(outcomes.toSorted(), ['conflict', 'created'], `id ${id}`)
    }
  })

  t.test('an unreachable server is a 503 kind of error', async (t) => {
    const url = await freshSchemaUrl(t)
    const store = await PostgresStore.open(url)
    await store.close()
    const unreachable = new URL(url)
    unreachable.port = '1'
    await t.rejects(PostgresStore.open(unreachable.toString()), { code: 'ECONNREFUSED' }, 'start-up fails while it is away')
  })
})
