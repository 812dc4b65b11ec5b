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
import { INT64_MESSAGE, isInt64Schema, toInt64 } from './int64.ts'

// ajv-formats is CommonJS; its default export arrives wrapped.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

export const TEXT_MESSAGE = 'must be Unicode text without NUL characters (U+0000) or unpaired surrogates (U+D800 to U+DFFF)'

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
export function prepareSchema (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(prepareSchema)
  if (typeof schema !== 'object' || schema === null) return schema
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) copy[key] = prepareSchema(value)
  if (isInt64Schema(copy)) {
    for (const key of ['type', 'format', 'minimum', 'maximum']) delete copy[key]
    copy['x-int64'] = true
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
    strict: false
  })
  addFormats(ajv)
  ajv.addKeyword(int64Keyword(coerce))
  ajv.addKeyword(textKeyword)
  return ajv
}

/** A validator compiler for one plugin instance: strict bodies, coerced parameters. */
export function createValidatorCompiler (): FastifySchemaCompiler<unknown> {
  const strict = createAjv(false)
  const coercing = createAjv(true)
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? strict : coercing
    return ajv.compile(prepareSchema(schema) as object)
  }
}
