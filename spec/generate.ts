// Derives what must follow spec/plant-store.yaml and the configuration
// declaration, so that none of it is written by hand:
// - lib/api-types.ts: the service's request and response types;
// - lib/spec-document.ts: the spec itself, embedded, so that the package
//   finds it wherever it is installed, renamed or bundled;
// - lib/config-check.ts: the check of the server's environment, compiled
//   ahead from lib/config.ts's declaration (Ajv standalone code), so that
//   no start compiles it;
// - lib/request-check.ts: the validators of the spec's requests, as the
//   plugin compiles them (lib/validation.ts), compiled ahead the same way;
// - lib/response-serializers.ts: the serializers of the spec's answers, as
//   the plugin compiles them (lib/serialization.ts), compiled ahead in
//   fast-json-stringify's standalone mode;
// - the configuration table of README.md (from lib/config.ts).
// `--check` exits 1, naming the file, when a committed one no longer matches.
import { execFileSync } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { Ajv } from 'ajv'
import standalone from 'ajv/dist/standalone/index.js'
import ucs2length from 'ajv/dist/runtime/ucs2length.js'
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript'
import ts from 'typescript'
import { parse } from 'yaml'
import { ENV_SCHEMA, configurationTable } from '../lib/config.ts'

const spec = new URL('./plant-store.yaml', import.meta.url)

// int64 values reach the service as bigint (see lib/int64.ts): JSON
// numbers lose digits above 2^53.
const BIGINT = ts.factory.createKeywordTypeNode(ts.SyntaxKind.BigIntKeyword)

// The names of int64 properties, for the client's JSON reader.
function int64Names (node: unknown, names = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const item of node) int64Names(item, names)
  else if (typeof node === 'object' && node !== null) {
    const { properties } = node as { properties?: Record<string, { format?: string }> }
    for (const [name, schema] of Object.entries(properties ?? {})) if (schema.format === 'int64') names.add(name)
    for (const value of Object.values(node)) int64Names(value, names)
  }
  return names
}

export async function generateTypes (): Promise<string> {
  const ast = await openapiTS(spec, {
    silent: true,
    transform (schema) {
      return schema.format === 'int64' ? BIGINT : undefined
    }
  })
  const names = [...int64Names(parse(await readFile(spec, 'utf8')))].sort()
  return COMMENT_HEADER + astToString(ast) +
    `\n/** Properties whose schema is an int64: read as bigint. */\nexport const int64Properties: ReadonlySet<string> = new Set(${JSON.stringify(names)})\n`
}

export async function generateSpecDocument (): Promise<string> {
  const document = parse(await readFile(spec, 'utf8'))
  return [
    '// Generated from spec/plant-store.yaml by `npm run generate`; do not edit.',
    '// The spec travels inside the code: no file to find at run time.',
    '',
    `export const SPEC_JSON = ${JSON.stringify(JSON.stringify(document))}`,
    ''
  ].join('\n')
}

/**
 * The environment's check: strings coerced to the declared types, defaults
 * filled in, every problem listed: the options env-schema gave Ajv when
 * the server used it, compiling at every start.
 */
export function generateConfigCheck (): string {
  const ajv = new Ajv({ allErrors: true, removeAdditional: true, useDefaults: true, coerceTypes: true, allowUnionTypes: true, code: { source: true, esm: true } })
  const validate = ajv.compile({ ...ENV_SCHEMA, additionalProperties: false })
  // Ajv's code requires the runtime helpers it uses (the length of a string
  // in code points): they are written into the module, which then needs
  // nothing at all, bundled or not.
  const code = standalone.default(ajv, validate).replace(/require\("([^"]+)"\)\.default/g, (_, name: string) => {
    const helper = runtimeHelpers.get(name)
    if (helper === undefined) throw new Error(`the configuration's check needs ${name}: add it to runtimeHelpers`)
    return `(${helper.toString()})`
  })
  if (code.includes('require(')) throw new Error('the configuration\'s check requires a module')
  return [
    '// @ts-nocheck',
    '// Generated from ENV_SCHEMA in lib/config.ts by `npm run generate`',
    '// (Ajv standalone code); do not edit.',
    code,
    ''
  ].join('\n')
}

const runtimeHelpers = new Map<string, (...args: never[]) => unknown>([['ajv/dist/runtime/ucs2length', ucs2length.default]])

/**
 * The validators the plugin compiles for the spec's requests, written out.
 * Made in a process of its own, so that it reads the spec and the code as
 * they are on disk now (this one has loaded them already).
 */
export function generateRequestCheck (): string {
  return aside('--request-check')
}

/** The serializers the plugin compiles for the spec's answers, written out (in a process of its own, as above). */
export function generateResponseSerializers (): string {
  return aside('--response-serializers')
}

// This file's output with `flag`, from a process of its own.
function aside (flag: string): string {
  return execFileSync(process.execPath, [fileURLToPath(import.meta.url), flag], { encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 })
}

// Registers the plugin as a server would (every route, docs and webhooks
// on), so that it compiles what it compiles at a start; then `restore`.
async function registerThePlugin (restore: () => void): Promise<void> {
  const { default: plantStore } = await import('../lib/plugin.ts')
  const { default: Fastify } = await import('fastify')
  const app = Fastify()
  try {
    await app.register(plantStore, { tokens: ['a token of no use'], database: 'memory:' })
    await app.ready()
  } finally {
    restore()
    await app.close()
  }
}

// Written-out CommonJS code, its `require(…)` calls made imports: each
// module's name becomes that of an import (`imports`, module → name).
function requiresAsImports (code: string, imports: Map<string, string>): string {
  return code.replace(/require\((["'])([^"']+)\1\)/g, (_match, _quote: string, name: string) => {
    if (!imports.has(name)) imports.set(name, `helper${imports.size}`)
    return imports.get(name)!
  })
}

/** Import declarations for what requiresAsImports found. */
const importLines = (imports: Map<string, string>): string[] => [...imports].map(([name, as]) => `import ${as} from '${name}.js'`)

async function writeOutResponseSerializers (): Promise<string> {
  const require = createRequire(import.meta.url)
  type Compilers = typeof import('@fastify/fast-json-stringify-compiler')
  const compilers = require('@fastify/fast-json-stringify-compiler') as { -readonly [K in keyof Compilers]: Compilers[K] }
  const { RESPONSE_SERIALIZERS } = await import('../lib/response-serializers.ts')
  const { schemaKey } = await import('../lib/compile-once.ts')
  // The plugin compiles every answer schema (none is found ahead once the
  // map is empty), through the package's selector, which is wrapped to
  // write each one's code out through the package's standalone mode.
  RESPONSE_SERIALIZERS.clear()
  const written = new Map<string, string>()
  const { SerializerSelector } = compilers
  compilers.SerializerSelector = () => compilers.StandaloneSerializer({
    readMode: false,
    storeFunction (route, code) { written.set(schemaKey(route.schema), code) }
  }) as unknown as ReturnType<typeof SerializerSelector>
  await registerThePlugin(() => { compilers.SerializerSelector = SerializerSelector })
  const imports = new Map<string, string>()
  const entries = [...written].map(([key, code]) => {
    // (Each one's CommonJS module, as an expression: what it would export.)
    const body = requiresAsImports(code, imports).replace(/module\.exports = /, 'return ')
    if (body.includes('require(') || body.includes('module.exports')) throw new Error(`the serializer of ${key} is not a module this can write out`)
    return `  [${JSON.stringify(key)}, (() => {${body}})()]`
  })
  return [
    '// @ts-nocheck',
    '// Generated from spec/plant-store.yaml, as lib/serialization.ts compiles its',
    '// answers\' schemas, by `npm run generate` (fast-json-stringify\'s standalone',
    '// code); do not edit.',
    ...importLines(imports),
    '',
    '/** The serializers, by their schema\'s key (compile-once.ts). */',
    `export const RESPONSE_SERIALIZERS = new Map([\n${entries.join(',\n')}\n])`,
    ''
  ].join('\n')
}

async function writeOutRequestChecks (): Promise<string> {
  const { Ajv2020, _ } = await import('ajv/dist/2020.js')
  const { REQUEST_CHECKS } = await import('../lib/request-check.ts')
  const { checkKey, createAjv } = await import('../lib/validation.ts')
  // The plugin compiles every schema it validates with (none is found
  // ahead once the map is empty); each is caught on its way through Ajv.
  REQUEST_CHECKS.clear()
  const schemas = new Map<string, { coerce: boolean, schema: object }>()
  const compile = Ajv2020.prototype.compile
  Ajv2020.prototype.compile = function (this: InstanceType<typeof Ajv2020>, schema: object, meta?: boolean) {
    // (Ajv compiles a schema's parts on its own too: only whole ones count.)
    if ((schema as { $id?: unknown }).$id === undefined) {
      const coerce = this.opts.coerceTypes === 'array'
      schemas.set(checkKey(coerce, schema), { coerce, schema })
    }
    return compile.call(this, schema, meta)
  } as typeof compile
  await registerThePlugin(() => { Ajv2020.prototype.compile = compile })
  // One module from two Ajvs (strict, coercing), each one's code in a
  // function of its own: both name their functions alike.
  const imports = new Map<string, string>()
  const entries: string[] = []
  const parts = [false, true].map((coerce) => {
    const ajv = createAjv(coerce, { source: true, formats: _`formats.fullFormats` })
    const mine = [...schemas].filter(([, schema]) => schema.coerce === coerce)
    const exported = Object.fromEntries(mine.map(([key, { schema }], i) => {
      entries.push(`  [${JSON.stringify(key)}, ${coerce ? 'coercing' : 'strict'}.v${i}]`)
      ajv.addSchema(schema, `v${i}`)
      return [`v${i}`, `v${i}`]
    }))
    const code = requiresAsImports(standalone.default(ajv, exported), imports)
    return `const ${coerce ? 'coercing' : 'strict'} = (() => {\n  const exports = {}\n  ${code}\n  return exports\n})()`
  })
  return [
    '// @ts-nocheck',
    '// Generated from spec/plant-store.yaml, as lib/validation.ts compiles its',
    '// requests\' schemas, by `npm run generate` (Ajv standalone code); do not edit.',
    'import formats from \'ajv-formats/dist/formats.js\'',
    'import * as rules from \'./validation-rules.ts\'',
    ...importLines(imports),
    '',
    ...parts,
    '',
    '/** The validators, by what validation.ts looks them up by (checkKey). */',
    `export const REQUEST_CHECKS = new Map([\n${entries.join(',\n')}\n])`,
    ''
  ].join('\n')
}

const TABLE_START = '<!-- configuration: generated from lib/config.ts by `npm run generate` -->'
const TABLE_END = '<!-- /configuration -->'

/** README.md with its configuration table made anew from the declaration. */
export async function generateReadme (readme: string): Promise<string> {
  const start = readme.indexOf(TABLE_START)
  const end = readme.indexOf(TABLE_END)
  if (start === -1 || end < start) throw new Error(`README.md has no ${TABLE_START} … ${TABLE_END} block`)
  return `${readme.slice(0, start + TABLE_START.length)}\n${configurationTable()}\n${readme.slice(end)}`
}

const README = new URL('../README.md', import.meta.url)

/** Each derived file: where it goes and what it should hold now. */
export const derived: Array<{ file: URL, make: () => Promise<string> }> = [
  { file: new URL('../lib/api-types.ts', import.meta.url), make: generateTypes },
  { file: new URL('../lib/spec-document.ts', import.meta.url), make: generateSpecDocument },
  { file: new URL('../lib/config-check.ts', import.meta.url), make: async () => generateConfigCheck() },
  { file: new URL('../lib/request-check.ts', import.meta.url), make: async () => generateRequestCheck() },
  { file: new URL('../lib/response-serializers.ts', import.meta.url), make: async () => generateResponseSerializers() },
  { file: README, make: async () => generateReadme(await readFile(README, 'utf8')) }
]

if (import.meta.main && process.argv.includes('--request-check')) {
  process.stdout.write(await writeOutRequestChecks())
} else if (import.meta.main && process.argv.includes('--response-serializers')) {
  process.stdout.write(await writeOutResponseSerializers())
} else if (import.meta.main) {
  const check = process.argv.includes('--check')
  let stale = false
  for (const { file, make } of derived) {
    const wanted = await make()
    const committed = await readFile(file, 'utf8').catch(() => '')
    if (committed === wanted) continue
    if (check) {
      console.error(`${new URL(file).pathname.split('/').slice(-2).join('/')} is out of date: run \`npm run generate\``)
      stale = true
    } else {
      await writeFile(file, wanted)
    }
  }
  if (stale) process.exit(1)
}
