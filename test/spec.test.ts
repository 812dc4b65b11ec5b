import { readFile } from 'node:fs/promises'
import { pathToFileURL } from 'node:url'
import { Ajv2020 } from 'ajv/dist/2020.js'
import Fastify from 'fastify'
import t from 'tap'
import plantStore from '../lib/plugin.ts'
import { loadSpec } from '../lib/spec.ts'
import { parse } from 'yaml'
import { derived } from '../spec/generate.ts'
import { isEmbeddedSpec, skipEmbeddedSpecCheck, skippingEmbeddedSpec, validatorEntry } from '../lib/spec-check.ts'
import { SPEC_JSON } from '../lib/spec-document.ts'
import type { ValidatorInternals } from '../lib/spec-check.ts'
import type { Test } from 'tap'

const spec = await loadSpec() as Record<string, any>

// The Validator class exactly as fastify-openapi-glue resolves it, and its
// own compile, taken before any test registers the plugin (which stands
// in for it, once per process). The tests that use the stand-in without
// registering install it themselves, so that each may run alone.
const { Validator } = await import(pathToFileURL(validatorEntry()).href) as typeof import('@seriousme/openapi-schema-validator')
const internals = (validator: object) => validator as ValidatorInternals
const packageCompile = internals(Validator.prototype).getAjvValidator
const errorsOf = (check: unknown) => (check as { errors?: unknown }).errors ?? null
const compiledFor = (validator: object, version: string) => (validator as { ajvValidators: Record<string, unknown> }).ajvValidators[version]

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
  t.equal(derived.length, 6, 'types, the embedded spec, the configuration check, the request check, the answer serializers, the README table')
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

// Watches the OpenAPI schemas Ajv compiles, until the test ends.
function compiledSchemas (t: Test): string[] {
  const compiled: string[] = []
  const compile = Ajv2020.prototype.compile
  t.teardown(() => { Ajv2020.prototype.compile = compile })
  Ajv2020.prototype.compile = function (this: Ajv2020, schema: unknown, meta?: boolean) {
    const id = (schema as { $id?: unknown })?.$id
    if (typeof id === 'string' && id.startsWith('https://spec.openapis.org/oas/')) compiled.push(id)
    return compile.call(this, schema as object, meta)
  } as typeof compile
  return compiled
}

// A copy of the embedded spec with one thing the OpenAPI 3.1 schema refuses.
async function brokenSpec (): Promise<Record<string, any>> {
  const doc = await loadSpec() as Record<string, any>
  doc.paths['/plants'].get.unknown = 1
  return doc
}

t.test('registering the plugin checks the spec against the OpenAPI 3.1 schema without compiling that schema', async (t) => {
  const compiled = compiledSchemas(t)
  const app = Fastify()
  await app.register(plantStore, { tokens: ['token'], database: 'memory:' })
  await app.ready()
  await app.close()
  t.same(compiled, [], 'no OpenAPI schema compiled')
  // Any other document is checked: the schema is compiled for it, once per validator.
  const validator = new Validator()
  const check = internals(validator).getAjvValidator('3.1')
  t.same(compiled, [], 'not before one comes')
  t.equal(compiledFor(validator, '3.1'), undefined)
  t.equal(check(await brokenSpec()), false, 'another document is checked')
  t.equal(check(await brokenSpec()), false)
  t.equal(compiled.filter((id) => id.startsWith('https://spec.openapis.org/oas/3.1/')).length, 1, 'compiling the schema once')
  t.not(compiledFor(validator, '3.1'), undefined, 'as the package compiles it, for this validator')
  t.equal(internals(validator).getAjvValidator('3.1'), check, 'one check per validator')
  const other = new Validator()
  const otherCheck = internals(other).getAjvValidator('3.1')
  t.not(otherCheck, check, 'each validator its own')
  t.equal(otherCheck(await brokenSpec()), false)
  t.equal(compiled.filter((id) => id.startsWith('https://spec.openapis.org/oas/3.1/')).length, 2, 'which compiles for it')
  // Other options and versions are the package's own, as before.
  for (const options of [{ strict: 'log' }, { allErrors: true }, { useDefaults: true }]) {
    const own = new Validator(options as ConstructorParameters<typeof Validator>[0])
    t.equal(internals(own).getAjvValidator('3.1'), compiledFor(own, '3.1'), `options ${JSON.stringify(options)}: compile their own`)
  }
  t.equal(internals(validator).getAjvValidator('3.0'), compiledFor(validator, '3.0'), 'as does another version')
  t.equal((await new Validator().validate(await brokenSpec())).valid, false, 'and glue\'s validator refuses a broken document')
  t.equal((await new Validator().validate(await loadSpec())).valid, true, 'but passes the embedded one')
})

t.test('the check the validator is given has the package\'s verdicts and errors', async (t) => {
  await skipEmbeddedSpecCheck()
  // Compiled by the validator package itself.
  const compiled = packageCompile.call(internals(new Validator()), '3.1')
  const validator = new Validator()
  const given = internals(validator).getAjvValidator('3.1')
  t.equal(compiledFor(validator, '3.1'), undefined, 'the stand-in: nothing compiled yet')
  const broken: Array<[string, (doc: Record<string, any>) => void]> = [
    ['as it is', () => {}],
    ['no info', (doc) => { delete doc.info }],
    ['a version that is not 3.1', (doc) => { doc.openapi = '3.0.3' }],
    ['responses that are not an object', (doc) => { doc.paths['/plants'].post.responses = 'none' }],
    ['a parameter with no name', (doc) => { delete doc.paths['/plants'].get.parameters[0].name }],
    ['a parameter in nowhere', (doc) => { doc.paths['/plants'].get.parameters[0].in = 'nowhere' }],
    ['a path parameter not required', (doc) => { doc.paths['/plants/{id}'].parameters[0].required = false }],
    ['a path without a slash', (doc) => { doc.paths.plants = doc.paths['/plants'] }],
    ['an unknown operation member', (doc) => { doc.paths['/plants'].get.unknown = 1 }],
    ['a security scheme of no type', (doc) => { delete doc.components.securitySchemes.bearerAuth.type }],
    ['a server without a url', (doc) => { delete doc.servers[0].url }],
    ['a webhook that is not a path item', (doc) => { doc.webhooks.newPlant = [] }],
    ['a license without a name', (doc) => { delete doc.info.license.name }],
    ['a tag without a name', (doc) => { delete doc.tags[0].name }],
    ['a response without a description', (doc) => { delete doc.paths['/plants'].post.responses['200'].description }]
  ]
  let refused = 0
  for (const [what, change] of broken) {
    const doc = await loadSpec() as Record<string, any>
    change(doc)
    // (The embedded spec, as it is, passes the package's own check: what taking it as checked rests on.)
    const verdict = compiled(doc)
    t.equal(given(doc), verdict, what)
    t.same(errorsOf(given), errorsOf(compiled), `${what}: the same errors`)
    if (!verdict) refused++
  }
  t.equal(refused, broken.length - 1, 'every broken document is refused, the embedded spec passes')
})

t.test('the embedded spec is taken as checked; a document that differs in anything the check reads is checked', async (t) => {
  await skipEmbeddedSpecCheck()
  const calls: unknown[] = []
  let compiles = 0
  const check = Object.assign((data: unknown) => { calls.push(data); check.errors = [{ message: 'refused' }]; return false }, { errors: null as unknown })
  const wrapped = skippingEmbeddedSpec(() => { compiles++; return check })
  // (What glue's validator is given is a structured clone of the plugin's copy.)
  for (const doc of [await loadSpec(), structuredClone(await loadSpec())]) {
    t.equal(wrapped(doc), true, 'the embedded spec passes')
    t.equal(errorsOf(wrapped), null, 'with no errors')
  }
  t.equal(calls.length, 0, 'without the check')
  t.equal(compiles, 0, 'which is not even compiled')
  const differing: Array<[string, (doc: Record<string, any>) => unknown]> = [
    ['a member the check refuses', (doc) => { doc.paths['/plants'].get.unknown = 1 }],
    ['a member left undefined (JSON would not write it)', (doc) => { doc.paths['/plants'].get.unknown = undefined }],
    ['a value changed', (doc) => { doc.info.version = '2.0.0' }],
    ['a member gone', (doc) => { delete doc.tags }],
    ['an inherited member', (doc) => Object.setPrototypeOf(doc, { unknown: 1 })],
    ['a hidden member', (doc) => Object.defineProperty(doc.info, 'summary', { value: 1, enumerable: false })],
    ['a getter', (doc) => { const { version } = doc.info; Object.defineProperty(doc.info, 'version', { get: () => version, enumerable: true }) }],
    ['a toJSON that writes the spec', (doc) => { const copy = JSON.parse(SPEC_JSON); doc.openapi = 1; doc.toJSON = () => copy }],
    ['an array for an object', (doc) => { doc.info = Object.assign([], doc.info) }],
    ['a cycle', (doc) => { doc.paths['/plants'].get.unknown = doc }]
  ]
  for (const [what, change] of differing) {
    const doc = await loadSpec() as Record<string, any>
    change(doc)
    calls.length = 0
    t.equal(wrapped(doc), false, `${what}: the check's verdict`)
    t.same(calls, [doc], `${what}: checked`)
    t.same(errorsOf(wrapped), [{ message: 'refused' }], `${what}: with its errors`)
  }
  t.equal(compiles, 1, 'compiled once, when the first such document came')
  // The one the validator is given: the package's verdicts.
  const given = internals(new Validator()).getAjvValidator('3.1')
  const compiled = packageCompile.call(internals(new Validator()), '3.1')
  const doc = await loadSpec() as Record<string, any>
  doc.paths['/plants'].get.unknown = doc
  t.equal(given(doc), false, 'a cyclic document the check refuses')
  t.same(errorsOf(given), errorsOf(compiled(doc) ? null : compiled))
  t.equal(given(await loadSpec()), true, 'and the embedded one, after it')
  t.equal(errorsOf(given), null)
})

t.test('registering the plugin gives the validator the embedded spec as it is', async (t) => {
  // (The shortcut is taken: what the check is given is the embedded spec,
  // when it is given it: glue resolves the document's $refs in place after.)
  await skipEmbeddedSpecCheck()
  const seen: boolean[] = []
  const prototype = internals(Validator.prototype)
  const current = prototype.getAjvValidator
  t.teardown(() => { prototype.getAjvValidator = current })
  prototype.getAjvValidator = function (version) {
    const check = current.call(this, version)
    return Object.assign((data: unknown) => { seen.push(isEmbeddedSpec(data)); return check(data) }, { errors: null })
  }
  const app = Fastify()
  await app.register(plantStore, { tokens: ['token'], database: 'memory:' })
  await app.ready()
  await app.close()
  t.same(seen, [true], 'one check, of the embedded spec')
})
