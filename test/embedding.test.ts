import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Fastify from 'fastify'
import t from 'tap'
import type { Test } from 'tap'
import plantStore, { MemoryStore } from '../lib/plugin.ts'
import { build } from './helper.ts'

const TOKEN = 'host-token'
const auth = { authorization: `Bearer ${TOKEN}` }

async function host (t: Test) {
  const app = Fastify()
  app.get('/health', async () => ({ ok: true }))
  app.post('/echo', async (request) => ({ got: request.body }))
  app.get('/boom', async () => { throw new Error('host error') })
  await app.register(plantStore, { prefix: '/api', tokens: [TOKEN], database: 'memory:', overload: false })
  t.teardown(() => app.close())
  return app
}

t.test('the plugin serves its routes under the prefix', async (t) => {
  const app = await build(t, { prefix: '/api', tokens: [TOKEN] })
  const res = await app.inject({ method: 'POST', url: '/api/plants', headers: auth, payload: { id: 1, name: 'Fern' } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { name: 'Fern' })
  const wrong = await app.inject({ method: 'PUT', url: '/api/plants', headers: auth })
  t.equal(wrong.statusCode, 405)
  t.equal(wrong.json().message, 'Method PUT is not allowed on /api/plants; allowed: GET, HEAD, POST')
  t.equal((await app.inject({ method: 'POST', url: '/api/plants', payload: { id: 2, name: 'x' } })).statusCode, 401)
})

t.test('the host app keeps its own auth, parsers, errors and 404s', async (t) => {
  const app = await host(t)
  const health = await app.inject('/health')
  t.equal(health.statusCode, 200, 'host routes need no token')
  t.same(health.json(), { ok: true })

  const echo = await app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'text/plain' }, payload: 'hi' })
  t.same(echo.json(), { got: 'hi' }, 'the host still parses text/plain')
  const echoNumber = await app.inject({ method: 'POST', url: '/echo', headers: { 'content-type': 'application/json' }, payload: '{"n":9007199254740993}' })
  t.same(echoNumber.json(), { got: { n: 9007199254740992 } }, 'the host keeps its own JSON parser')

  const boom = await app.inject('/boom')
  t.equal(boom.statusCode, 500)
  t.same(boom.json(), { statusCode: 500, error: 'Internal Server Error', message: 'host error' }, 'the host keeps its error handler')

  const missing = await app.inject('/nowhere')
  t.equal(missing.json().error, 'Not Found', 'the host keeps its 404 handler')
  const plantsAtRoot = await app.inject({ method: 'POST', url: '/plants', headers: auth, payload: { id: 1, name: 'x' } })
  t.equal(plantsAtRoot.statusCode, 404, 'nothing leaks out of the prefix')
})

t.test('docs under the prefix point "Try it out" at the prefix', async (t) => {
  const app = await host(t)
  const res = await app.inject('/api/docs/json')
  t.equal(res.statusCode, 200)
  t.same(res.json().servers, [{ url: '/api', description: 'This server' }])
  t.equal((await app.inject('/api/docs/')).statusCode, 200, 'Swagger UI is served')
  t.equal((await app.inject('/api/docs/yaml')).statusCode, 200)
})

t.test('two instances side by side stay apart', async (t) => {
  const app = Fastify()
  await app.register(plantStore, { prefix: '/a', tokens: ['token-a'], database: 'memory:', overload: false })
  await app.register(plantStore, { prefix: '/b', tokens: ['token-b'], database: 'memory:', overload: false })
  t.teardown(() => app.close())
  const plant = { id: 1, name: 'Fern' }
  t.equal((await app.inject({ method: 'POST', url: '/a/plants', headers: { authorization: 'Bearer token-a' }, payload: plant })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/b/plants', headers: { authorization: 'Bearer token-a' }, payload: plant })).statusCode, 401, 'tokens are per instance')
  t.equal((await app.inject({ method: 'POST', url: '/b/plants', headers: { authorization: 'Bearer token-b' }, payload: { id: 1, name: 'Rose' } })).statusCode, 200, 'stores are per instance')
})

t.test('closing the host closes the store the plugin opened, not one passed in', async (t) => {
  const closed = t.capture(MemoryStore.prototype, 'close', async () => {})
  const app = Fastify()
  const mine = new MemoryStore()
  await app.register(plantStore, { prefix: '/opened', tokens: [TOKEN], database: 'memory:' })
  await app.register(plantStore, { prefix: '/given', tokens: [TOKEN], database: mine })
  await app.ready()
  t.equal(closed.calls.length, 0)
  await app.close()
  t.equal(closed.calls.length, 1, 'one store closed')
  t.not(closed.calls[0]!.receiver, mine, 'and not the one the host passed in')
})

t.test('an unknown database URL stops registration', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await t.rejects(async () => {
    await app.register(plantStore, { tokens: [TOKEN], database: 'mysql://x' })
  }, { code: 'PLANT_STORE_UNKNOWN_DATABASE' })
})

t.test('a SQLite file that is no database stops registration, though its writer thread starts while the routes compile', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-notadb-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'plants.db')
  writeFileSync(path, 'not a database, '.repeat(512))
  const app = Fastify()
  t.teardown(() => app.close())
  await t.rejects(async () => {
    await app.register(plantStore, { tokens: [TOKEN], database: `file:${path}` })
  }, /not a database/)
  t.equal(readFileSync(path, 'utf8'), 'not a database, '.repeat(512), 'the file is left as it was')
})

t.test('a host app can give its server the standalone edge', async (t) => {
  const { DEFAULT_EDGE_LIMITS, edgeServerOptions, guardEdge } = await import('../lib/plugin.ts')
  const limits = { ...DEFAULT_EDGE_LIMITS, maxConnections: 100 }
  const app = Fastify(edgeServerOptions(limits))
  guardEdge(app, limits)
  await app.register(plantStore, { prefix: '/api', tokens: [TOKEN], database: 'memory:', overload: false })
  t.teardown(() => app.close())
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const { connect } = await import('node:net')
  const raw = (request: string) => new Promise<string>((resolve) => {
    const socket = connect(Number(new URL(url).port), '127.0.0.1')
    let answer = ''
    socket.on('data', (chunk) => { answer += chunk })
    socket.on('close', () => resolve(answer))
    socket.write(request)
  })
  for (const [request, status] of [['GET /api/healthz HTTP/1.1\r\nConnection: close\r\n\r\n', 400], ['NONSENSE\r\n\r\n', 400], ['GET /api/healthz HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\n\r\n', 417]] as const) {
    const answer = await raw(request)
    t.match(answer, new RegExp(`^HTTP/1.1 ${status} `), JSON.stringify(request))
    t.match(answer, /\r\nx-request-id: /i)
    t.match(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)), { error: status, message: String })
  }
  t.equal((await fetch(`${url}/api/healthz`)).status, 200)
})

t.test('a host app stops as the server does: drain cuts an upload that never ends, halfway to its deadline', async (t) => {
  const { DRAIN_SERVER_OPTIONS, drain } = await import('../lib/plugin.ts')
  const app = Fastify({ ...DRAIN_SERVER_OPTIONS })
  await app.register(plantStore, { prefix: '/api', tokens: [TOKEN], database: 'memory:', overload: false })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const { connect } = await import('node:net')
  const socket = connect(Number(new URL(url).port), '127.0.0.1')
  t.teardown(() => socket.destroy())
  socket.on('error', () => {})
  // Authorized, 1000 bytes announced, one sent: app.close() alone would wait for the rest.
  socket.write(`POST /api/plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`)
  await new Promise((resolve) => setTimeout(resolve, 200))
  const started = Date.now()
  await drain(app, 2000)
  const took = Date.now() - started
  t.ok(took >= 900 && took < 1900, `closed after ${took} ms: at half the 2000 ms deadline`)
})

t.test('at the root, the plugin leaves the host its 404s, and answers 405 on its own paths', async (t) => {
  const app = Fastify()
  await app.register(plantStore, { tokens: [TOKEN], database: 'memory:', overload: false })
  // The host sets its own not-found handler after the plugin: no clash.
  app.setNotFoundHandler((request, reply) => reply.code(404).send({ host: 'not found', url: request.url }))
  t.teardown(() => app.close())
  t.same((await app.inject('/nowhere')).json(), { host: 'not found', url: '/nowhere' }, 'the host answers what is not the plugin\'s')
  const wrong = await app.inject({ method: 'PUT', url: '/plants', headers: auth })
  t.equal(wrong.statusCode, 405, 'a method the plugin does not serve on its path')
  t.equal(wrong.headers.allow, 'GET, HEAD, POST')
  t.match(wrong.json(), { error: 405, message: /^Method PUT is not allowed on \/plants/ })
  t.equal((await app.inject({ method: 'PATCH', url: '/plants/5', headers: auth })).headers.allow, 'GET, HEAD, DELETE')
  t.equal((await app.inject({ url: '/plants', headers: auth })).statusCode, 200, 'its own routes work')
})

t.test('the plugin is a named fastify-plugin, checked against Fastify 5, encapsulated all the same', async (t) => {
  const app = Fastify()
  app.get('/mine', async () => ({ ok: true }))
  await app.register(plantStore, { prefix: '/api', tokens: [TOKEN], database: 'memory:', overload: false })
  await app.ready()
  t.teardown(() => app.close())
  t.ok(app.hasPlugin('plant-store'), 'hasPlugin(\'plant-store\')')
  t.equal((await app.inject('/mine')).statusCode, 200, 'no hook of the plugin (its token check) reaches the host')
  t.notOk(app.hasDecorator('verifyBearerAuth'), 'nor its decorators')
})

t.test('a client that leaves while the host\'s async hook runs gives back the memory its body held', async (t) => {
  const { connect } = await import('node:net')
  const { setTimeout: sleep } = await import('node:timers/promises')
  const app = Fastify()
  // The host's own async hook (an audit lookup, say) runs before the plugin reads the body.
  app.addHook('preParsing', async (_request, _reply, payload) => { await sleep(200); return payload })
  // A budget of one body: a chunked one holds the whole limit while it is read.
  await app.register(plantStore, { tokens: [TOKEN], database: 'memory:', maxHeldBytes: 1024 * 1024, bodyLimit: 1024 * 1024, overload: false })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  const { port } = app.server.address() as import('node:net').AddressInfo
  const create = (id: number, leaveAfterMs?: number) => new Promise<string>((resolve) => {
    const body = JSON.stringify({ id, name: 'Fern' })
    const socket = connect(port, '127.0.0.1')
    let answer = ''
    socket.on('data', (chunk) => { answer += chunk })
    socket.on('error', () => {})
    socket.on('close', () => resolve(answer.split('\r\n', 1)[0] ?? ''))
    socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nConnection: close\r\n` +
      `Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`)
    if (leaveAfterMs !== undefined) setTimeout(() => socket.destroy(), leaveAfterMs)
  })
  t.match(await create(1), /^HTTP\/1\.1 200 /, 'a create while the hook waits')
  t.equal(await create(2, 50), '', 'a client that left before its body was read: no answer')
  await sleep(400)
  t.match(await create(3), /^HTTP\/1\.1 200 /, 'the next body still fits the budget')
})

t.test('a page the database wrote as JSON goes out as it is, past a host app\'s reply serializer and preSerialization hooks', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  // (Fastify gives the host's reply serializer to child contexts too.)
  app.setReplySerializer((payload) => JSON.stringify({ wrapped: payload }))
  const seen: unknown[] = []
  app.addHook('preSerialization', async (_request, _reply, payload) => {
    seen.push(payload)
    return payload
  })
  await app.register(plantStore, { prefix: '/api', tokens: [TOKEN], database: `file:${join(t.testdir(), 'plants.db')}`, overload: false, webhooks: false })
  const created = await app.inject({ method: 'POST', url: '/api/plants', headers: { ...auth, 'content-type': 'application/json' }, payload: '{"id":9007199254740993,"name":"Fern"}' })
  t.equal(created.statusCode, 200)
  seen.length = 0
  const res = await app.inject({ url: '/api/plants', headers: auth })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.equal(res.body, '[{"name":"Fern","id":9007199254740993}]', 'the spec\'s array, its id exact')
  t.same(seen, [], 'no hook was given the page')
})
