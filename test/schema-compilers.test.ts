// The plugin's validator and serializer compilers compile each distinct
// schema once: the spec's routes repeat a few (the Error answers, the id
// parameter), and compiling every copy was most of the start-up.
import { createRequire } from 'node:module'
import { isDeepStrictEqual } from 'node:util'
import { Ajv2020 } from 'ajv/dist/2020.js'
import Fastify from 'fastify'
import t from 'tap'
import plantStore from '../lib/plugin.ts'
import { createSerializerCompiler } from '../lib/serialization.ts'
import { REQUEST_CHECKS } from '../lib/request-check.ts'
import { RESPONSE_SERIALIZERS } from '../lib/response-serializers.ts'
import { createAjv, createValidatorCompiler } from '../lib/validation.ts'

const ERROR = { type: 'object', required: ['error', 'message'], properties: { error: { type: 'integer' }, message: { type: 'string' } } }
const ID = { type: 'object', properties: { id: { type: 'integer', format: 'int64', minimum: -(2n ** 63n), maximum: 2n ** 63n - 1n } } }
const route = { method: 'GET', url: '/x', httpStatus: '404' }

t.test('a serializer per distinct answer schema, the same for copies of it', async (t) => {
  const compile = createSerializerCompiler()
  const first = compile({ ...route, schema: structuredClone(ERROR) })
  t.equal(compile({ ...route, url: '/y', httpStatus: '400', schema: structuredClone(ERROR) }), first, 'a copy on another route and status: the same serializer')
  t.equal(first({ error: 404, message: 'gone' }), '{"error":404,"message":"gone"}')
  const other = compile({ ...route, schema: { ...ERROR, required: ['error'] } })
  t.not(other, first, 'another schema: its own')
  t.equal(other({ error: 1 }), '{"error":1}')
})

t.test('a validator per distinct schema and part, the same for copies of it', async (t) => {
  const compile = createValidatorCompiler()
  const params = compile({ schema: structuredClone(ID), method: 'GET', url: '/plants/:id', httpPart: 'params' })
  t.equal(compile({ schema: structuredClone(ID), method: 'DELETE', url: '/plants/:id', httpPart: 'params' }), params, 'a copy on another route: the same validator')
  const body = compile({ schema: structuredClone(ID), method: 'POST', url: '/plants', httpPart: 'body' })
  t.not(body, params, 'a body is validated without coercion: another validator')
  const data = { id: '12' }
  t.ok(params(data), 'a path parameter is read from text')
  t.same(data, { id: 12n })
  t.notOk(body({ id: '12' }), 'a body\'s string is no int64')
})

t.test('registering the plugin compiles no route schema: the spec\'s are compiled ahead', async (t) => {
  const schemas: string[] = []
  const compile = Ajv2020.prototype.compile
  t.teardown(() => { Ajv2020.prototype.compile = compile })
  Ajv2020.prototype.compile = function (this: Ajv2020, schema: unknown, meta?: boolean) {
    schemas.push(JSON.stringify(schema, (_key, value: unknown) => typeof value === 'bigint' ? String(value) : value))
    return compile.call(this, schema as object, meta)
  } as typeof compile
  const app = Fastify()
  const validated: string[] = []
  app.addHook('onRoute', ({ method, url, schema }) => {
    if (schema?.body || schema?.params || schema?.querystring) validated.push(`${String(method)} ${url}`)
  })
  await app.register(plantStore, { tokens: ['token'], database: 'memory:' })
  await app.ready()
  await app.close()
  t.ok(validated.length >= 7, `${validated.length} routes validate a part of their requests`)
  t.same(schemas, [], 'Ajv compiled nothing')
  t.equal(REQUEST_CHECKS.size, 7, 'seven distinct request schemas, compiled ahead')
})

t.test('a schema not compiled ahead is compiled once, as before', async (t) => {
  let compiled = 0
  const compile = Ajv2020.prototype.compile
  t.teardown(() => { Ajv2020.prototype.compile = compile })
  Ajv2020.prototype.compile = function (this: Ajv2020, schema: unknown, meta?: boolean) {
    if ((schema as { $id?: unknown }).$id === undefined) compiled++
    return compile.call(this, schema as object, meta)
  } as typeof compile
  const validate = createValidatorCompiler(new Map())
  const params = validate({ schema: structuredClone(ID), method: 'GET', url: '/plants/:id', httpPart: 'params' })
  validate({ schema: structuredClone(ID), method: 'DELETE', url: '/plants/:id', httpPart: 'params' })
  t.equal(compiled, 1)
  const data = { id: '9223372036854775807' }
  t.ok(params(data))
  t.same(data, { id: 2n ** 63n - 1n })
})

// What a request may hold, good and bad, for every request schema's parts.
const TEXTS = ['', 'Fern', 'x'.repeat(257), 'a\0b', '\uD800', 'sub_' + 'a'.repeat(32), 'msg_12', 'msg_0', '12', '0', '-1', '1001', '0x10', '1e2', '+5', ' 5', '9223372036854775807', '9223372036854775808', '-9223372036854775808', 'https://example.com/hook', 'not a url']
const VALUES: unknown[] = [...TEXTS, undefined, null, true, 12, 0, 1.5, 2n ** 63n - 1n, 2n ** 63n, -(2n ** 63n), 2 ** 53, [], {}, ['12'], [12n]]

t.test('the validators compiled ahead judge every request as Ajv compiling the schema now does', async (t) => {
  t.ok(REQUEST_CHECKS.size > 0)
  for (const [key, ahead] of REQUEST_CHECKS) {
    const coerce = key.startsWith('coerced ')
    const schema = JSON.parse(key.slice(key.indexOf(' ') + 1)) as { properties?: Record<string, unknown>, allOf?: Array<{ properties?: Record<string, unknown> }> }
    const now = createAjv(coerce).compile(schema)
    const names = Object.keys(schema.properties ?? Object.assign({}, ...(schema.allOf ?? []).map((part) => part.properties)))
    const cases: Array<Record<string, unknown>> = [{}]
    for (const name of names) for (const value of VALUES) cases.push(Object.fromEntries(names.map((other) => [other, other === name ? value : (coerce ? '1' : 'Fern')])))
    let differences = 0
    for (const data of cases) {
      const a = structuredClone(data)
      const b = structuredClone(data)
      const verdict = ahead(a)
      if (verdict !== now(b) || !isDeepStrictEqual(a, b) || !isDeepStrictEqual(ahead.errors?.map(shown), now.errors?.map(shown))) differences++
    }
    t.equal(differences, 0, `${key.slice(0, 60)}…: ${cases.length} requests judged alike`)
  }
})

// What a client is shown of an error (Fastify's message is built from these).
const shown = ({ instancePath, message }: { instancePath: string, message?: string }) => ({ instancePath, message })

t.test('registering the plugin compiles no answer schema: the spec\'s are compiled ahead', async (t) => {
  // The package the plugin compiles with, when it must (CommonJS: shared).
  const compilers = createRequire(import.meta.url)('@fastify/fast-json-stringify-compiler') as { SerializerSelector: () => (...args: unknown[]) => (route: unknown) => unknown }
  const { SerializerSelector } = compilers
  t.teardown(() => { compilers.SerializerSelector = SerializerSelector })
  let compiled = 0
  compilers.SerializerSelector = () => (...args) => {
    const build = SerializerSelector()(...args)
    return (route) => { compiled++; return build(route) }
  }
  t.equal(createSerializerCompiler(new Map())({ ...route, schema: ERROR })({ error: 1, message: 'm' }), '{"error":1,"message":"m"}')
  t.equal(compiled, 1, 'the count sees a compile')
  const app = Fastify()
  await app.register(plantStore, { tokens: ['token'], database: 'memory:' })
  await app.ready()
  await app.close()
  t.equal(compiled, 1, 'the plugin compiled nothing')
  t.ok(RESPONSE_SERIALIZERS.size >= 8, `${RESPONSE_SERIALIZERS.size} distinct answer schemas, compiled ahead`)
})

// What a serializer wrote, or why it would not (a required member missing).
function outcome (serialize: () => string): string {
  try {
    return serialize()
  } catch (err) {
    return `refused: ${(err as Error).message}`
  }
}

// An instance of an answer schema, every member present, with text that
// must be escaped and ids past 2^53.
function sample (schema: Record<string, any>, variant: number): unknown {
  if (schema.allOf) return Object.assign({}, ...schema.allOf.map((part: Record<string, any>) => sample(part, variant)))
  const type = Array.isArray(schema.type) ? schema.type.find((name: string) => name !== 'null') : schema.type
  switch (type) {
    case 'object': return Object.fromEntries(Object.entries(schema.properties ?? {}).filter((_entry, i) => variant === 0 || i % 2 === 0).map(([name, part]) => [name, sample(part as Record<string, any>, variant)]))
    case 'array': return [sample(schema.items ?? {}, variant), sample(schema.items ?? {}, 1)]
    case 'integer': return schema.format === 'int64' ? 2n ** 63n - 1n - BigInt(variant) : 404 + variant
    case 'number': return 1.5
    case 'boolean': return variant === 0
    case 'string': return schema.format === 'date-time' ? '2026-11-27T19:30:00.000Z' : `a "quoted" \\ line\u2028 é ${variant}`
    default: return 'any'
  }
}

t.test('the serializers compiled ahead write every answer as fast-json-stringify compiling the schema now does', async (t) => {
  const now = createSerializerCompiler(new Map())
  for (const [key, ahead] of RESPONSE_SERIALIZERS) {
    const schema = JSON.parse(key) as Record<string, any>
    const serialize = now({ ...route, schema })
    for (const variant of [0, 1]) {
      const data = sample(schema, variant)
      t.same(outcome(() => ahead(data)), outcome(() => serialize(data)), `${key.slice(0, 50)}…, variant ${variant}`)
    }
  }
})
