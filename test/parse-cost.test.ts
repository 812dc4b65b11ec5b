// The cost of reading a body depends on its size, not on what it holds: a
// run of 16 digits anywhere used to send every value of the body through a
// JSON reviver (0.42 s for 1 MiB instead of 0.019 s). No timing threshold
// here: the twin bodies are compared with each other in one run.
import t from 'tap'
import { MAX_DEPTH, parseJsonBody } from '../lib/json-body.ts'
import { cpuTime, median, medianRatio } from './cpu-time.ts'
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

t.test('the twin with 16 digits costs within 2x of the body without (CPU time, interleaved, median)', async (t) => {
  const cpu = (body: string) => cpuTime(() => {
    for (let i = 0; i < 5; i++) parseJsonBody(body, ID)
  })
  await cpu(plain)
  await cpu(twin) // warm both paths up
  const ratio = await medianRatio(9, () => cpu(plain), () => cpu(twin))
  t.comment(`CPU time of the 16-digit twin / the plain body, median of 9 rounds: ${ratio.toFixed(2)}`)
  t.ok(ratio < 2, `within 2x (${ratio.toFixed(2)})`)
})

t.test('the cost of an id grows with its length, not with its square', async (t) => {
  // A regex over the digits once took quadratic time: 100,000 zeros froze
  // the server for 14 s. Four times the digits must cost about four times
  // as much, not sixteen.
  const forms = [(zeros: string) => `1${zeros}1`, (zeros: string) => `1.${zeros}1`, (zeros: string) => `1${zeros}e-${zeros.length}`]
  const cost = async (body: string) => {
    const times = []
    for (let i = 0; i < 5; i++) times.push(await cpuTime(() => parseJsonBody(body, ID)))
    return median(times)
  }
  for (const form of forms) {
    const [small, large] = [250_000, 1_000_000].map((n) => `{"id":${form('0'.repeat(n))},"name":"x"}`) as [string, string]
    await cost(small)
    const growth = await cost(large) / await cost(small)
    t.comment(`${form('0')}: 4x the digits cost ${growth.toFixed(1)}x`)
    t.ok(growth < 8, 'linear, not quadratic')
  }
  t.same(parseJsonBody(`{"id":1${'0'.repeat(1_000_000)}e-1000000,"name":"x"}`, ID), { id: 1n, name: 'x' }, 'and the value is exact')
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
