import pg from 'pg'
import t from 'tap'
import { PostgresStore } from '../lib/stores/postgres-store.ts'
import { POSTGRES_SKIP, freshSchemaUrl } from './postgres.ts'
import { storeSuite } from './store-suite.ts'
import { tcpProxy } from './tcp-proxy.ts'

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

  t.test('a server away at start-up: the store opens, answers 503, and recovers without a restart', async (t) => {
    const url = new URL(await freshSchemaUrl(t))
    const proxy = await tcpProxy(url.hostname, Number(url.port || 5432))
    t.teardown(() => proxy.close())
    await proxy.cut()
    url.hostname = '127.0.0.1'
    url.port = String(proxy.port)
    const store = await PostgresStore.open(url.toString())
    t.teardown(() => store.close())
    await t.rejects(store.create({ id: 1n, name: 'Fern' }), { code: 'PLANT_STORE_UNAVAILABLE', statusCode: 503 })
    await t.rejects(store.ping(), { code: 'PLANT_STORE_UNAVAILABLE' })
    await proxy.restore()
    let outcome
    for (let tries = 0; tries < 50 && outcome === undefined; tries++) {
      outcome = await store.create({ id: 1n, name: 'Fern' }).catch(() => undefined)
      if (outcome === undefined) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    t.equal(outcome, 'created', 'the schema was set up once the server came back')
    t.same(await store.get(1n), { id: 1n, name: 'Fern' })
  })

  t.test('a database that does not exist is a start-up error, not a 503', async (t) => {
    const url = new URL(await freshSchemaUrl(t))
    url.pathname = '/plant_store_no_such_database'
    await t.rejects(PostgresStore.open(url.toString()), { code: '3D000' })
  })

  t.test('a row the database refuses fails alone; the rest of its batch is stored', async (t) => {
    const url = await freshSchemaUrl(t)
    const store = await PostgresStore.open(url)
    t.teardown(() => store.close())
    // A trigger stands for any row PostgreSQL itself rejects.
    const admin = new pg.Client({ connectionString: url })
    await admin.connect()
    t.teardown(() => admin.end())
    await admin.query(`CREATE FUNCTION refuse_poison() RETURNS trigger AS $$
      BEGIN IF NEW.name = 'poison' THEN RAISE EXCEPTION 'poisoned row'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`)
    await admin.query('CREATE TRIGGER refuse_poison BEFORE INSERT ON plants FOR EACH ROW EXECUTE FUNCTION refuse_poison()')
    const outcomes = await Promise.allSettled(Array.from({ length: 30 }, (_, i) =>
      store.create({ id: BigInt(i), name: i === 17 ? 'poison' : `p${i}` })))
    t.match(outcomes[17], { status: 'rejected', reason: { message: /poisoned row/ } }, 'the bad row fails')
    t.same(outcomes.filter((outcome, i) => i !== 17 && !(outcome.status === 'fulfilled' && outcome.value === 'created')), [], 'the 29 others are created')
    t.equal((await store.list({ limit: 100 })).length, 29, 'and stored')
  })

  t.test('prepared statements have names PostgreSQL keeps whole', async (t) => {
    const warnings = t.capture(console, 'error')
    const store = await PostgresStore.open(await freshSchemaUrl(t))
    t.teardown(() => store.close())
    await store.create({ id: 1n, name: 'Fern' })
    await Promise.all([store.create({ id: 1n, name: 'Fern' }), store.create({ id: 1n, name: 'Rose' })])
    await store.get(1n)
    await store.list({ limit: 10 })
    await store.list({ after: 0n, limit: 10 })
    await store.delete(1n)
    await store.ping()
    t.same(warnings.args(), [], 'no name was cut to 63 characters')
  })
})
