import { Writable } from 'node:stream'
import t from 'tap'
import { AUTH, JSON_TYPE, TOKEN, build } from './helper.ts'
import { assertError, open } from './raw-http.ts'

const plant = { id: 1, name: 'Fern' }

t.test('no token: 401 with a Bearer challenge, whatever the body', async (t) => {
  const app = await build(t)
  const bodies = [
    { headers: JSON_TYPE, payload: JSON.stringify(plant) },
    { headers: JSON_TYPE, payload: '{"id":' },
    { headers: { 'content-type': 'text/plain' }, payload: 'hello' },
    { headers: JSON_TYPE, payload: 'x'.repeat(2 * 1024 * 1024) },
    { headers: {}, payload: undefined }
  ]
  for (const { headers, payload } of bodies) {
    const res = await app.inject({ method: 'POST', url: '/plants', headers, payload })
    t.equal(res.statusCode, 401)
    t.equal(res.headers['www-authenticate'], 'Bearer realm="plant-store"')
    t.same(res.json(), { error: 401, message: 'Missing bearer token: send the header "Authorization: Bearer <token>"' })
  }
})

t.test('a wrong token or scheme: 401 with error="invalid_token"', async (t) => {
  const app = await build(t, { realm: 'plants' })
  for (const authorization of [`Bearer ${TOKEN}x`, 'Bearer ', `Basic ${TOKEN}`, TOKEN, `Bearer ${TOKEN.slice(0, -1)}`]) {
    const res = await app.inject({ method: 'POST', url: '/plants', headers: { authorization }, payload: plant })
    t.equal(res.statusCode, 401, `"${authorization}" is refused`)
    t.equal(res.headers['www-authenticate'], 'Bearer realm="plants", error="invalid_token"')
    t.equal(res.json().error, 401)
  }
})

t.test('every configured token works; the scheme name is case-insensitive', async (t) => {
  const app = await build(t, { tokens: ['first', 'second-token'] })
  let id = 1
  for (const authorization of ['Bearer first', 'Bearer second-token', 'bearer first', 'BEARER second-token']) {
    const res = await app.inject({ method: 'POST', url: '/plants', headers: { authorization }, payload: { id: id++, name: 'x' } })
    t.equal(res.statusCode, 200, `"${authorization}" is accepted`)
  }
})

t.test('the plugin refuses to start without a token', async (t) => {
  await t.rejects(build(t, { tokens: [] }), { code: 'PLANT_STORE_NO_TOKENS' })
  await t.rejects(build(t, { tokens: [''] }), { code: 'PLANT_STORE_NO_TOKENS' })
})

t.test('tokens are never written to the log', async (t) => {
  const lines: string[] = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(String(chunk)); done() } })
  const app = await build(t, { server: { logger: { level: 'trace', stream } } })
  await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: plant })
  await app.inject({ method: 'POST', url: '/plants', headers: { authorization: 'Bearer wrong-secret' }, payload: plant })
  t.ok(lines.length > 0, 'something was logged')
  t.notOk(lines.some((line) => line.includes(TOKEN) || line.includes('wrong-secret')), 'no line holds a token')
  t.ok(lines.some((line) => line.includes('unauthorized')), 'the refusal is logged, without the token')
})

t.test('docs are public by default', async (t) => {
  const app = await build(t)
  t.equal((await app.inject('/docs/json')).statusCode, 200)
  t.equal((await app.inject('/docs/')).statusCode, 200)
})

t.test('protectDocs guards the docs with the same tokens', async (t) => {
  const app = await build(t, { protectDocs: true })
  const anonymous = await app.inject('/docs/json')
  t.equal(anonymous.statusCode, 401)
  t.equal(anonymous.headers['www-authenticate'], 'Bearer realm="plant-store"')
  t.equal((await app.inject({ url: '/docs/json', headers: AUTH })).statusCode, 200)
})

t.test('docs can be turned off', async (t) => {
  const app = await build(t, { docs: false })
  t.equal((await app.inject('/docs/json')).statusCode, 404)
})

// Node keeps the first of two Authorization headers; a proxy in front may
// read the last. Either way one of them would go unjudged.
t.test('two Authorization headers: 400, whichever holds the token, and nothing is stored', async (t) => {
  const app = await build(t)
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const cases: Array<[string, string]> = [
    ['the valid token first', `Authorization: Bearer ${TOKEN}\r\nAuthorization: Bearer z\r\n`],
    ['the valid token last', `Authorization: Bearer z\r\nauthorization: Bearer ${TOKEN}\r\n`],
    ['the valid token twice', `AUTHORIZATION: Bearer ${TOKEN}\r\nAuthorization: Bearer ${TOKEN}\r\n`]
  ]
  let id = 7001
  for (const [what, headers] of cases) {
    const body = JSON.stringify({ id: id++, name: 'Fern' })
    const client = open(t, url)
    client.write(`POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${headers}Content-Length: ${body.length}\r\n\r\n${body}`)
    const answer = (await client.answersWithin(1, 5000))[0]
    t.equal(answer?.status, 400, `${what}: 400 (got ${answer?.status})`)
    assertError(t, answer, 400, /more than one Authorization header/)
    t.equal((await app.inject({ method: 'GET', url: `/plants/${id - 1}`, headers: AUTH })).statusCode, 404, `${what}: not stored`)
  }
  const client = open(t, url)
  const body = JSON.stringify({ id, name: 'Fern' })
  client.write(`POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
  t.equal((await client.answersWithin(1, 5000))[0]?.status, 200, 'one header with the token: 200')
})

// A flood of Authorization lines within the edge's 16 KiB of headers (past
// it, 431: test/edge.test.ts): each request's lines are counted once per
// check, so it costs a scan of at most those bytes, and is refused whole.
t.test('900 Authorization headers, the valid token among them: 400, nothing stored, and the server still answers', async (t) => {
  const app = await build(t)
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  const body = JSON.stringify({ id: 7101, name: 'Fern' })
  const flood = `Authorization: Bearer ${TOKEN}\r\n` + 'authorization:x\r\n'.repeat(899)
  t.ok(flood.length < 16 * 1024, 'within the header limit')
  const client = open(t, url)
  client.write(`POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${flood}Content-Length: ${body.length}\r\n\r\n${body}`)
  const answer = (await client.answersWithin(1, 5000))[0]
  assertError(t, answer, 400, /more than one Authorization header/)
  t.equal((await app.inject({ method: 'GET', url: '/plants/7101', headers: AUTH })).statusCode, 404, 'not stored')
  t.equal((await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: body })).statusCode, 200, 'the next request is served')
})
