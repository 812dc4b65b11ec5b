import t from 'tap'
import { MemoryStore } from '../lib/plugin.ts'
import { AUTH, JSON_TYPE, build } from './helper.ts'

const raw = (payload: string) => ({ method: 'POST' as const, url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload })

t.test('a valid NewPlant answers 200 with the Plant', async (t) => {
  const app = await build(t)
  const withTag = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 1, name: 'Fern', tag: 'green' } })
  t.equal(withTag.statusCode, 200)
  t.same(withTag.json(), { name: 'Fern', tag: 'green' })
  t.match(withTag.headers['content-type'], /^application\/json/)

  const noTag = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 2, name: 'Rose' } })
  t.equal(noTag.statusCode, 200)
  t.same(noTag.json(), { name: 'Rose' }, 'no tag is invented')
})

t.test('unknown properties are accepted, neither stored nor echoed', async (t) => {
  const store = new MemoryStore()
  const app = await build(t, { database: store })
  const res = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 3, name: 'Ivy', colour: 'green', id2: 4 } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { name: 'Ivy' })
  t.same(await store.get(3n), { id: 3n, name: 'Ivy' })
})

t.test('the 200 body is a Plant: it carries no id', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 5, name: 'Moss' } })
  t.notOk('id' in res.json())
})

t.test('the same id twice', async (t) => {
  const store = new MemoryStore()
  const app = await build(t, { database: store })
  const create = (payload: object) => app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload })

  t.equal((await create({ id: 7, name: 'Fern', tag: 'a' })).statusCode, 200)
  const replay = await create({ id: 7, name: 'Fern', tag: 'a' })
  t.equal(replay.statusCode, 200, 'an identical replay answers 200')
  t.same(replay.json(), { name: 'Fern', tag: 'a' })

  for (const other of [{ id: 7, name: 'Rose', tag: 'a' }, { id: 7, name: 'Fern', tag: 'b' }, { id: 7, name: 'Fern' }]) {
    const res = await create(other)
    t.equal(res.statusCode, 409, `different content ${JSON.stringify(other)} answers 409`)
    t.equal(res.json().error, 409)
    t.match(res.json().message, /id 7 exists with other content/)
  }
  t.same(await store.get(7n), { id: 7n, name: 'Fern', tag: 'a' }, 'the stored plant is unchanged')
})

t.test('bodies are validated without coercion', async (t) => {
  const app = await build(t)
  const cases: Array<[string, string, RegExp]> = [
    ['id as a string', '{"id":"12","name":"Fern"}', /body\/id must be an integer/],
    ['id as a fraction', '{"id":1.5,"name":"Fern"}', /body\/id must be an integer/],
    ['id null', '{"id":null,"name":"Fern"}', /body\/id must be an integer/],
    ['id true', '{"id":true,"name":"Fern"}', /body\/id must be an integer/],
    ['id missing', '{"name":"Fern"}', /body must have required property 'id'/],
    ['name null', '{"id":1,"name":null}', /body\/name must be string/],
    ['name a number', '{"id":1,"name":12}', /body\/name must be string/],
    ['name missing', '{"id":1}', /body must have required property 'name'/],
    ['tag null', '{"id":1,"name":"Fern","tag":null}', /body\/tag must be string/],
    ['tag a number', '{"id":1,"name":"Fern","tag":3}', /body\/tag must be string/],
    ['an array', '[{"id":1,"name":"Fern"}]', /body must be object/],
    ['a string', '"Fern"', /body must be object/],
    ['null', 'null', /body must be object/],
    ['a number', '12', /body must be object/]
  ]
  for (const [what, payload, message] of cases) {
    const res = await app.inject(raw(payload))
    t.equal(res.statusCode, 400, `${what} answers 400`)
    t.equal(res.json().error, 400)
    t.match(res.json().message, message, `${what}: the message says what is wrong`)
  }
})

t.test('malformed JSON answers 400 with the parser\'s reason', async (t) => {
  const app = await build(t)
  // (Malformed escapes in a short member name, which the int64 scan reads, too.)
  for (const payload of ['{"id":', '{id: 1}', '{"id":1,"name":"x"}}', '', '{"\\uZZZZ":1}', '{"\\x":1}', '{"id":1,"name":"a","\\u00":2}']) {
    const res = await app.inject(raw(payload))
    t.equal(res.statusCode, 400, `${JSON.stringify(payload)} answers 400`)
    t.match(res.json().message, /^The request body is not valid JSON: ./)
  }
})

t.test('prototype poisoning is refused', async (t) => {
  const app = await build(t)
  for (const payload of ['{"id":1,"name":"x","__proto__":{"admin":true}}', '{"id":1,"name":"x","constructor":{"prototype":{"admin":true}}}']) {
    const res = await app.inject(raw(payload))
    t.equal(res.statusCode, 400)
    t.match(res.json().message, /forbidden prototype property/)
  }
  t.equal(({} as Record<string, unknown>).admin, undefined, 'Object.prototype is untouched')
})

t.test('a missing body answers 400', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'POST', url: '/plants', headers: AUTH })
  t.equal(res.statusCode, 400)
  t.match(res.json().message, /A request body is required/)
})

t.test('content types', async (t) => {
  const app = await build(t)
  const body = '{"id":10,"name":"Fern"}'
  for (const type of ['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON']) {
    const res = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, 'content-type': type }, payload: body })
    t.equal(res.statusCode, 200, `${type} is accepted`)
  }
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'application/jsonx', 'multipart/form-data; boundary=x']) {
    const res = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, 'content-type': type }, payload: body })
    t.equal(res.statusCode, 415, `${type} answers 415`)
    t.match(res.json().message, /send the body as application\/json/)
  }
})

t.test('bodies over the limit answer 413', async (t) => {
  const app = await build(t, { bodyLimit: 100 })
  const small = await app.inject(raw(JSON.stringify({ id: 1, name: 'x'.repeat(50) })))
  t.equal(small.statusCode, 200)
  const large = await app.inject(raw(JSON.stringify({ id: 2, name: 'x'.repeat(200) })))
  t.equal(large.statusCode, 413)
  t.match(large.json().message, /larger than the limit of 100 bytes/)
})

t.test('the default body limit is 1 MiB', async (t) => {
  const app = await build(t)
  const justUnder = JSON.stringify({ id: 1, name: 'x', pad: '' }).length
  const fits = await app.inject(raw(JSON.stringify({ id: 1, name: 'x', pad: 'x'.repeat(1024 * 1024 - justUnder) })))
  t.equal(fits.statusCode, 200)
  const over = await app.inject(raw(JSON.stringify({ id: 2, name: 'x', pad: 'x'.repeat(1024 * 1024) })))
  t.equal(over.statusCode, 413)
})
