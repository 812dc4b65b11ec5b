// fastify-openapi-glue checks the spec against the OpenAPI 3.1 schema at
// every start (@seriousme/openapi-schema-validator), and compiles that
// schema with Ajv to do so: most of the plugin's registration time. The
// embedded spec is not checked again at each start, whatever version of
// the validator is installed: it cannot change after `npm run generate`
// made it, and test/spec.test.ts checks it with the version this
// repository locks (its routes are tested as well). So for it the schema
// is never compiled. Any other document is checked as the package checks
// it, the schema compiled when the first comes: one that differs from the
// embedded spec in anything the check could read (a member, a value, a
// member left undefined, a getter, a prototype). (Nothing is compiled
// ahead for them: the plugin gives none.)
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import type { Validator as ValidatorClass } from '@seriousme/openapi-schema-validator'
import { SPEC_JSON } from './spec-document.ts'

/** What the validator calls a check: a verdict, and the errors of the last refusal. */
export interface Check { (data: unknown): boolean, errors?: unknown }
/** What the validator keeps private and this module stands in for. */
export interface ValidatorInternals { ajvOptions: Record<string, unknown> | null | undefined, getAjvValidator: (this: ValidatorInternals, version: string, ...rest: unknown[]) => Check }

/** The validator package as fastify-openapi-glue resolves it (another copy may sit elsewhere). */
export function validatorEntry (): string {
  const glue = createRequire(import.meta.url).resolve('fastify-openapi-glue')
  return createRequire(glue).resolve('@seriousme/openapi-schema-validator')
}

/**
 * The check `compile` makes, but for the embedded spec, which passes it
 * (test/spec.test.ts): that one is taken as checked, and nothing is
 * compiled for it. `compile` runs when another document comes, once.
 */
export function skippingEmbeddedSpec (compile: () => Check): Check {
  let check: Check | undefined
  const wrapped: Check = Object.assign((data: unknown) => {
    if (isEmbeddedSpec(data)) {
      wrapped.errors = null
      return true
    }
    check ??= compile()
    const valid = check(data)
    wrapped.errors = check.errors
    return valid
  }, { errors: null as unknown })
  return wrapped
}

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
// makes it: those the embedded spec is checked with.
function isDefault (options: ValidatorInternals['ajvOptions']): boolean {
  return typeof options === 'object' && options !== null && Object.keys(options).length === 1 && options.strict === false
}

let installed: Promise<void> | undefined

/**
 * Has glue's copy of the validator take the embedded spec as checked,
 * where it would check it against the OpenAPI 3.1 schema with its default
 * options: other documents, versions and options are checked as the
 * package checks them. Once per process; the class is shared with the
 * host's other users of that copy, whose documents are checked either way.
 */
export function skipEmbeddedSpecCheck (): Promise<void> {
  installed ??= (async () => {
    try {
      const { Validator } = await import(pathToFileURL(validatorEntry()).href) as { Validator: typeof ValidatorClass }
      const internals = Validator.prototype as unknown as ValidatorInternals
      const compile = internals.getAjvValidator
      // (A method that takes more than the version is one this code does not know.)
      if (typeof compile !== 'function' || compile.length !== 1) return
      // One check per validator, as the package keeps one per version.
      const checks = new WeakMap<ValidatorInternals, Check>()
      internals.getAjvValidator = function getAjvValidator (version, ...rest) {
        if (version !== '3.1' || !isDefault(this.ajvOptions)) return compile.call(this, version, ...rest)
        let check = checks.get(this)
        if (check === undefined) {
          check = skippingEmbeddedSpec(() => compile.call(this, version, ...rest))
          checks.set(this, check)
        }
        return check
      }
    } catch {
      // (A layout this code does not know: the validator checks every document, as before.)
    }
  })()
  return installed
}
