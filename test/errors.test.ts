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
