import { Writable } from 'node:stream'
import t from 'tap'
import { MemoryStore } from '../lib/plugin.ts'
import type { StoredPlant } from '../lib/plugin.ts'
import { AUTH, build } from './helper.ts'

t.test('an unknown route answers 404 Error', async (t) => {
  const app = await build(t)
  const res = await app.inject({ url: '/nothing/here', headers: AUTH })
  t.equal(res.statusCode, 404)
  t.same(res.json(), { error: 404, message: 'No route for GET /nothing/here; the API is described at /docs' })
})

t.test('without docs, the 404 does not point at them', async (t) => {
  const app = await build(t, { docs: false, prefix: '/v1' })
  const res = await app.inject({ url: '/v1/nothing', headers: AUTH })
  t.same(res.json(), { error: 404, message: 'No route for GET /v1/nothing' })
})

t.test('a wrong method on a known path answers 405 with Allow', async (t) => {
  const app = await build(t)
  for (const method of ['PUT', 'DELETE', 'PATCH'] as const) {
    const res = await app.inject({ method, url: '/plants?x=1', headers: AUTH })
    t.equal(res.statusCode, 405, `${method} /plants`)
    t.equal(res.headers.allow, 'GET, HEAD, POST')
    t.same(res.json(), { error: 405, message: `Method ${method} is not allowed on /plants; allowed: GET, HEAD, POST` })
  }
})

t.test('a method that carries a body (QUERY), or a body of any type, on a path that does not take one: 405 or 404, not 400 or 415', async (t) => {
  const app = await build(t, { prefix: '/v1' })
  for (const headers of [{ 'content-type': 'application/json' }, {}, { 'content-type': ';;' }]) {
    const res = await app.inject({ method: 'QUERY', url: '/v1/plants', headers: { ...AUTH, ...headers }, payload: '{}' })
    t.equal(res.statusCode, 405, `QUERY with ${JSON.stringify(headers)}`)
    t.equal(res.headers.allow, 'GET, HEAD, POST')
  }
  const nowhere = await app.inject({ method: 'POST', url: '/v1/nope', headers: { ...AUTH, 'content-type': ';;' }, payload: 'zz' })
  t.equal(nowhere.statusCode, 404, 'a malformed content type on a path the API does not have')
  t.match(nowhere.json(), { error: 404, message: /^No route for POST \/v1\/nope/ })
})

class BrokenStore extends MemoryStore {
  override async create (_plant: StoredPlant): Promise<never> {
    throw new Error('disk on fire at /var/lib/secret.db')
  }
}

t.test('an unexpected exception answers 500 without internals; the log has them', async (t) => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(String(chunk)); done() } })
  const app = await build(t, { database: new BrokenStore(), server: { logger: { stream } } })
  const res = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 1, name: 'x' } })
  t.equal(res.statusCode, 500)
  t.equal(res.json().error, 500)
  t.notMatch(res.body, /disk on fire|secret|stack/, 'the answer reveals nothing')
  t.match(res.json().message, /^Internal server error; the log has the details under request id req-\d+$/)
  const logged = lines.map((line) => JSON.parse(line)).find((entry) => entry.msg === 'request failed')
  t.match(logged, { level: 50, err: { message: 'disk on fire at /var/lib/secret.db', stack: /BrokenStore/ } })
})

t.test('a store that rejects with something other than an Error (null, a string): 500 in the Error shape', async (t) => {
  for (const reason of [null, undefined, 'no', 42]) {
    const store = new MemoryStore()
    store.create = () => Promise.reject(reason)
    const app = await build(t, { database: store })
    const res = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 1, name: 'x' } })
    t.equal(res.statusCode, 500, String(reason))
    t.match(res.json(), { error: 500, message: /^Internal server error/ }, String(reason))
  }
})

t.test('HEAD is served where GET is, and Allow says so', async (t) => {
  const app = await build(t)
  const head = await app.inject({ method: 'HEAD', url: '/plants', headers: AUTH })
  t.equal(head.statusCode, 200)
  t.equal(head.body, '')
  const wrong = await app.inject({ method: 'PATCH', url: '/healthz' })
  t.equal(wrong.statusCode, 405)
  t.equal(wrong.headers.allow, 'GET, HEAD')
})

t.test('DELETE takes no body: whatever is sent with it is ignored, unread, and the connection closed', async (t) => {
  const app = await build(t, { bodyLimit: 1000 })
  const create = () => app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 1, name: 'Fern' } })
  for (const [type, payload] of [['text/plain', 'hello'], ['application/json', 'x'.repeat(2_000_000)], ['not a media type', '{}'], ['application/json', '{"broken"']] as const) {
    await create()
    const res = await app.inject({ method: 'DELETE', url: '/plants/1', headers: { ...AUTH, 'content-type': type }, payload })
    t.equal(res.statusCode, 204, `${type}, ${payload.length} bytes: 204`)
  }
})

t.test('an error message never grows with the request', async (t) => {
  const app = await build(t)
  const res = await app.inject({ url: `/${'x'.repeat(10_000)}`, headers: AUTH })
  t.equal(res.statusCode, 404)
  t.ok(res.json().message.length < 300, `${res.json().message.length} characters`)
  const type = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, 'content-type': `text/${'x'.repeat(5000)}` }, payload: '{}' })
  t.equal(type.statusCode, 415)
  t.ok(type.json().message.length < 300, `${type.json().message.length} characters`)
})
