// GET /metrics: Prometheus text, guarded like the API unless made public,
// the metrics each part of the service reports, a host's own registry, and
// the bounds a scrape keeps (labels from a fixed set, answered while
// overloaded).
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify from 'fastify'
import { Registry } from 'prom-client'
import type { OpenMetricsContentType } from 'prom-client'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { AUTH, JSON_TYPE, TOKEN, build, until } from './helper.ts'
import { POSTGRES_SKIP, freshSchemaUrl } from './postgres.ts'
import { metricSample } from '../bench/metric-sample.ts'
import { receiver } from './receiver.ts'
import plantStore, { MemoryStore } from '../lib/plugin.ts'

async function scrape (app: FastifyInstance, prefix = ''): Promise<string> {
  const res = await app.inject({ url: `${prefix}/metrics`, headers: AUTH })
  if (res.statusCode !== 200) throw new Error(`GET /metrics → ${res.statusCode} ${res.body}`)
  return res.body
}

const create = (app: FastifyInstance, id: number | string) =>
  app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: `{"id":${id},"name":"fern"}` })

t.test('GET /metrics needs a token, and answers Prometheus text with the request, store and process metrics', async (t) => {
  const app = await build(t)
  const refused = await app.inject('/metrics')
  t.equal(refused.statusCode, 401)
  t.equal((await create(app, 1)).statusCode, 200)
  t.equal((await create(app, 1)).statusCode, 200, 'a replay')
  t.equal((await app.inject({ url: '/plants/2', headers: AUTH })).statusCode, 404)

  const res = await app.inject({ url: '/metrics', headers: AUTH })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8')
  const text = res.body
  t.equal(metricSample(text, 'plant_store_http_requests_total{operation="createPlant",method="POST",status="200"}'), 2)
  t.equal(metricSample(text, 'plant_store_http_requests_total{operation="getPlant",method="GET",status="404"}'), 1)
  t.equal(metricSample(text, 'plant_store_http_requests_total{operation="getMetrics",method="GET",status="401"}'), 1, 'the refused scrape')
  t.equal(metricSample(text, 'plant_store_http_request_duration_seconds_count{operation="createPlant",method="POST",status="200"}'), 2)
  t.equal(metricSample(text, 'plant_store_auth_failures_total'), 1)
  t.equal(metricSample(text, 'plant_store_store_operation_duration_seconds_count{store="memory",operation="create"}'), 2)
  t.equal(metricSample(text, 'plant_store_store_operation_duration_seconds_count{store="memory",operation="get"}'), 1)
  t.equal(metricSample(text, 'plant_store_ready'), 1)
  t.equal(metricSample(text, 'plant_store_overloaded'), 0)
  t.equal(metricSample(text, 'plant_store_webhook_deliveries_pending'), 0)
  // Node's own, from prom-client's collectDefaultMetrics.
  t.ok(metricSample(text, 'nodejs_eventloop_lag_seconds')! >= 0, 'event-loop lag')
  t.ok(metricSample(text, 'nodejs_heap_size_used_bytes')! > 0, 'heap')
  t.match(text, /^# TYPE nodejs_gc_duration_seconds histogram$/m, 'GC')
  t.ok(metricSample(text, 'process_cpu_user_seconds_total')! > 0, 'CPU')
})

t.test('requests of no operation are counted as `none`; labels come from a fixed set whatever the client sends', async (t) => {
  const app = await build(t)
  for (let i = 0; i < 50; i++) await app.inject({ url: `/nowhere-${i}?x=${i}`, headers: { ...AUTH, 'x-request-id': `id-${i}` } })
  await app.inject({ method: 'PATCH', url: '/plants', headers: AUTH })
  const text = await scrape(app)
  t.equal(metricSample(text, 'plant_store_http_requests_total{operation="none",method="GET",status="404"}'), 50, '50 paths, one series')
  t.equal(metricSample(text, 'plant_store_http_requests_total{operation="none",method="PATCH",status="405"}'), 1)
  t.notMatch(text, /nowhere|id-\d/, 'no path nor header of the client in a label')
})

t.test('METRICS_PUBLIC (metrics.public): no token needed; the API still needs one', async (t) => {
  const app = await build(t, { metrics: { public: true } })
  const res = await app.inject('/metrics')
  t.equal(res.statusCode, 200)
  t.match(res.body, /plant_store_http_requests_total/)
  t.equal((await app.inject('/plants')).statusCode, 401)
})

t.test('metrics: false: GET /metrics answers 404 in the Error shape, and nothing is kept', async (t) => {
  const app = await build(t, { metrics: false })
  const res = await app.inject({ url: '/metrics', headers: AUTH })
  t.equal(res.statusCode, 404)
  t.same(res.json(), { error: 404, message: 'Metrics are turned off on this server' })
})

t.test('a host registry: the plugin\'s metrics join the host\'s, without Node\'s defaults, and leave with the plugin', async (t) => {
  const registry = new Registry()
  const app = Fastify()
  await app.register(plantStore, { prefix: '/api', tokens: ['token'], database: 'memory:', overload: false, metrics: { registry } })
  app.get('/host-metrics', async (_request, reply) => reply.type(registry.contentType).send(await registry.metrics()))
  await app.inject({ method: 'POST', url: '/api/plants', headers: { authorization: 'Bearer token', ...JSON_TYPE }, payload: '{"id":5,"name":"ivy"}' })
  const text = (await app.inject('/host-metrics')).body
  t.equal(metricSample(text, 'plant_store_http_requests_total{operation="createPlant",method="POST",status="200"}'), 1)
  t.notMatch(text, /nodejs_heap_size_used_bytes/, 'the host decides on the process metrics')
  const own = await app.inject({ url: '/api/metrics', headers: { authorization: 'Bearer token' } })
  t.equal(metricSample(own.body, 'plant_store_http_requests_total{operation="createPlant",method="POST",status="200"}'), 1, 'the plugin serves the same registry')
  await app.close()
  t.notMatch(await registry.metrics(), /plant_store_/, 'closed: its metrics are taken out')
})

t.test('an OpenMetrics host registry: the plugin\'s counters leave with it, and it registers again', async (t) => {
  const registry = new Registry<OpenMetricsContentType>()
  registry.setContentType(Registry.OPENMETRICS_CONTENT_TYPE)
  for (let round = 1; round <= 2; round++) {
    const app = Fastify()
    await app.register(plantStore, { tokens: ['token'], database: 'memory:', overload: false, metrics: { registry } })
    await app.inject({ method: 'POST', url: '/plants', headers: { authorization: 'Bearer token', ...JSON_TYPE }, payload: '{"id":5,"name":"ivy"}' })
    // (Rendering is what renames the counters.)
    const text = await registry.metrics()
    t.equal(metricSample(text, 'plant_store_http_requests_total{operation="createPlant",method="POST",status="200"}'), 1, `round ${round}: counted`)
    await app.close()
    t.notMatch(await registry.metrics(), /plant_store_/, `round ${round}: closed, its metrics are taken out`)
  }
})

t.test('failed authentications and 429s are counted', async (t) => {
  const app = await build(t, { authFailureLimit: { max: 2, timeWindow: 60_000 } })
  for (let i = 0; i < 4; i++) await app.inject({ url: '/plants', headers: { authorization: 'Bearer wrong' } })
  const text = await scrape(app)
  t.equal(metricSample(text, 'plant_store_auth_failures_total'), 2)
  t.equal(metricSample(text, 'plant_store_auth_throttled_total'), 2)
  t.equal(metricSample(text, 'plant_store_http_requests_total{operation="listPlants",method="GET",status="429"}'), 2)
})

t.test('overloaded: the API answers 503, metrics still answer and say so', async (t) => {
  const app = await build(t, { overload: { maxHeapUsedBytes: 1, sampleInterval: 10 } })
  // (Watched from when the app is ready.)
  await app.ready()
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal((await app.inject({ url: '/plants', headers: AUTH })).statusCode, 503)
  const text = await scrape(app)
  t.equal(metricSample(text, 'plant_store_overloaded'), 1)
  t.equal(metricSample(text, 'plant_store_ready'), 0)
})

t.test('SQLite: commits, writes per commit and commit time', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-metrics-'))
  const app = await build(t, { database: `file:${join(dir, 'plants.db')}` })
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => create(app, i + 1)))
  t.same(answers.map((res) => res.statusCode), Array(20).fill(200))
  t.equal((await app.inject({ url: '/plants?limit=5', headers: AUTH })).statusCode, 200)
  const text = await scrape(app)
  const commits = metricSample(text, 'plant_store_sqlite_commits_total')!
  t.ok(commits >= 1 && commits <= 20, `${commits} commits for 20 creates`)
  t.equal(metricSample(text, 'plant_store_sqlite_commit_writes_sum'), 20, 'every write in some commit')
  t.equal(metricSample(text, 'plant_store_sqlite_commit_duration_seconds_count'), commits)
  t.equal(metricSample(text, 'plant_store_sqlite_unsynced_commits_total'), 0, 'every commit of creates waited for the disk')
  t.equal(metricSample(text, 'plant_store_store_operation_duration_seconds_count{store="sqlite",operation="create"}'), 20)
  t.equal(metricSample(text, 'plant_store_store_operation_duration_seconds_count{store="sqlite",operation="list"}'), 1, 'a page written as JSON is a list')
  t.notMatch(text, /operation="listJson"/)
})

t.test('PostgreSQL: the pool\'s connections and waiting queries', { skip: POSTGRES_SKIP }, async (t) => {
  const app = await build(t, { database: await freshSchemaUrl(t), poolSize: 3 })
  await Promise.all(Array.from({ length: 10 }, (_, i) => app.inject({ url: `/plants/${i}`, headers: AUTH })))
  const text = await scrape(app)
  const total = metricSample(text, 'plant_store_postgres_pool_connections{state="total"}')!
  t.ok(total >= 1 && total <= 3, `${total} connections, at most the pool size`)
  t.ok(metricSample(text, 'plant_store_postgres_pool_connections{state="idle"}')! <= total)
  t.equal(metricSample(text, 'plant_store_postgres_pool_waiting'), 0)
  t.equal(metricSample(text, 'plant_store_store_operation_duration_seconds_count{store="postgres",operation="get"}'), 10)
})

t.test('webhooks: attempts by outcome, the pending count and the age of the oldest', async (t) => {
  const failing = await receiver(t, 500)
  const app = await build(t, { webhooks: { allowPrivateNetworks: true, retryBaseMs: 60_000, timeoutMs: 1000, maxAttempts: 3 } })
  const sub = await app.inject({ method: 'POST', url: '/webhooks', headers: AUTH, payload: { url: failing.url } })
  t.equal(sub.statusCode, 201)
  t.equal((await create(app, 7)).statusCode, 200)
  await failing.waitFor(1)
  let text = ''
  await until(async () => {
    text = await scrape(app)
    return metricSample(text, 'plant_store_webhook_attempts_total{outcome="retry"}') === 1
  }, 'the failed attempt is counted')
  t.equal(metricSample(text, 'plant_store_webhook_deliveries_pending'), 1, 'waiting for its retry in a minute')
  await new Promise((resolve) => setTimeout(resolve, 1100))
  text = await scrape(app)
  t.ok(metricSample(text, 'plant_store_webhook_oldest_pending_age_seconds')! >= 1, 'a second old at least')

  const ok = await receiver(t, 204)
  await app.inject({ method: 'POST', url: '/webhooks', headers: AUTH, payload: { url: ok.url } })
  t.equal((await create(app, 8)).statusCode, 200)
  await ok.waitFor(1)
  await until(async () => metricSample(await scrape(app), 'plant_store_webhook_attempts_total{outcome="delivered"}') === 1, 'the delivery is counted')
})

t.test('Node\'s process metrics are collected once per process, however many instances keep registries of their own', async (t) => {
  const promClient = await import('prom-client')
  let collections = 0
  const { PlantStoreMetrics } = await t.mockImport<typeof import('../lib/metrics.ts')>('../lib/metrics.ts', {
    'prom-client': { ...promClient, collectDefaultMetrics: (options: Parameters<typeof promClient.collectDefaultMetrics>[0]) => { collections++; promClient.collectDefaultMetrics(options) } }
  })
  // (Each collection starts an event-loop monitor and a GC observer that nothing stops.)
  const instances = [new PlantStoreMetrics(), new PlantStoreMetrics(), new PlantStoreMetrics()]
  t.equal(collections, 1)
  for (const metrics of instances) t.match(await metrics.text(), /^nodejs_heap_size_used_bytes \d+/m, 'each still reports them')
  new PlantStoreMetrics({ registry: new Registry() }).close()
  t.equal(collections, 1, 'a host registry adds none')
})

t.test('the webhook backlog: read once for a burst of scrapes; a database that does not answer leaves the gauges and the rest answers', async (t) => {
  const store = new MemoryStore()
  let reads = 0
  let hang = false
  const backlog = store.webhooks.backlog.bind(store.webhooks)
  store.webhooks.backlog = async () => {
    reads++
    return hang ? await new Promise(() => {}) : await backlog()
  }
  const app = await build(t, { database: store })
  await Promise.all(Array.from({ length: 10 }, () => scrape(app)))
  t.equal(reads, 1, '10 scrapes at once, one read')
  await new Promise((resolve) => setTimeout(resolve, 1100))
  hang = true
  const started = Date.now()
  const text = await scrape(app)
  t.ok(Date.now() - started < 3000, `answered in ${Date.now() - started} ms`)
  t.equal(metricSample(text, 'plant_store_webhook_backlog_errors_total'), 1)
  t.equal(metricSample(text, 'plant_store_webhook_deliveries_pending'), 0, 'the last value stands')
  t.equal(metricSample(text, 'plant_store_ready'), 1, 'the rest answers')
})

t.test('the request-path series render exactly as prom-client\'s own metrics, and add up across workers the same way', async (t) => {
  const { AggregatorRegistry, Counter, Histogram } = await import('prom-client')
  const { LabelledCounter, LabelledHistogram } = await import('../lib/metric-series.ts')
  const buckets = [0.001, 0.01, 0.1, 1]
  // The same observations into ours and into prom-client's, in two registries each (two workers).
  const observations = [0.0005, 0.001, 0.0011, 0.05, 0.5, 1, 7]
  const ours = [new Registry(), new Registry()]
  const theirs = [new Registry(), new Registry()]
  ours.forEach((registry, worker) => {
    const histogram = new LabelledHistogram({ name: 'h_seconds', help: 'h', buckets, registers: [registry] })
    const counter = new LabelledCounter({ name: 'c_total', help: 'c', registers: [registry] })
    for (const value of observations) histogram.series('a', { op: 'a', status: 200 }).observe(value * (worker + 1))
    histogram.series('b', { op: 'b', status: 404 }).observe(0.02)
    counter.series('a', { op: 'a' }).value += 3 + worker
  })
  theirs.forEach((registry, worker) => {
    const histogram = new Histogram({ name: 'h_seconds', help: 'h', buckets, labelNames: ['op', 'status'], registers: [registry] })
    const counter = new Counter({ name: 'c_total', help: 'c', labelNames: ['op'], registers: [registry] })
    for (const value of observations) histogram.observe({ op: 'a', status: 200 }, value * (worker + 1))
    histogram.observe({ op: 'b', status: 404 }, 0.02)
    counter.inc({ op: 'a' }, 3 + worker)
  })
  t.equal(await ours[0]!.metrics(), await theirs[0]!.metrics(), 'one registry\'s text')
  const aggregated = async (registries: Registry[]) =>
    AggregatorRegistry.aggregate(await Promise.all(registries.map((registry) => registry.getMetricsAsJSON()))).metrics()
  t.equal(await aggregated(ours), await aggregated(theirs), 'the cluster\'s sum')
  t.match(await aggregated(ours), /^h_seconds_bucket\{le="0.001",op="a",status="200"\} 3$/m, 'cumulative buckets, bounds inclusive')
})

t.test('a host\'s registry reset zeroes the plugin\'s series, which go on counting', async (t) => {
  const registry = new Registry()
  const app = Fastify()
  await app.register(plantStore, { tokens: [TOKEN], database: 'memory:', overload: false, metrics: { registry } })
  t.teardown(() => app.close())
  await create(app, 1)
  await create(app, 2)
  registry.resetMetrics()
  await create(app, 3)
  const text = await registry.metrics()
  t.equal(metricSample(text, 'plant_store_http_requests_total{operation="createPlant",method="POST",status="200"}'), 1, 'requests since the reset')
  t.equal(metricSample(text, 'plant_store_http_request_duration_seconds_count{operation="createPlant",method="POST",status="200"}'), 1, 'durations since the reset')
  t.equal(metricSample(text, 'plant_store_store_operation_duration_seconds_count{store="memory",operation="create"}'), 1, 'store operations since the reset')
})

t.test('two stores instrumented by one metrics instance keep their own series; a rejection reaches the caller', async (t) => {
  const { PlantStoreMetrics } = await import('../lib/metrics.ts')
  const metrics = new PlantStoreMetrics({ registry: new Registry() })
  const failing = Object.assign(new MemoryStore(), { get: async () => { throw new Error('store failed') } })
  const first = metrics.instrument(new MemoryStore(), 'first')
  const second = metrics.instrument(failing, 'second')
  await first.get(1n)
  await t.rejects(second.get(1n), /store failed/)
  await t.rejects(second.get(2n), /store failed/)
  const text = await metrics.registry.metrics()
  t.equal(metricSample(text, 'plant_store_store_operation_duration_seconds_count{store="first",operation="get"}'), 1)
  t.equal(metricSample(text, 'plant_store_store_operation_duration_seconds_count{store="second",operation="get"}'), 2, 'failed operations are timed too')
  metrics.close()
})

t.test('an answer whose client left before it was ready is not counted', async (t) => {
  // A store whose get takes a while: the client hangs up meanwhile.
  const store = new MemoryStore()
  const get = store.get.bind(store)
  store.get = async (id) => { await new Promise((resolve) => setTimeout(resolve, 300)); return get(id) }
  const app = Fastify()
  await app.register(plantStore, { tokens: [TOKEN], database: store })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const { port } = app.server.address() as { port: number }
  const { connect } = await import('node:net')
  const socket = connect(port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write(`GET /plants/50 HTTP/1.1\r\nHost: x\r\nAuthorization: ${AUTH.authorization}\r\n\r\n`)
  await new Promise((resolve) => setTimeout(resolve, 50))
  socket.destroy()
  await new Promise((resolve) => setTimeout(resolve, 500))
  const answered = await app.inject({ url: '/plants/51', headers: AUTH })
  t.equal(answered.statusCode, 404)
  const text = await scrape(app)
  t.equal(metricSample(text, 'plant_store_http_requests_total{operation="getPlant",method="GET",status="404"}'), 1, 'only the request whose client stayed')
})
