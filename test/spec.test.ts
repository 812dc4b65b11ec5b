import { readFile } from 'node:fs/promises'
import { Ajv2020 } from 'ajv/dist/2020.js'
import Fastify from 'fastify'
import t from 'tap'
import plantStore from '../lib/plugin.ts'
import { loadSpec } from '../lib/spec.ts'
import { parse } from 'yaml'
import { derived } from '../spec/generate.ts'

const spec = await loadSpec() as Record<string, any>

t.test('the document is the seed\'s', async (t) => {
  t.equal(spec.openapi, '3.1.0')
  t.match(spec.info, { title: 'OpenAPI Plant Store', version: '1.0.0', license: { name: 'MIT' } })
  t.same(spec.security, [{ bearerAuth: [] }])
  t.same(spec.components.securitySchemes, { bearerAuth: { type: 'http', scheme: 'bearer' } })
})

t.test('POST /plants is createPlant as the seed describes it', async (t) => {
  const op = spec.paths['/plants'].post
  t.equal(op.operationId, 'createPlant')
  t.equal(op.description, 'Creates a new plant in the store')
  t.equal(op.requestBody.required, true)
  t.same(Object.keys(op.requestBody.content), ['application/json'])
  t.same(op.requestBody.content['application/json'].schema, { $ref: '#/components/schemas/NewPlant' })
  t.equal(op.responses['200'].description, 'plant response')
  t.same(op.responses['200'].content['application/json'].schema, { $ref: '#/components/schemas/Plant' })
  t.equal(op.responses['400'].description, 'unexpected error')
  t.same(op.responses['400'].content['application/json'].schema, { $ref: '#/components/schemas/Error' })
})

t.test('the schemas are the seed\'s', async (t) => {
  const { Plant, NewPlant, Error } = spec.components.schemas
  t.match(Plant, { type: 'object', required: ['name'], properties: { name: { type: 'string' }, tag: { type: 'string' } } })
  t.same(Object.keys(Plant.properties), ['name', 'tag'])
  t.same(NewPlant.allOf[0], { $ref: '#/components/schemas/Plant' })
  t.match(NewPlant.allOf[1], { type: 'object', required: ['id'], properties: { id: { type: 'integer', format: 'int64' } } })
  t.match(Error, { type: 'object', required: ['error', 'message'], properties: { error: { type: 'integer', format: 'int32' }, message: { type: 'string' } } })
})

t.test('every status the service adds answers an Error body', async (t) => {
  for (const [path, item] of Object.entries<Record<string, any>>(spec.paths)) {
    for (const [method, op] of Object.entries<Record<string, any>>(item)) {
      if (method === 'parameters') continue
      for (const [status, response] of Object.entries<Record<string, any>>(op.responses)) {
        if (Number(status) < 400) continue
        const resolved = response.$ref ? spec.components.responses[response.$ref.split('/').pop()] : response
        t.same(resolved.content['application/json'].schema, { $ref: '#/components/schemas/Error' }, `${method} ${path} ${status}`)
      }
    }
  }
  t.match(spec.info.description, /`error` field is\s+the HTTP status code/, 'the meaning of `error` is written down')
})

t.test('what derives from the spec and the configuration is up to date', async (t) => {
  t.equal(derived.length, 3, 'types, the embedded spec, the README table')
  for (const { file, make } of derived) {
    t.equal(await readFile(file, 'utf8'), await make(), `${file.pathname}: run \`npm run generate\``)
  }
})

t.test('the spec the service serves is the YAML file, whatever it was installed as', async (t) => {
  t.same(spec, parse(await readFile(new URL('../spec/plant-store.yaml', import.meta.url), 'utf8')))
  t.not(await loadSpec(), await loadSpec(), 'each caller gets its own copy to change')
})

t.test('every schema the spec gives a route is a valid JSON Schema (the validator no longer checks them at start-up)', async (t) => {
  const ajv = new Ajv2020({ strict: false })
  t.notOk(ajv.validateSchema({ type: 'string', maxLength: -1 }), 'the check can fail')
  const app = Fastify()
  let checked = 0
  app.addHook('onRoute', (route) => {
    for (const part of ['body', 'params', 'querystring', 'headers'] as const) {
      const schema = (route.schema as Record<string, unknown> | undefined)?.[part]
      if (schema === undefined) continue
      checked++
      t.ok(ajv.validateSchema(schema as object), `${route.method} ${route.url} ${part}`, { errors: ajv.errors })
    }
  })
  await app.register(plantStore, { tokens: ['token'], database: 'memory:' })
  await app.ready()
  await app.close()
  t.ok(checked >= 5, `${checked} schemas checked`)
})
