// Property-based fuzzing of what strangers can send: bodies, content types
// and headers. Whatever arrives, the answer is never a 5xx, every error is
// the spec's Error, and the service is healthy afterwards.
import fc from 'fast-check'
import t from 'tap'
import { AUTH, TOKEN, build } from './helper.ts'

const contentType = fc.oneof(
  fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x', 'application/jsonx', 'application/json; charset=latin1', ''),
  fc.string({ maxLength: 40 })
)
const authorization = fc.oneof(
  fc.constant(`Bearer ${TOKEN}`),
  fc.constantFrom('Bearer', 'Bearer ', 'Basic abc', `bearer ${TOKEN}`, `Bearer  ${TOKEN}`, `Bearer ${TOKEN}x`),
  fc.string({ maxLength: 60 })
)
const body = fc.oneof(
  fc.json(),
  fc.string({ maxLength: 200 }),
  fc.record({ id: fc.oneof(fc.bigInt(), fc.integer(), fc.double(), fc.string(), fc.constant(null)), name: fc.oneof(fc.string(), fc.integer(), fc.constant(null)) })
    .map((plant) => JSON.stringify(plant, (_key, value) => typeof value === 'bigint' ? `@@${value}@@` : value).replace(/"@@(-?\d+)@@"/g, '$1')),
  fc.constantFrom('{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}', '{"id":1e400,"name":"x"}', '{"id":-0,"name":"x"}', '\uFEFF{"id":1,"name":"x"}'),
  // Text no store keeps as sent: NULs, unpaired surrogates.
  fc.tuple(fc.bigInt(), fc.array(fc.constantFrom('a', '\\u0000', '\\ud800', '\\udfff', '🌿', '\u0001'), { maxLength: 8 }))
    .map(([id, parts]) => `{"id":${id},"name":"${parts.join('')}","tag":"${parts.reverse().join('')}"}`),
  // Numbers in every form JSON allows, and some it does not.
  fc.tuple(fc.constantFrom('1', '-0', '9007199254740993', '9223372036854775807'), fc.constantFrom('', '.0', '.5', 'e3', 'E-2', '.0e0', '0e-1', 'e999999999'))
    .map(([digits, form]) => `{"id":${digits}${form},"name":"n"}`),
  // Deep nesting, and long digit runs beside it.
  fc.nat({ max: 40 }).map((depth) => `{"id":1,"name":"x","pad":${'['.repeat(depth)}"1234567890123456"${']'.repeat(depth)}}`)
)
// Bytes that are not UTF-8, inside otherwise valid JSON.
const bytes = fc.uint8Array({ minLength: 1, maxLength: 8 }).map((raw) => Buffer.concat([Buffer.from('{"id":1,"name":"'), Buffer.from(raw.map((b) => b | 0x80)), Buffer.from('"}')]))
const path = fc.oneof(
  fc.constantFrom('/plants', '/plants/1', '/plants/-1', '/plants/9223372036854775808', '/plants/abc', '/plants?limit=0', '/plants?after=1e3', '/healthz', '/readyz', '/docs/json'),
  fc.webPath().map((p) => p || '/')
)
const method = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD') as fc.Arbitrary<'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS' | 'HEAD'>

t.test('no request makes a 5xx; every error is an Error; the service stays healthy', async (t) => {
  const app = await build(t, { authFailureLimit: false })
  await fc.assert(fc.asyncProperty(method, path, contentType, authorization, fc.oneof({ weight: 5, arbitrary: body }, { weight: 1, arbitrary: bytes }), async (method, url, type, auth, payload) => {
    const headers: Record<string, string> = { authorization: auth }
    if (type) headers['content-type'] = type
    let res
    try {
      res = await app.inject({ method, url, headers, payload: method === 'GET' || method === 'HEAD' ? undefined : payload })
    } catch (err) {
      // inject itself refuses some header values (invalid characters): that
      // is the client library, not the service.
      if ((err as { code?: string }).code === 'ERR_INVALID_CHAR') return
      throw err
    }
    if (res.statusCode >= 500) throw new Error(`${method} ${url} (${type}) answered ${res.statusCode}: ${res.body}`)
    if (res.statusCode >= 400 && method !== 'HEAD') {
      const error = res.json()
      if (error.error !== res.statusCode || typeof error.message !== 'string' || Object.keys(error).length !== 2) {
        throw new Error(`${method} ${url} answered a non-Error body: ${res.body}`)
      }
    }
  }), { numRuns: 300 })

  t.equal((await app.inject('/healthz')).statusCode, 200, 'healthy afterwards')
  const create = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 424242, name: 'after the storm' } })
  t.equal(create.statusCode, 200, 'and still creating plants')
})
