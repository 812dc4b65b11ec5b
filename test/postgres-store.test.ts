import pg from 'pg'
import t from 'tap'
import { PostgresStore } from '../lib/stores/postgres-store.ts'
import { POSTGRES_SKIP, freshSchemaUrl } from './postgres.ts'
import { storeSuite } from './store-suite.ts'
import { tcpProxy } from './tcp-proxy.ts'

t.test('the PostgreSQL store', { skip: POSTGRES_SKIP }, async (t) => {
  storeSuite(t, async (t) => PostgresStore.open(await freshSchemaUrl(t)))

  t.test('a delivery written by an instance of the older version (no created_at) is dated by the column\'s default', async (t) => {
    const url = await freshSchemaUrl(t)
    const store = await PostgresStore.open(url)
    t.teardown(() => store.close())
    const client = new pg.Client({ connectionString: url })
    await client.connect()
    t.teardown(() => client.end())
    const before = Date.now()
    await client.query("INSERT INTO webhook_subscriptions (id, url, secret, created_at) VALUES ('sub_old', 'http://x', 's', '2026-01-01T00:00:00Z')")
    await client.query("INSERT INTO webhook_deliveries (subscription_seq, plant_id, payload, next_attempt_at) SELECT seq, 1, '{}', 0 FROM webhook_subscriptions")
    const { pending, oldestCreatedAt } = await store.webhooks.backlog()
    t.equal(pending, 1)
    t.ok(oldestCreatedAt! >= before - 1000 && oldestCreatedAt! <= Date.now() + 1000, 'dated when written')
  })

  t.test('instances starting at once migrate the schema once', async (t) => {
    const url = await freshSchemaUrl(t)
    const stores = await Promise.all(Array.from({ length: 4 }, () => PostgresStore.open(url)))
    t.teardown(() => Promise.all(stores.map((store) => store.close())))
    t.equal(await stores[0]!.create({ id: 1n, name: 'Fern' }), 'created')
    t.same(await stores[3]!.get(1n), { id: 1n, name: 'Fern' }, 'they share one table')
  })

  t.test('webhooks: subscribing and unsubscribing while two instances create: every create succeeds, each sees the change wholly before or after it', async (t) => {
    const url = await freshSchemaUrl(t)
    const stores = await Promise.all([PostgresStore.open(url), PostgresStore.open(url)])
    t.teardown(() => Promise.all(stores.map((store) => store.close())))
    const [one, two] = stores.map((store) => store.webhooks!)
    const sub = (n: number) => ({ id: `sub_${String(n).padStart(32, '0')}`, url: `http://127.0.0.1:9/${n}`, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() })
    await one!.subscribe(sub(1), 10)
    let next = 1n
    const created: bigint[] = []
    const creating = Promise.all(Array.from({ length: 8 }, async (_, worker) => {
      while (next <= 400n) {
        const id = next++
        t.equal(await stores[worker % 2]!.create({ id, name: `p${id}` }), 'created', `create ${id}`)
        created.push(id)
      }
    }))
    // (The creating workers move `next` on.)
    const reached = async (id: bigint) => {
      for (;;) {
        if (next >= id) return
        await new Promise((resolve) => setTimeout(resolve, 1))
      }
    }
    await reached(100n)
    await two!.subscribe(sub(2), 10)
    const afterSubscribe = next
    await reached(250n)
    t.equal(await one!.unsubscribe(sub(1).id), true)
    await creating
    const ids = (await two!.deliveries(sub(2).id, { limit: 1000 }))!.map(({ plantId }) => plantId)
    t.ok(ids.length >= 400 - Number(afterSubscribe), `every plant created after the subscription has its delivery (${ids.length})`)
    t.equal(new Set(ids).size, ids.length, 'one each')
    t.equal(await one!.deliveries(sub(1).id, { limit: 10 }), undefined, 'the deleted subscription\'s deliveries are gone')
  })

  t.test('webhooks: a subscription change waits for creates in progress, which read the subscriptions', async (t) => {
    const url = await freshSchemaUrl(t)
    const store = await PostgresStore.open(url)
    t.teardown(() => store.close())
    const sub = { id: `sub_${'1'.repeat(32)}`, url: 'http://127.0.0.1:9/', secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }
    const client = new pg.Client(url)
    await client.connect()
    t.teardown(() => client.end())
    for (const change of [() => store.webhooks!.subscribe(sub, 10), () => store.webhooks!.unsubscribe(sub.id)]) {
      // A create's statement in progress: it has read the subscriptions and not committed.
      await client.query('BEGIN')
      await client.query('SELECT count(*) FROM webhook_subscriptions')
      let settled = false
      const changing = change().finally(() => { settled = true })
      await new Promise((resolve) => setTimeout(resolve, 300))
      t.equal(settled, false, 'the change waits')
      await client.query('COMMIT')
      t.equal(await changing, true, 'and happens once the create has committed')
    }
  })

  t.test('webhooks: a subscription change waits at most a second for the table, then answers 503; creates go on', async (t) => {
    const url = await freshSchemaUrl(t)
    const store = await PostgresStore.open(url)
    t.teardown(() => store.close())
    const client = new pg.Client(url)
    await client.connect()
    t.teardown(() => client.end())
    // A long report holding the table.
    await client.query('BEGIN')
    await client.query('SELECT count(*) FROM webhook_subscriptions')
    const started = Date.now()
    const changing = store.webhooks!.subscribe({ id: `sub_${'2'.repeat(32)}`, url: 'http://127.0.0.1:9/', secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 10)
    await new Promise((resolve) => setTimeout(resolve, 100))
    const creating = store.create({ id: 1n, name: 'Fern' })
    await t.rejects(changing, { code: 'PLANT_STORE_UNAVAILABLE', statusCode: 503, message: /\(busy\)/ })
    t.ok(Date.now() - started < 3000, `refused after ${Date.now() - started} ms`)
    t.equal(await creating, 'created', 'the create queued behind it went on')
    t.ok(Date.now() - started < 3000, `and was done after ${Date.now() - started} ms, the report still open`)
    await client.query('COMMIT')
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
