// What people deploying the service rely on: health checks, request ids,
// throttled token guessing, overload, CORS.
import { Writable } from 'node:stream'
import t from 'tap'
import Fastify from 'fastify'
import plantStore, { MemoryStore } from '../lib/plugin.ts'
import { StoreUnavailableError } from '../lib/errors.ts'
import { AUTH, TOKEN, build } from './helper.ts'

t.test('/healthz and /readyz answer without a token', async (t) => {
  const app = await build(t, { prefix: '/api' })
  for (const url of ['/api/healthz', '/api/readyz']) {
    const res = await app.inject(url)
    t.equal(res.statusCode, 200, url)
    t.same(res.json(), { status: 'ok' })
  }
  t.equal((await app.inject({ url: '/api/plants' })).statusCode, 401, 'the rest still needs one')
})

class UnreachableStore extends MemoryStore {
  override async ping (): Promise<void> {
    throw new StoreUnavailableError('unreachable')
  }
}

t.test('/readyz is 503 with Retry-After when the store does not answer; /healthz stays 200', async (t) => {
  const app = await build(t, { database: new UnreachableStore() })
  const ready = await app.inject('/readyz')
  t.equal(ready.statusCode, 503)
  t.equal(ready.headers['retry-after'], '2')
  t.same(ready.json(), { error: 503, message: 'The plant database is unavailable (unreachable); nothing was changed, retry shortly' })
  t.equal((await app.inject('/healthz')).statusCode, 200)
})

t.test('/readyz is 503 once the app is closing', async (t) => {
  // As the standalone server does: otherwise Fastify itself answers every
  // request during close with its own 503, before any plugin sees it.
  const app = await build(t, { server: { return503OnClosing: false } })
  let during: Response | undefined
  // preClose runs before the server stops accepting: a load balancer's
  // check at that moment must see "not ready".
  // (In a plugin registered after the plant store, so that it runs after it.)
  await app.register(async (later) => {
    later.addHook('preClose', async () => {
      during = await fetch(`${url}/readyz`)
    })
  })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  t.equal((await fetch(`${url}/readyz`)).status, 200)
  await app.close()
  t.equal(during?.status, 503)
  t.match(await during?.text(), /not ready: shutting down/)
})

t.test('every answer carries its request id', async (t) => {
  const app = await build(t)
  for (const url of ['/healthz', '/plants', '/nowhere', '/docs/json']) {
    const res = await app.inject(url)
    t.match(res.headers['x-request-id'], /^req-\d+$/, url)
  }
})

t.test('repeated failed authentication from one address: 429, while valid tokens pass', async (t) => {
  const app = await build(t, { authFailureLimit: { max: 3, timeWindow: 1000 } })
  const guess = () => app.inject({ url: '/plants', headers: { authorization: 'Bearer guess' } })
  for (let i = 1; i <= 3; i++) t.equal((await guess()).statusCode, 401, `failure ${i} is a 401`)
  const limited = await guess()
  t.equal(limited.statusCode, 429)
  t.ok(Number(limited.headers['retry-after']) >= 1, 'with Retry-After')
  t.match(limited.json(), { error: 429, message: /Too many failed authentications/ })
  t.equal((await app.inject({ url: '/plants', headers: AUTH })).statusCode, 200, 'a valid token from the same address still works')
  t.equal((await app.inject({ url: '/plants', headers: { ...AUTH, 'x-forwarded-for': '10.0.0.1' } })).statusCode, 200)
  await new Promise((resolve) => setTimeout(resolve, 1100))
  t.equal((await guess()).statusCode, 401, 'after the window, a 401 again')
})

t.test('the failure limit can be turned off', async (t) => {
  const app = await build(t, { authFailureLimit: false })
  for (let i = 0; i < 15; i++) {
    const res = await app.inject({ url: '/plants', headers: { authorization: 'Bearer guess' } })
    t.equal(res.statusCode, 401)
  }
})

t.test('overloaded: 503 Error with Retry-After, /readyz says so, /healthz still answers', async (t) => {
  // Any heap is over one byte: the first sample puts the process under pressure.
  const app = await build(t, { overload: { maxHeapUsedBytes: 1, sampleInterval: 10 } })
  // (Watched from when the app is ready.)
  await app.ready()
  await new Promise((resolve) => setTimeout(resolve, 100))
  const res = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 1, name: 'x' } })
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '2')
  t.same(res.json(), { error: 503, message: 'The service is not ready: overloaded' })
  const ready = await app.inject('/readyz')
  t.equal(ready.statusCode, 503)
  t.match(ready.json().message, /overloaded/)
  t.equal((await app.inject('/healthz')).statusCode, 200)
})

t.test('overload is watched from when the app is ready: a slow start-up is no overload', async (t) => {
  const app = Fastify()
  await app.register(plantStore, { tokens: [TOKEN], database: 'memory:', overload: { maxEventLoopDelay: 50 } })
  // Start-up work after the plugin's registration: 900 ms of a blocked
  // loop, most of the first one-second sample were it counted.
  await app.register(async () => {
    const until = Date.now() + 900
    while (Date.now() < until);
  })
  t.teardown(() => app.close())
  await app.ready()
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal((await app.inject({ url: '/plants', headers: AUTH })).statusCode, 200)
})

t.test('CORS is off by default', async (t) => {
  const app = await build(t)
  const res = await app.inject({ url: '/plants', headers: { ...AUTH, origin: 'https://app.example' } })
  t.equal(res.headers['access-control-allow-origin'], undefined)
})

t.test('CORS for configured origins; preflights need no token', async (t) => {
  const app = await build(t, { corsOrigins: ['https://app.example'] })
  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/plants',
    headers: { origin: 'https://app.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' }
  })
  t.equal(preflight.statusCode, 204)
  t.equal(preflight.headers['access-control-allow-origin'], 'https://app.example')
  t.match(preflight.headers['x-request-id'], /^req-\d+$/, 'a preflight names its request too')
  const actual = await app.inject({ url: '/plants', headers: { ...AUTH, origin: 'https://app.example' } })
  t.equal(actual.statusCode, 200)
  t.equal(actual.headers['access-control-allow-origin'], 'https://app.example')
  t.match(actual.headers['access-control-expose-headers'], /x-request-id/)
  const other = await app.inject({ url: '/plants', headers: { ...AUTH, origin: 'https://evil.example' } })
  t.not(other.headers['access-control-allow-origin'], 'https://evil.example')
  // A refusal can be read by the page too: CORS's headers are set before
  // the token is checked.
  const refused = await app.inject({ url: '/plants', headers: { origin: 'https://app.example' } })
  t.equal(refused.statusCode, 401)
  t.equal(refused.headers['access-control-allow-origin'], 'https://app.example')
})

t.test('CORS while overloaded: preflights still answer, and the page can read the 503', async (t) => {
  const app = await build(t, { corsOrigins: ['https://app.example'], overload: { maxHeapUsedBytes: 1, sampleInterval: 10 } })
  await app.ready()
  await new Promise((resolve) => setTimeout(resolve, 100))
  const preflight = await app.inject({
    method: 'OPTIONS', url: '/plants', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' }
  })
  t.equal(preflight.statusCode, 204)
  const res = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, origin: 'https://app.example' }, payload: { id: 1, name: 'x' } })
  t.equal(res.statusCode, 503)
  t.equal(res.headers['access-control-allow-origin'], 'https://app.example')
  t.match(res.headers['access-control-expose-headers'], /retry-after/)
  t.equal(res.headers['retry-after'], '2')
})

t.test('CORS preflights list exactly the methods each path serves, HEAD and DELETE included', async (t) => {
  const app = await build(t, { corsOrigins: ['https://app.example'] })
  const preflight = (url: string, method: string) => app.inject({
    method: 'OPTIONS', url, headers: { origin: 'https://app.example', 'access-control-request-method': method }
  })
  const one = await preflight('/plants/1', 'DELETE')
  t.equal(one.statusCode, 204)
  t.equal(one.headers['access-control-allow-methods'], 'GET, HEAD, DELETE, OPTIONS', 'a browser may delete')
  t.equal((await preflight('/plants', 'POST')).headers['access-control-allow-methods'], 'GET, HEAD, POST, OPTIONS')
  const nowhere = await preflight('/nowhere', 'GET')
  t.equal(nowhere.statusCode, 404, 'no preflight for a path the API does not have')
  t.equal(nowhere.headers['access-control-allow-methods'], undefined)
  const wrong = await app.inject({ method: 'PUT', url: '/plants/1', headers: AUTH })
  t.equal(wrong.headers.allow, 'GET, HEAD, DELETE, OPTIONS', 'Allow says the same as the preflight')
})

t.test('a 503 logs one line, without a stack', async (t) => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(String(chunk)); done() } })
  const app = await build(t, { database: new UnreachableStore(), server: { logger: { stream } } })
  t.equal((await app.inject('/readyz')).statusCode, 503)
  const logged = lines.map((line) => JSON.parse(line)).filter((entry) => entry.status === 503 || entry.err)
  t.equal(logged.length, 1, 'one line')
  t.match(logged[0], { level: 40, status: 503, code: 'PLANT_STORE_UNAVAILABLE', msg: /unavailable \(unreachable\)/ })
  t.notOk(JSON.stringify(logged[0]).includes('    at '), 'no stack')
})

t.test('resident memory past MAX_RSS_MB is an overload only while much of it is in use', async (t) => {
  const { rssOverloaded } = await import('../lib/lifecycle.ts')
  const MB = 1024 * 1024
  t.equal(rssOverloaded(900 * MB, 600 * MB, 800 * MB), true, 'resident and in use: refuse')
  t.equal(rssOverloaded(900 * MB, 100 * MB, 800 * MB), false, 'resident after a burst, but free: serve')
  t.equal(rssOverloaded(700 * MB, 650 * MB, 800 * MB), false, 'under the limit: serve')
})

t.test('memory: a flood of unique creates fills the store to MEMORY_MAX_RECORDS, no further: 503s, and every 200 is stored', async (t) => {
  const app = await build(t, { memoryMaxRecords: 100 })
  const answers = await Promise.all(Array.from({ length: 600 }, (_, i) => app.inject({
    method: 'POST', url: '/plants', headers: { ...AUTH, 'content-type': 'application/json' }, payload: `{"id":${i + 1},"name":"flood"}`
  })))
  const acknowledged = answers.flatMap((res, i) => res.statusCode === 200 ? [String(i + 1)] : [])
  t.equal(acknowledged.length, 100)
  const refused = answers.filter((res) => res.statusCode !== 200)
  t.ok(refused.every((res) => res.statusCode === 503 && res.headers['retry-after'] === '2' && /\(full\)/.test(res.json().message)), 'the rest: 503 Error, store full, Retry-After')
  const page = await app.inject({ url: '/plants?limit=1000', headers: AUTH })
  t.same(page.json().map((plant: { id: string | number }) => String(plant.id)).sort(), acknowledged.sort(), 'stored: exactly what was acknowledged')
})

t.test('memory: registering with a memoryMaxRecords of 0 fails, naming the option', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await t.rejects(async () => {
    await app.register(plantStore, { tokens: [TOKEN], database: 'memory:', memoryMaxRecords: 0 })
    await app.ready()
  }, { code: 'PLANT_STORE_MEMORY_MAX_RECORDS', message: /memoryMaxRecords/ })
})
