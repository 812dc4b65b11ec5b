import t from 'tap'
import { join } from 'node:path'
import { AUTH, JSON_TYPE, build, parseExactIds } from './helper.ts'

async function seeded (t: Parameters<typeof build>[0], ids: string[]) {
  const app = await build(t)
  for (const id of ids) {
    const res = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: `{"id":${id},"name":"p${id}"}` })
    t.equal(res.statusCode, 200)
  }
  return app
}

t.test('GET /plants/{id}: the stored plant with its exact id', async (t) => {
  const app = await seeded(t, ['9007199254740993', '-9223372036854775808', '9223372036854775807'])
  await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: 5, name: 'Fern', tag: 'green', extra: 1 } })

  for (const id of ['9007199254740993', '-9223372036854775808', '9223372036854775807']) {
    const res = await app.inject({ url: `/plants/${id}`, headers: AUTH })
    t.equal(res.statusCode, 200)
    t.match(res.body, new RegExp(`"id":${id}[,}]`), `${id}: the digits go out as they came in`)
    t.same(res.json(), { id: Number(id), name: `p${id}` }, 'and nothing else but the name')
  }
  t.same((await app.inject({ url: '/plants/5', headers: AUTH })).json(), { id: 5, name: 'Fern', tag: 'green' }, 'with its tag, without unknown properties')
})

t.test('GET /plants/{id}: 404 when absent, 400 when not an int64', async (t) => {
  const app = await seeded(t, ['9007199254740993'])
  const absent = await app.inject({ url: '/plants/9007199254740992', headers: AUTH })
  t.equal(absent.statusCode, 404)
  t.same(absent.json(), { error: 404, message: 'No plant has id 9007199254740992' })
  for (const id of ['abc', '1.5', '9223372036854775808', '-9223372036854775809', '1e3', '0x10', '%20']) {
    const res = await app.inject({ url: `/plants/${id}`, headers: AUTH })
    t.equal(res.statusCode, 400, `${id} answers 400`)
    t.match(res.json().message, /^params\/id must be an integer from/)
  }
})

t.test('DELETE /plants/{id}: 204, then 404', async (t) => {
  const app = await seeded(t, ['7'])
  const deleted = await app.inject({ method: 'DELETE', url: '/plants/7', headers: { ...AUTH, ...JSON_TYPE } })
  t.equal(deleted.statusCode, 204, 'a JSON content type with no body is fine where no body is expected')
  t.equal(deleted.body, '')
  t.equal((await app.inject({ url: '/plants/7', headers: AUTH })).statusCode, 404)
  const again = await app.inject({ method: 'DELETE', url: '/plants/7', headers: AUTH })
  t.equal(again.statusCode, 404)
  t.equal(again.json().error, 404)
})

t.test('GET /plants: ascending ids, limit and an exclusive cursor', async (t) => {
  const ids = ['9223372036854775807', '3', '-2', '9007199254740993', '0', '9007199254740992', '-9223372036854775808']
  const app = await seeded(t, ids)
  const sorted = ids.map(BigInt).sort((a, b) => (a < b ? -1 : 1)).map(String)
  const list = async (query: string) => {
    const res = await app.inject({ url: `/plants${query}`, headers: AUTH })
    t.equal(res.statusCode, 200, `GET /plants${query}`)
    // Read the ids from the text: JSON.parse would round them.
    return [...res.body.matchAll(/"id":(-?\d+)/g)].map((match) => match[1])
  }
  t.same(await list(''), sorted)
  t.same(await list('?limit=2'), sorted.slice(0, 2))
  t.same(await list('?after=0'), sorted.slice(sorted.indexOf('0') + 1))
  t.same(await list('?after=9007199254740992&limit=1'), ['9007199254740993'], 'the cursor is exact past 2^53')
  t.same(await list('?after=9223372036854775807'), [])

  const seen: string[] = []
  let after = ''
  for (;;) {
    const page = await list(`?limit=3${after && `&after=${after}`}`)
    if (page.length === 0) break
    seen.push(...page as string[])
    after = page.at(-1)!
  }
  t.same(seen, sorted, 'paging returns every plant once, in order')
})

t.test('GET /plants: 100 by default, 1000 at most', async (t) => {
  const app = await seeded(t, Array.from({ length: 150 }, (_, i) => String(i)))
  t.equal((await app.inject({ url: '/plants', headers: AUTH })).json().length, 100)
  t.equal((await app.inject({ url: '/plants?limit=1000', headers: AUTH })).json().length, 150)
  for (const query of ['limit=0', 'limit=1001', 'limit=abc', 'limit=1.5', 'limit=-1', 'after=abc', 'after=1.5', 'after=9223372036854775808',
    'limit=0x10', 'limit=1e2', 'limit=%2B5', 'limit=%205', 'limit=', 'after=0x10', 'after=1e3']) {
    const res = await app.inject({ url: `/plants?${query}`, headers: AUTH })
    t.equal(res.statusCode, 400, `${query} answers 400`)
    t.match(res.json().message, /^querystring\/(limit|after) must/)
  }
})

t.test('the read API needs the token too', async (t) => {
  const app = await seeded(t, ['1'])
  for (const [method, url] of [['GET', '/plants'], ['GET', '/plants/1'], ['DELETE', '/plants/1']] as const) {
    const res = await app.inject({ method, url })
    t.equal(res.statusCode, 401, `${method} ${url}`)
  }
  t.equal((await app.inject({ url: '/plants/1', headers: AUTH })).statusCode, 200, 'nothing was deleted')
})

t.test('wrong methods on /plants/{id} answer 405', async (t) => {
  const app = await build(t)
  const res = await app.inject({ method: 'PUT', url: '/plants/1', headers: AUTH })
  t.equal(res.statusCode, 405)
  t.equal(res.headers.allow, 'GET, HEAD, DELETE')
})

t.test('GET /plants from a store that writes its pages as JSON (SQLite): the answer a serialized page gives', async (t) => {
  const sqlite = await build(t, { database: `file:${join(t.testdir(), 'plants.db')}` })
  const memory = await build(t)
  const texts = ['Fern', '', '"quoted" \\ back\\slash', 'tab\tline\nfeed', '\u0001\u001f\u007f\u0080', '\u2028\u2029', '\uFEFF\uFFFF', '🌿 e\u0301', '</script>']
  const payloads = texts.map((name, i) => JSON.stringify(i % 2 === 0 ? { id: i, name } : { id: i, name, tag: texts[(i + 3) % texts.length] }))
  payloads.push('{"id":9223372036854775807,"name":"max"}', '{"id":-9223372036854775808,"name":"min","tag":""}', '{"id":9007199254740993,"name":"2^53+1"}')
  for (const payload of payloads) {
    for (const app of [sqlite, memory]) {
      t.equal((await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload })).statusCode, 200)
    }
  }
  for (const query of ['', '?limit=2', '?after=0&limit=3', '?after=9007199254740992', '?after=9223372036854775807', '?limit=1000']) {
    const [fromSqlite, fromMemory] = await Promise.all([sqlite, memory].map((app) => app.inject({ url: `/plants${query}`, headers: AUTH })))
    t.equal(fromSqlite!.statusCode, 200)
    t.equal(fromSqlite!.headers['content-type'], 'application/json; charset=utf-8', `${query}: a JSON answer`)
    t.equal(fromSqlite!.headers['content-type'], fromMemory!.headers['content-type'])
    t.same(parseExactIds(fromSqlite!.body), parseExactIds(fromMemory!.body), `${query}: the same page`)
    t.equal(fromSqlite!.body, fromMemory!.body, 'in the same bytes')
  }
  t.equal((await sqlite.inject({ url: '/plants?after=9223372036854775807', headers: AUTH })).body, '[]')
})
