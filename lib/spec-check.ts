// fastify-openapi-glue checks the spec against the OpenAPI 3.1 schema at
// every start (@seriousme/openapi-schema-validator), and compiles that
// schema with Ajv to do so: most of the plugin's registration time. The same check, compiled ahead from the same schema file
// (lib/openapi-31-check.ts, by `npm run generate`), stands in for that
// compile, by the same rules. The embedded spec itself is not checked again
// at each start (the check's first run is a part of it): it cannot change
// after `npm run generate` made it, and test/spec.test.ts checks it. Any
// other document is checked: one that differs from it in anything the
// check could read (a member, a value, a member left undefined, a getter,
// a prototype).
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import type { Validator as ValidatorClass } from '@seriousme/openapi-schema-validator'
import { FINGERPRINT, validate } from './openapi-31-check.ts'
import { SPEC_JSON } from './spec-document.ts'

/** What the validator calls a check: a verdict, and the errors of the last refusal. */
export interface Check { (data: unknown): boolean, errors?: unknown }
/** What the validator keeps private and this module stands in for. */
export interface ValidatorInternals { ajvOptions: Record<string, unknown>, getAjvValidator: (this: ValidatorInternals, version: string) => Check }

/** The validator package as fastify-openapi-glue resolves it (another copy may sit elsewhere). */
export function validatorEntry (): string {
  const glue = createRequire(import.meta.url).resolve('fastify-openapi-glue')
  return createRequire(glue).resolve('@seriousme/openapi-schema-validator')
}

/**
 * What the precompiled check is only valid for: the 3.1 schema file, the
 * code that sets up and compiles it (getAjvValidator), and the Ajv version
 * that package uses. Any of them changed, the validator compiles, as before.
 */
export function fingerprint (entry: string, getAjvValidator: unknown): string {
  const schema = readFileSync(schemaFile(entry), 'utf8')
  const { version: ajv } = JSON.parse(readFileSync(createRequire(entry).resolve('ajv/package.json'), 'utf8')) as { version: string }
  // (The package's own method, also once this module stood in for it.)
  const code = String(originals.get(getAjvValidator as object) ?? getAjvValidator)
  return createHash('sha256').update(`${schema}\n${code}\najv ${ajv}`).digest('hex')
}

/** The schema file the check is compiled from, in a copy of the validator package. */
export function schemaFile (entry = validatorEntry()): string {
  // (A relative path: no `exports` map of the package can hide it.)
  return createRequire(entry).resolve('./schemas/v3.1/schema.json')
}

const originals = new WeakMap<object, unknown>()

/**
 * `check`, but for the embedded spec, which passes it (test/spec.test.ts):
 * that one is taken as checked.
 */
export function skippingEmbeddedSpec (check: Check): Check {
  const wrapped: Check = Object.assign((data: unknown) => {
    if (isEmbeddedSpec(data)) {
      wrapped.errors = null
      return true
    }
    const valid = check(data)
    wrapped.errors = check.errors
    return valid
  }, { errors: null as unknown })
  return wrapped
}

/** What glue's validator is given for OpenAPI 3.1 with its default options. */
export const specCheck = skippingEmbeddedSpec(validate)

let embedded: unknown
/** Whether `data` is the embedded spec to everything a check could read of it. */
export function isEmbeddedSpec (data: unknown): boolean {
  embedded ??= JSON.parse(SPEC_JSON)
  return sameDocument(data, embedded)
}

// The same own members as the parsed `expected`, with the same prototype,
// each with the same plain value (a getter is no plain value: it is not
// called), all the way down. (The walk follows `expected`, a tree: a cycle
// in `data` cannot hold it.)
function sameDocument (data: unknown, expected: unknown): boolean {
  if (typeof expected !== 'object' || expected === null) return data === expected
  if (typeof data !== 'object' || data === null || Object.getPrototypeOf(data) !== Object.getPrototypeOf(expected)) return false
  const keys = Reflect.ownKeys(expected)
  if (Reflect.ownKeys(data).length !== keys.length) return false
  for (const key of keys) {
    const member = Object.getOwnPropertyDescriptor(data, key)
    if (member === undefined || !sameDocument(member.value, (expected as Record<PropertyKey, unknown>)[key])) return false
  }
  return true
}

// The options a Validator has when made without any, as fastify-openapi-glue
// makes it: the precompiled check is that one's only.
function isDefault (options: Record<string, unknown>): boolean {
  return Object.keys(options).length === 1 && options.strict === false
}

let installed: Promise<void> | undefined

/**
 * Has glue's copy of the validator use the precompiled OpenAPI 3.1 check
 * where it would compile the same one: version 3.1, default options, and
 * the fingerprint unchanged. Once per process; the class is shared with
 * the host's other users of that copy, which get the same check either way.
 */
export function usePrecompiledSpecCheck (): Promise<void> {
  installed ??= (async () => {
    try {
      const entry = validatorEntry()
      const { Validator } = await import(pathToFileURL(entry).href) as { Validator: typeof ValidatorClass }
      const internals = Validator.prototype as unknown as ValidatorInternals
      const compile = internals.getAjvValidator
      if (fingerprint(entry, compile) !== FINGERPRINT) return
      internals.getAjvValidator = function getAjvValidator (version) {
        return version === '3.1' && isDefault(this.ajvOptions) ? specCheck : compile.call(this, version)
      }
      originals.set(internals.getAjvValidator, compile)
    } catch {
      // (A layout this code does not know: the validator compiles, as before.)
    }
  })()
  return installed
}
