// The plugin's validator and serializer compilers compile each distinct
// schema once: the spec's routes repeat a few (the Error answers, the id
// parameter), and compiling every copy was most of the start-up.
import { Ajv2020 } from 'ajv/dist/2020.js'
import Fastify from 'fastify'
import t from 'tap'
import plantStore from '../lib/plugin.ts'
import { createSerializerCompiler } from '../lib/serialization.ts'
import { createValidatorCompiler } from '../lib/validation.ts'

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

t.test('registering the plugin compiles each distinct route schema once', async (t) => {
  const schemas: string[] = []
  const compile = Ajv2020.prototype.compile
  t.teardown(() => { Ajv2020.prototype.compile = compile })
  Ajv2020.prototype.compile = function (this: Ajv2020, schema: unknown, meta?: boolean) {
    if ((schema as { $id?: unknown })?.$id === undefined) schemas.push(JSON.stringify(schema, (_key, value: unknown) => typeof value === 'bigint' ? String(value) : value))
    return compile.call(this, schema as object, meta)
  } as typeof compile
  const app = Fastify()
  let routes = 0
  app.addHook('onRoute', () => { routes++ })
  await app.register(plantStore, { tokens: ['token'], database: 'memory:', docs: false })
  await app.ready()
  await app.close()
  t.ok(routes > 10, `${routes} routes`)
  t.ok(schemas.length > 0, `${schemas.length} route schemas compiled`)
  // Ajv compiles a schema's parts on its own too: only whole route schemas count.
  t.equal(new Set(schemas).size, schemas.length, 'none twice')
})
