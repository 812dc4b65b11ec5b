import t from 'tap'
import { MemoryStore } from '../lib/plugin.ts'
import { parseJsonBody } from '../lib/json-body.ts'
import { AUTH, JSON_TYPE, build } from './helper.ts'

t.test('the parser keeps integers past 2^53 digit for digit', async (t) => {
  t.same(parseJsonBody('{"id":9007199254740993}'), { id: 9007199254740993n })
  t.same(parseJsonBody('{"id":-9223372036854775808}'), { id: -9223372036854775808n })
  t.same(parseJsonBody('[12345678901234567890123]'), [12345678901234567890123n], 'even past int64; validation decides')
  t.same(parseJsonBody('{"id":9007199254740991}'), { id: 9007199254740991 }, 'safe integers stay numbers')
  t.same(parseJsonBody('{"id":42,"s":"12345678901234567"}'), { id: 42, s: '12345678901234567' }, 'long digit runs in strings stay strings')
  t.same(parseJsonBody('{"x":1.5e300}'), { x: 1.5e300 }, 'non-integers are left as numbers')
  t.throws(() => parseJsonBody('{"id":9007199254740993,"__proto__":{}}'), /forbidden prototype property/, 'the reviver path refuses poisoning too')
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

  for (const id of ['9223372036854775808', '-9223372036854775809', '99999999999999999999999', '1e300', '9007199254740993.0', '1.5']) {
    const res = await create(id)
    t.equal(res.statusCode, 400, `${id} answers 400`)
    t.match(res.json().message, /body\/id must be an integer from -9223372036854775808 to 9223372036854775807/)
  }
  t.equal((await create('1e3')).statusCode, 200, 'an exponent that makes an exact small integer is an integer')
  t.same(await store.get(1000n), { id: 1000n, name: 'n1e3' })
})
