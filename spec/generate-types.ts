// Derives lib/api-types.ts from spec/plant-store.yaml, so that the service's
// request and response types are never written by hand. `--check` exits 1
// when the committed file no longer matches the spec.
import { readFile, writeFile } from 'node:fs/promises'
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript'
import ts from 'typescript'

const spec = new URL('./plant-store.yaml', import.meta.url)
const target = new URL('../lib/api-types.ts', import.meta.url)

// int64 values reach the service as bigint (see lib/validation.ts): JSON
// numbers lose digits above 2^53.
const BIGINT = ts.factory.createKeywordTypeNode(ts.SyntaxKind.BigIntKeyword)

export async function generateTypes (): Promise<string> {
  const ast = await openapiTS(spec, {
    silent: true,
    transform (schema) {
      return schema.format === 'int64' ? BIGINT : undefined
    }
  })
  return COMMENT_HEADER + astToString(ast)
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
