// Derives lib/api-types.ts from spec/plant-store.yaml, so that the service's
// request and response types are never written by hand. `--check` exits 1
// when the committed file no longer matches the spec.
import { readFile, writeFile } from 'node:fs/promises'
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript'
import ts from 'typescript'
import { parse } from 'yaml'

const spec = new URL('./plant-store.yaml', import.meta.url)
const target = new URL('../lib/api-types.ts', import.meta.url)

// int64 values reach the service as bigint (see lib/validation.ts): JSON
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

if (import.meta.main) {
  const generated = await generateTypes()
  if (process.argv.includes('--check')) {
    const committed = await readFile(target, 'utf8').catch(() => '')
    if (committed !== generated) {
      console.error('lib/api-types.ts is out of date with spec/plant-store.yaml: run `npm run generate`')
      process.exit(1)
    }
  } else {
    await writeFile(target, generated)
  }
}
