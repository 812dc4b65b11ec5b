import t from 'tap'
import { MemoryStore } from '../lib/plugin.ts'
import { int64FromDigits, int64FromJsonNumber, NOT_AN_INT64 } from '../lib/int64.ts'
import { MAX_DEPTH, parseJsonBody } from '../lib/json-body.ts'
import { AUTH, JSON_TYPE, build } from './helper.ts'

const ID = new Set(['id'])

t.test('the parser reads int64 members from their digits, and nothing else', async (t) => {
  t.same(parseJsonBody('{"id":9007199254740993}', ID), { id: 9007199254740993n })
  t.same(parseJsonBody('{"id":-9223372036854775808}', ID), { id: -9223372036854775808n })
  t.same(parseJsonBody('{"id":5,"name":"x"}', ID), { id: 5n, name: 'x' }, 'small ones are bigints too')
  t.same(parseJsonBody('{"id":12345678901234567890123}', ID), { id: NOT_AN_INT64 }, 'past int64: refused by name')
  t.same(parseJsonBody('{"n":9007199254740993,"id":1}', ID), { n: 9007199254740992, id: 1n }, 'other members are plain JSON')
  t.same(parseJsonBody('{"a":{"id":9007199254740993}}', ID), { a: { id: 9007199254740992 } }, 'only top-level members')
  t.same(parseJsonBody('{"id":1,"id":2}', ID), { id: 2n }, 'the last of duplicates, as JSON.parse keeps')
  t.same(parseJsonBody('{"id":1,"id":"2"}', ID), { id: '2' }, 'the last of duplicates even when it is no number')
  t.same(parseJsonBody('{"\\u0069d":9007199254740993}', ID), { id: 9007199254740993n }, 'an escaped member name')
  t.same(parseJsonBody('{"idx":9007199254740993,"i":5,"id":7,"\\u0069dy":9}', ID), { idx: 9007199254740992, i: 5, id: 7n, idy: 9 }, 'names that begin like a member, plain or escaped, are other members')
  t.same(parseJsonBody('{"name":"\\"id\\":5, [{","id":7}', ID), { name: '"id":5, [{', id: 7n }, 'names and brackets inside strings are text')
  t.same(parseJsonBody('{"id":42,"s":"12345678901234567"}', ID), { id: 42n, s: '12345678901234567' })
  t.same(parseJsonBody('{ "id" :\n\t 9007199254740993 \r\n}', ID), { id: 9007199254740993n }, 'whitespace around the member')
  t.same(parseJsonBody('{"id":\n\t 1.0000000000000001}', ID), { id: NOT_AN_INT64 }, 'a fraction after whitespace is read whole')
  t.same(parseJsonBody('{"id":-9223372036854775809}', ID), { id: NOT_AN_INT64 }, 'one past the least')
  t.same(parseJsonBody('{"id":9223372036854775808}', ID), { id: NOT_AN_INT64 }, 'one past the greatest')
  for (const token of ['01', '-', '1e', '1.', '+1', '.5', '--1', '1e+', '0x10']) {
    t.throws(() => parseJsonBody(`{"id":${token}}`, ID), { code: 'PLANT_STORE_INVALID_JSON' }, `malformed: ${token}`)
  }
  t.same(parseJsonBody('[1,{"id":9007199254740993}]', ID), [1, { id: 9007199254740992 }], 'a top-level array has no members')
  t.throws(() => parseJsonBody('{"id":9007199254740993,"__proto__":{}}', ID), /forbidden prototype property/)
  t.throws(() => parseJsonBody('{"id":1', ID), { code: 'PLANT_STORE_INVALID_JSON' })
  t.throws(() => parseJsonBody(' ', ID), { code: 'PLANT_STORE_INVALID_JSON' })
  t.throws(() => parseJsonBody('{"\\uZZZZ":1}', ID), { code: 'PLANT_STORE_INVALID_JSON' }, 'a malformed escape in a member name')
  // A flood of duplicates keeps one name/token pair: the last one wins.
  const flood = Array.from({ length: 20_000 }, (_, i) => `"id":${i},"\\u0069d":${i}.0`).join(',')
  t.same(parseJsonBody(`{${flood},"id":9007199254740993}`, ID), { id: 9007199254740993n }, '40,000 duplicate ids, then the one kept')
})

t.test('a flat body (one object, no escapes) is read as the same members inside a nested one are', async (t) => {
  // The usual body is read by a few searches rather than a walk over its
  // characters (json-body.ts, flatScan): adding a member that holds an
  // array sends the same members through the walk, whose reading is the
  // one to match.
  const nested = (flat: string) => flat.replace(/}\s*$/, ',"zz":[0]}')
  const members = (body: string, names = ID) => {
    const { zz, ...rest } = parseJsonBody(body, names) as Record<string, unknown>
    return rest
  }
  const cases = [
    '{"name":"id","id":5}', '{"id":5,"name":"id"}', '{"name":"id" , "id" : 9007199254740993 }', '{"id":"id"}',
    '{"a":"x","id":1.5,"b":"id"}', '{"id":1,"name":"x","id":9007199254740993,"tag":"id"}', '{"idx":1,"xid":2,"id":3}',
    '{"name":"\\u0022id\\u0022:7","id":8}', '{"a":"{","id":9007199254740993}', '{"a":":","b":"id","id":-0.0}',
    '{"id":1,"a":{"id":9007199254740993}}'
  ]
  for (const flat of cases) t.same(members(flat), members(nested(flat)), flat)
  // Random flat bodies, the id among other members whose values may read like it.
  const pick = <T>(items: readonly T[]) => items[Math.floor(Math.random() * items.length)]!
  const names = ['id', 'i', 'idx', 'name', ' id', 'id ']
  const values = ['1', '9007199254740993', '-12.0', '1e3', '1.5', '"id"', '"id\\":1"', '" \\"id\\" : 2 "', '":"', '","', 'true', 'null']
  for (let n = 0; n < 500; n++) {
    const body = `{${Array.from({ length: 1 + Math.floor(Math.random() * 5) }, () => `${pick(['', ' '])}"${pick(names)}"${pick(['', ' ', '\n'])}:${pick(['', ' '])}${pick(values)}`).join(',')}}`
    const [flat, walked] = [members(body), members(nested(body))]
    if (!t.same(flat, walked, body)) break
  }
  const flood = Array.from({ length: 40_000 }, (_, i) => `"id":${i},"name":"id"`).join(',')
  t.same(members(`{${flood},"id" : 9007199254740993}`), { id: 9007199254740993n, name: 'id' }, '40,000 plain duplicates, then the one kept')
  // A name holding a `,` or a `:` could match the text between two
  // strings: such names are always found by the walk.
  t.same(parseJsonBody('{",":5,"a":"b",":1":2}', new Set([','])), { ',': 5n, a: 'b', ':1': 2 })
  t.same(parseJsonBody('{"a:b":9007199254740993}', new Set(['a:b'])), { 'a:b': 9007199254740993n })
})

t.test('__proto__ and constructor.prototype members are refused however they are written', async (t) => {
  // (secure-json-parse's check, skipped only for a text that cannot hold them.)
  for (const body of ['{"id":1,"__proto__":1}', '{"__proto__" : null}', '{"id":1,"__proto__":{"x":1}}', '{"id":1,"\\u005f_proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}},"id":1}', '{"\\u0063onstructor":{"prototype":{}}}', '{"a":{"__proto__":{}}}']) {
    t.throws(() => parseJsonBody(body, ID), /forbidden prototype property/, body)
  }
  t.same(parseJsonBody('{"constructor":1,"id":2}', ID), { constructor: 1, id: 2n }, 'a constructor member without a prototype is data')
  t.same(parseJsonBody('\uFEFF{"id":1}', ID), { id: 1n }, 'a byte order mark left at the start is dropped, as secure-json-parse does')
})

t.test('one rule for the forms of an int64 number: its exact value must be a whole int64', async (t) => {
  const cases: Array<[string, bigint | undefined]> = [
    ['0', 0n], ['-0', 0n], ['-0.0', 0n], ['0e5', 0n], ['1e3', 1000n], ['1E+3', 1000n], ['1.0', 1n], ['1.50e1', 15n],
    ['10e-1', 1n], ['9007199254740993.0', 9007199254740993n], ['90071992547409930e-1', 9007199254740993n],
    ['9.223372036854775807e18', 9223372036854775807n], ['-9223372036854775808', -9223372036854775808n],
    ['1.5', undefined], ['1e-1', undefined], ['9223372036854775808', undefined], ['-9223372036854775809', undefined],
    ['1e19', undefined], ['1e300', undefined], ['1e9999999999', undefined], ['0.1e1', 1n], ['123e-2', undefined],
    ['999999999999999999', 999999999999999999n], ['-999999999999999999', -999999999999999999n], ['1000000000000000000', 1000000000000000000n],
    ['9999999999999999999', undefined], ['-', undefined], ['', undefined], ['1a', undefined], ['1 ', undefined]
  ]
  for (const [token, value] of cases) t.equal(int64FromJsonNumber(token), value, token)
  t.equal(int64FromJsonNumber('1'.repeat(100_000)), undefined, 'a huge literal is refused before BigInt reads it')
  t.equal(int64FromDigits('007'), 7n)
  t.equal(int64FromDigits('-9223372036854775808'), -9223372036854775808n)
  t.equal(int64FromDigits('0'.repeat(50) + '1'), 1n, 'leading zeros do not count against the length')
  for (const text of ['1e3', '1.0', '+1', '', '-', '--1', '1-', '9223372036854775808', '9'.repeat(10_000), '12/', ':1']) t.equal(int64FromDigits(text), undefined, text)
  t.equal(int64FromDigits('-0'), 0n)
  t.equal(int64FromDigits('999999999999999999'), 999999999999999999n)
  t.equal(int64FromDigits('9223372036854775807'), 9223372036854775807n)
})

t.test(`nesting past ${MAX_DEPTH} levels is refused, with or without long numbers`, async (t) => {
  const nest = (depth: number, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth)
  t.same(parseJsonBody(`{"a":${nest(MAX_DEPTH - 1)}}`, ID), { a: JSON.parse(nest(MAX_DEPTH - 1)) })
  for (const inner of ['1', '12345678901234567890']) {
    t.throws(() => parseJsonBody(`{"a":${nest(MAX_DEPTH)}}`, ID), { code: 'PLANT_STORE_BODY_TOO_DEEP', statusCode: 400 })
    t.throws(() => parseJsonBody(nest(100_000, inner), ID), { code: 'PLANT_STORE_BODY_TOO_DEEP' }, `100,000 levels around ${inner}`)
  }
  const objects = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)
  t.same(parseJsonBody(objects(MAX_DEPTH), ID), JSON.parse(objects(MAX_DEPTH)), 'objects alone count the same')
  t.throws(() => parseJsonBody(objects(MAX_DEPTH + 1), ID), { code: 'PLANT_STORE_BODY_TOO_DEEP' })
})

t.test('every int64 id is kept exactly, and nothing outside is accepted', async (t) => {
  const store = new MemoryStore()
  const app = await build(t, { database: store })
  const create = (id: string) => app.inject({
    method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: `{"id":${id},"name":"n${id}"}`
  })

  for (const id of ['-9223372036854775808', '-9223372036854775807', '-9007199254740993', '-1', '0',
    '9007199254740991', '9007199254740992', '9007199254740993', '9223372036854775806', '9223372036854775807']) {
    const res = await create(id)
    t.equal(res.statusCode, 200, `${id} is accepted`)
    t.same(await store.get(BigInt(id)), { id: BigInt(id), name: `n${id}` }, `${id} is stored exactly`)
  }
  t.equal((await create('9007199254740993')).statusCode, 200, '2^53+1 replays as itself')
  t.equal((await app.inject({
    method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: '{"id":9007199254740993,"name":"other"}'
  })).statusCode, 409, '2^53+1 is not confused with 2^53')

  for (const id of ['9223372036854775808', '-9223372036854775809', '99999999999999999999999', '1e300', '1.5', 'null', 'true', '[1]']) {
    const res = await create(id)
    t.equal(res.statusCode, 400, `${id} answers 400`)
    t.match(res.json().message, /body\/id must be an integer from -9223372036854775808 to 9223372036854775807/)
  }
  // Whole numbers written another way are the same id, whatever else the body holds.
  for (const [id, value] of [['1e3', 1000n], ['1.0', 1n], ['9007199254740995.0', 9007199254740995n]] as const) {
    t.equal((await create(id)).statusCode, 200, `${id} is accepted`)
    t.equal((await store.get(value))?.name, `n${id}`, `${id} is stored as ${value}`)
  }
  const zero = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: '{"id":-0.0,"name":"n0"}' })
  t.equal(zero.statusCode, 200, '-0.0 is 0: a replay of the plant created as 0')
  const padded = await app.inject({
    method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: '{"pad":"1234567890123456","id":1e3,"name":"n1e3"}'
  })
  t.equal(padded.statusCode, 200, 'a 16-digit run elsewhere changes nothing: the same id replays')
})
