// fastify-openapi-glue checks the spec against the OpenAPI 3.1 schema at
// every start (@seriousme/openapi-schema-validator), and compiles that
// schema with Ajv to do so: about 150 ms, most of the plugin's
// registration. The same check, compiled ahead from the same schema file
// (lib/openapi-31-check.ts, by `npm run generate`), stands in for that
// compile: the spec is still checked at every start, by the same rules.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Validator } from '@seriousme/openapi-schema-validator'
import { SCHEMA_SHA256, validate } from './openapi-31-check.ts'

type Check = typeof validate
type Compile = (this: ValidatorInternals, version: string) => Check
interface ValidatorInternals { ajvOptions: Record<string, unknown>, getAjvValidator: Compile }

const internals = Validator.prototype as unknown as ValidatorInternals
let installed = false

// The options a Validator has when made without any, as fastify-openapi-glue
// makes it: the precompiled check is that one's only.
function isDefault (options: Record<string, unknown>): boolean {
  const keys = Object.keys(options)
  return keys.length === 1 && options.strict === false
}

/**
 * Has the validator use the precompiled OpenAPI 3.1 check where it would
 * compile the same one: version 3.1, default options, and the schema file
 * installed the one it was compiled from (else it compiles, as before).
 * Once per process; the class is shared with the host's other users of
 * it, which get the same check either way.
 */
export function usePrecompiledSpecCheck (): void {
  if (installed) return
  installed = true
  const schema = createRequire(import.meta.url).resolve('@seriousme/openapi-schema-validator/schemas/v3.1/schema.json')
  if (createHash('sha256').update(readFileSync(schema, 'utf8')).digest('hex') !== SCHEMA_SHA256) return
  const compile = internals.getAjvValidator
  internals.getAjvValidator = function getAjvValidator (version) {
    return version === '3.1' && isDefault(this.ajvOptions) ? validate : compile.call(this, version)
  }
}
