// What a 200 acknowledges is exactly what is stored and what every later
// read returns, on every store: text that a store would change (NUL,
// unpaired surrogates, bytes that are not UTF-8, another charset) is
// refused up front, and every form of an int64 number is one id.
import { isUtf8 } from 'node:buffer'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import type { Test } from 'tap'
import { MemoryStore } from '../lib/plugin.ts'
import type { PlantStorage } from '../lib/plugin.ts'
import { PostgresStore } from '../lib/stores/postgres-store.ts'
import { SqliteStore } from '../lib/stores/sqlite-store.ts'
import { AUTH, build } from './helper.ts'
import { POSTGRES_SKIP, freshSchemaUrl } from './postgres.ts'

const post = (payload: string | Buffer, type = 'application/json') =>
  ({ method: 'POST' as const, url: '/plants', headers: { ...AUTH, 'content-type': type }, payload })

const stores: Array<[string, (t: Test) => Promise<PlantStorage>, string | false]> = [
  ['memory', async () => new MemoryStore(), false],
  ['SQLite', async (t) => SqliteStore.open(join(t.testdir(), 'plants.db')), false],
  ['PostgreSQL', async (t) => PostgresStore.open(await freshSchemaUrl(t)), POSTGRES_SKIP]
]

// Strings as clients send them: any code point, and the pieces no store
// keeps as sent (NUL, unpaired surrogates of either half, reversed pairs).
const text = fc.array(fc.oneof(
  { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 8 }) },
  { weight: 1, arbitrary: fc.constantFrom('\u0000', '\ud800', '\udfff', '\udc00\ud800', '\ud83c', '\uffff', '\ufeff', '"', '\\') }
), { maxLength: 6 }).map((parts) => parts.join(''))

const isText = (value: string) => value.isWellFormed() && !value.includes('\u0000')
const length = (value: string) => [...value].length

for (const [name, open, skip] of stores) {
  t.test(`${name}: any text is stored as sent or refused with 400, and a replay is a 200`, { skip }, async (t) => {
    const store = await open(t)
    t.teardown(() => store.close())
    const app = await build(t, { database: store })
    let id = 0
    await fc.assert(fc.asyncProperty(text, fc.option(text, { nil: undefined }), async (plantName, tag) => {
      const plant = { id: ++id, name: plantName, ...(tag !== undefined && { tag }) }
      const body = JSON.stringify(plant)
      const res = await app.inject(post(body))
      const valid = isText(plantName) && length(plantName) <= 256 && (tag === undefined || (isText(tag) && length(tag) <= 64))
      if (!valid) {
        if (res.statusCode !== 400) throw new Error(`${body} answered ${res.statusCode}, not 400`)
        if (!/^body\/(name|tag) must/.test(res.json().message)) throw new Error(`the 400 does not name the field: ${res.body}`)
        return
      }
      if (res.statusCode !== 200) throw new Error(`${body} answered ${res.statusCode}: ${res.body}`)
      const read = await app.inject({ url: `/plants/${id}`, headers: AUTH })
      const stored = read.json()
      if (stored.name !== plantName || stored.tag !== tag) throw new Error(`${body} was read back as ${read.body}`)
      const replay = await app.inject(post(body))
      if (replay.statusCode !== 200) throw new Error(`the replay of ${body} answered ${replay.statusCode}: ${replay.body}`)
    }), { numRuns: 150 })
    t.pass('150 bodies: each stored exactly or refused')
  })
}

t.test('the text rule names the field and says why', async (t) => {
  const app = await build(t)
  for (const [body, field] of [['{"id":1,"name":"a\\u0000b"}', 'name'], ['{"id":1,"name":"\\ud800"}', 'name'],
    ['{"id":1,"name":"x","tag":"\\udfff"}', 'tag'], ['{"id":1,"name":"x","tag":"\\u0000"}', 'tag']] as const) {
    const res = await app.inject(post(body))
    t.equal(res.statusCode, 400, body)
    t.equal(res.json().message, `body/${field} must be Unicode text without NUL characters (U+0000) or unpaired surrogates (U+D800 to U+DFFF)`)
  }
  t.equal((await app.inject(post('{"id":2,"name":"x","other":"\\ud800\\u0000"}'))).statusCode, 200, 'a property that is not stored is not judged')
})

t.test('sizes: name up to 256 characters, tag up to 64, counted as characters, not UTF-16 units', async (t) => {
  const app = await build(t)
  const ok = async (plant: object) => (await app.inject(post(JSON.stringify(plant)))).statusCode
  t.equal(await ok({ id: 1, name: 'n'.repeat(256), tag: 't'.repeat(64) }), 200)
  t.equal(await ok({ id: 2, name: '🌿'.repeat(256), tag: '🌿'.repeat(64) }), 200, '256 emoji are 256 characters')
  const long = await app.inject(post(JSON.stringify({ id: 3, name: 'n'.repeat(257) })))
  t.equal(long.statusCode, 400)
  t.equal(long.json().message, 'body/name must NOT have more than 256 characters')
  t.match((await app.inject(post(JSON.stringify({ id: 4, name: 'n', tag: 't'.repeat(65) })))).json(), { error: 400, message: 'body/tag must NOT have more than 64 characters' })
})

t.test('bodies are UTF-8: invalid bytes are a 400, another charset a 415', async (t) => {
  const app = await build(t)
  const bytes = (...parts: Array<string | number[]>) => Buffer.concat(parts.map((part) => typeof part === 'string' ? Buffer.from(part) : Buffer.from(part)))
  for (const invalid of [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xc0, 0xaf], [0xf8, 0x88, 0x80, 0x80, 0x80]]) {
    const res = await app.inject(post(bytes('{"id":1,"name":"a', invalid, '"}')))
    t.equal(res.statusCode, 400, `bytes ${invalid.map((b) => b.toString(16)).join(' ')}`)
    t.equal(res.json().message, 'The request body is not valid UTF-8')
  }
  for (const type of ['application/json; charset=iso-8859-1', 'application/json; charset=latin1', 'application/json; charset=utf-16', 'application/json; charset="windows-1252"']) {
    const res = await app.inject(post(bytes('{"id":1,"name":"caf', [0xe9], '"}'), type))
    t.equal(res.statusCode, 415, type)
    t.match(res.json().message, /^Unsupported charset ".+": send the body as UTF-8/)
  }
  for (const [i, type] of ['application/json; charset=utf-8', 'application/json; charset=UTF8', 'application/json; charset="utf-8"', 'application/json'].entries()) {
    const res = await app.inject(post(bytes(`{"id":${10 + i},"name":"café"}`), type))
    t.equal(res.statusCode, 200, type)
    t.equal(res.json().name, 'café')
  }
  const bom = await app.inject(post(bytes([0xef, 0xbb, 0xbf], '{"id":20,"name":"bom"}')))
  t.equal(bom.statusCode, 200, 'a leading byte-order mark is dropped')
})

t.test('random bytes: valid UTF-8 text is stored, anything else a 400, never a 5xx', async (t) => {
  const app = await build(t)
  let id = 0
  // Bytes of one JSON string: no quote, backslash or control byte, so that
  // valid UTF-8 makes valid JSON.
  const byte = fc.integer({ min: 0x20, max: 0xff }).filter((b) => b !== 0x22 && b !== 0x5c)
  await fc.assert(fc.asyncProperty(fc.uint8Array({ maxLength: 24 }).map((raw) => Buffer.from(raw.filter((b) => b >= 0x20 && b !== 0x22 && b !== 0x5c))), fc.array(byte, { maxLength: 4 }), async (raw, more) => {
    const nameBytes = Buffer.concat([raw, Buffer.from(more)])
    const res = await app.inject(post(Buffer.concat([Buffer.from(`{"id":${++id},"name":"`), nameBytes, Buffer.from('"}')])))
    if (isUtf8(nameBytes)) {
      if (res.statusCode !== 200 || (await app.inject({ url: `/plants/${id}`, headers: AUTH })).json().name !== nameBytes.toString('utf8')) {
        throw new Error(`valid UTF-8 ${nameBytes.toString('hex')} answered ${res.statusCode}: ${res.body}`)
      }
    } else if (res.statusCode !== 400 || res.json().message !== 'The request body is not valid UTF-8') {
      throw new Error(`invalid UTF-8 ${nameBytes.toString('hex')} answered ${res.statusCode}: ${res.body}`)
    }
  }), { numRuns: 300 })
  t.pass('300 byte strings')
})

// An int64 written in any of the forms JSON allows for its value.
function forms (value: bigint): string[] {
  const digits = (value < 0n ? -value : value).toString()
  const sign = value < 0n ? '-' : ''
  const trimmed = digits.replace(/0+$/, '') || '0'
  const zeros = digits.length - trimmed.length
  return [`${value}`, `${value}.0`, `${value}.000`, `${value}e0`, `${value}E+0`, `${sign}${digits}0e-1`,
    `${sign}${trimmed}e${zeros}`, `${sign}${trimmed[0]}${trimmed.length > 1 ? `.${trimmed.slice(1)}` : ''}e${trimmed.length - 1 + zeros}`]
    .filter((form) => /^-?(0|[1-9])/.test(form) && !/^-?0\d/.test(form)) // JSON has no leading zeros
}

t.test('every form of an int64 number is the same id, whatever else the body holds', async (t) => {
  const store = new MemoryStore()
  const app = await build(t, { database: store })
  const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
  const pad = fc.constantFrom('', '"pad":"1234567890123456",', '"pad":[12345678901234567890],', '"id":"first",')
  await fc.assert(fc.asyncProperty(int64, pad, fc.nat(), async (value, padding, pick) => {
    const all = forms(value)
    const form = all[pick % all.length]!
    const res = await app.inject(post(`{${padding}"id":${form},"name":"n${value}"}`))
    if (res.statusCode !== 200) throw new Error(`${form} (${value}) answered ${res.statusCode}: ${res.body}`)
    if ((await store.get(value))?.name !== `n${value}`) throw new Error(`${form} was not stored as ${value}`)
  }), { numRuns: 300 })
  const notWhole = fc.tuple(int64, fc.integer({ min: 1, max: 9 })).map(([value, tenth]) => `${value}.${tenth}`)
  const outside = fc.oneof(fc.bigInt({ min: 2n ** 63n, max: 2n ** 70n }), fc.bigInt({ min: -(2n ** 70n), max: -(2n ** 63n) - 1n })).map(String)
  await fc.assert(fc.asyncProperty(fc.oneof(notWhole, outside, fc.constantFrom('1e19', '-1e19', '1e-1', '0.5')), async (form) => {
    const res = await app.inject(post(`{"id":${form},"name":"x"}`))
    if (res.statusCode !== 400 || !/^body\/id must be an integer/.test(res.json().message)) throw new Error(`${form} answered ${res.statusCode}: ${res.body}`)
  }), { numRuns: 200 })
  t.pass('500 numbers')
})

for (const [name, open, skip] of stores.slice(1)) {
  t.test(`${name}: 30 concurrent creates, one of them bad: the 29 others are stored`, { skip }, async (t) => {
    const store = await open(t)
    t.teardown(() => store.close())
    const app = await build(t, { database: store })
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) =>
      app.inject(post(JSON.stringify({ id: i, name: i === 11 ? 'bad\u0000name' : `p${i}` })))))
    t.equal(answers[11]!.statusCode, 400, 'the bad one is refused')
    t.same(answers.filter((_, i) => i !== 11).map((res) => res.statusCode), Array(29).fill(200), 'the others are acknowledged')
    t.same((await store.list({ limit: 100 })).map(({ id }) => id), Array.from({ length: 30 }, (_, i) => BigInt(i)).filter((id) => id !== 11n), 'and stored')
  })
}
