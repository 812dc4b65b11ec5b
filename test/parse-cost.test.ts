// The cost of reading a body depends on its size, not on what it holds: a
// run of 16 digits anywhere used to send every value of the body through a
// JSON reviver (0.42 s for 1 MiB instead of 0.019 s). Checked by what the
// parse does, not by timing it: the timings live in `npm run bench`.
import t from 'tap'
import { MAX_DEPTH, parseJsonBody } from '../lib/json-body.ts'
import { NOT_AN_INT64, int64FromDigits } from '../lib/int64.ts'
import { AUTH, JSON_TYPE, build } from './helper.ts'

const ID = new Set(['id'])
// About 1 MiB of small values, where a per-value reviver costs the most.
const items = Array.from({ length: 40_000 }, (_, i) => `{"a":${i},"b":"xy"}`).join(',')
const plain = `{"id":5,"name":"Fern","pad":[${items}]}`
const twin = `{"id":5,"name":"Fern","digits":"1234567890123456","pad":[${items}]}`

t.test('the body is parsed once, without a reviver, with or without a long digit run', async (t) => {
  for (const body of [plain, twin]) {
    const parse = t.capture(JSON, 'parse', JSON.parse)
    const parsed = parseJsonBody(body, ID) as { id: unknown }
    t.equal(parsed.id, 5n)
    const calls = parse()
    t.equal(calls.length, 1, 'one JSON.parse')
    t.equal(calls[0]!.args[1], undefined, 'and no reviver')
  }
})

t.test('an id of any length reaches BigInt only as its significant digits: 19 characters at most', async (t) => {
  // BigInt's parse of a long string is not linear, and a regex over the
  // digits once took quadratic time (100,000 zeros froze the server for
  // 14 s): a million-digit id is cut down by plain loops before BigInt sees
  // it. The regexes themselves are checked in test/linear-regexes.test.ts.
  const zeros = '0'.repeat(1_000_000)
  const cases: Array<[string, bigint | typeof NOT_AN_INT64]> = [
    [`1${zeros}1`, NOT_AN_INT64], [`1.${zeros}1`, NOT_AN_INT64], [`1${zeros}e-1000000`, 1n],
    [`9${zeros}e-1000000`, 9n], [`1.5${zeros}e1`, 15n], [`0.${zeros}`, 0n], [`-0.${zeros}7e1000001`, -7n]
  ]
  // What `read` returns, and the longest text BigInt was given meanwhile.
  const watched = <T>(read: () => T): [T, number] => {
    const bigInt = t.capture(globalThis, 'BigInt', BigInt)
    try {
      return [read(), Math.max(0, ...bigInt.calls.map(({ args }) => String(args[0]).length))]
    } finally {
      bigInt.restore()
    }
  }
  for (const [token, value] of cases) {
    const [parsed, longest] = watched(() => parseJsonBody(`{"id":${token},"name":"x"}`, ID) as { id: unknown })
    t.equal(parsed.id, value, `${token.slice(0, 6)}…${token.slice(-6)}: exact`)
    t.ok(longest <= 19, `and BigInt read ${longest} characters`)
  }
  for (const [text, value] of [[`${zeros}42`, 42n], [`-${zeros}42`, -42n], [`1${zeros}`, undefined]] as const) {
    const [id, longest] = watched(() => int64FromDigits(text))
    t.equal(id, value, `a path or query id ${text.slice(0, 3)}…${text.slice(-3)}: exact`)
    t.ok(longest <= 19, `and BigInt read ${longest} characters`)
  }
})

t.test('end to end: the twins get the same answer; too deep is the same 400 either way', async (t) => {
  const app = await build(t)
  const answers = []
  for (const body of [plain, twin]) {
    const res = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: body })
    answers.push([res.statusCode, res.body])
  }
  t.same(answers[0], [200, '{"name":"Fern"}'])
  t.same(answers[1], answers[0], 'a replay, whatever the padding')
  const deep = (inner: string) => `{"id":6,"name":"x","pad":${'['.repeat(100_000)}${inner}${']'.repeat(100_000)}}`
  for (const inner of ['1', '"1234567890123456"', '12345678901234567890']) {
    const res = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, ...JSON_TYPE }, payload: deep(inner) })
    t.equal(res.statusCode, 400)
    t.equal(res.json().message, `The request body nests arrays and objects deeper than ${MAX_DEPTH} levels`)
  }
})
