// Request validation compiled from the spec's schemas. Bodies are checked
// as sent, never coerced ("12" is not an integer); path and query values
// arrive as text and are coerced. Two rules hold for every schema:
// - int64 integers are bigints (int64.ts): Ajv's `type: integer` cannot
//   hold one, so they are checked by the `x-int64` keyword instead;
// - every string is text: no NUL (PostgreSQL's text cannot hold it) and no
//   unpaired surrogate (UTF-8 cannot), so that what is acknowledged is what
//   every store keeps and every read returns.
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { FuncKeywordDefinition, SchemaValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import { compileOnce, schemaKey } from './compile-once.ts'
import { INT64_MESSAGE, isInt64Schema, toInt64 } from './int64.ts'

// ajv-formats is CommonJS; its default export arrives wrapped.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const TEXT_MESSAGE = 'must be Unicode text without NUL characters (U+0000) or unpaired surrogates (U+D800 to U+DFFF)'

function int64Keyword (fromText: boolean): FuncKeywordDefinition {
  const validate: SchemaValidateFunction = (_schema, data, _parentSchema, cxt) => {
    const value = toInt64(data, fromText)
    if (value === undefined) {
      validate.errors = [{ keyword: 'int64', message: INT64_MESSAGE, params: {} }]
      return false
    }
    if (cxt !== undefined) (cxt.parentData as Record<string | number, unknown>)[cxt.parentDataProperty] = value
    return true
  }
  return { keyword: 'x-int64', modifying: true, errors: true, schemaType: 'boolean', validate }
}

// Integers (other than int64s) in a path, query or header: decimal digits
// only, so that `0x10`, `1e2`, `+5` or ` 5` are not read as numbers the
// client did not write. Ajv's coercion would take them; this keyword
// reads the text itself, and checks the bounds it replaces.
interface IntegerBounds { minimum?: number, maximum?: number }
const INTEGER_TEXT = /^-?\d{1,15}$/

const validateInteger: SchemaValidateFunction = (bounds: IntegerBounds, data: unknown, _parentSchema, cxt) => {
  const value = typeof data === 'number' ? data : typeof data === 'string' && INTEGER_TEXT.test(data) ? Number(data) : Number.NaN
  let message: string | undefined
  if (!Number.isSafeInteger(value)) message = 'must be integer'
  else if (bounds.minimum !== undefined && value < bounds.minimum) message = `must be >= ${bounds.minimum}`
  else if (bounds.maximum !== undefined && value > bounds.maximum) message = `must be <= ${bounds.maximum}`
  if (message !== undefined) {
    validateInteger.errors = [{ keyword: 'integer', message, params: {} }]
    return false
  }
  if (cxt !== undefined) (cxt.parentData as Record<string | number, unknown>)[cxt.parentDataProperty] = value
  return true
}
const integerKeyword: FuncKeywordDefinition = { keyword: 'x-integer', modifying: true, errors: true, schemaType: 'object', validate: validateInteger }

const validateText: SchemaValidateFunction = (_schema: boolean, data: string) => {
  if (data.isWellFormed() && !data.includes('\0')) return true
  validateText.errors = [{ keyword: 'text', message: TEXT_MESSAGE, params: {} }]
  return false
}
const textKeyword: FuncKeywordDefinition = { keyword: 'x-text', type: 'string', schemaType: 'boolean', errors: true, validate: validateText }

/**
 * The schema as the validator applies it: int64 integers checked by
 * `x-int64` (their bounds are its range; as JSON numbers they would be
 * rounded), strings by `x-text`. The spec itself is left as written.
 */
function prepareSchema (schema: unknown, fromText = false): unknown {
  if (Array.isArray(schema)) return schema.map((item) => prepareSchema(item, fromText))
  if (typeof schema !== 'object' || schema === null) return schema
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) copy[key] = prepareSchema(value, fromText)
  if (isInt64Schema(copy)) {
    for (const key of ['type', 'format', 'minimum', 'maximum']) delete copy[key]
    copy['x-int64'] = true
  } else if (fromText && copy.type === 'integer') {
    const { minimum, maximum } = copy as IntegerBounds
    for (const key of ['type', 'minimum', 'maximum']) delete copy[key]
    copy['x-integer'] = { minimum, maximum }
  }
  if (copy.type === 'string') copy['x-text'] = true
  return copy
}

function createAjv (coerce: boolean) {
  const ajv = new Ajv2020({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    allErrors: false,
    // OpenAPI adds keywords of its own (example, discriminator, xml…).
    strict: false,
    // Only the spec's schemas come here, and test/spec.test.ts checks each
    // of them against Ajv's meta-schema (Redocly lints them too): checking
    // them again at every start-up would cost the meta-schema's compile.
    validateSchema: false
  })
  addFormats(ajv)
  ajv.addKeyword(int64Keyword(coerce))
  ajv.addKeyword(textKeyword)
  ajv.addKeyword(integerKeyword)
  return ajv
}

/** A validator compiler for one plugin instance: strict bodies, coerced parameters. */
export function createValidatorCompiler (): FastifySchemaCompiler<unknown> {
  const strict = createAjv(false)
  const coercing = createAjv(true)
  return compileOnce(
    ({ schema, httpPart }) => `${httpPart === 'body' ? 'body' : 'coerced'} ${schemaKey(schema)}`,
    ({ schema, httpPart }) => httpPart === 'body' ? strict.compile(prepareSchema(schema) as object) : coercing.compile(prepareSchema(schema, true) as object))
}
