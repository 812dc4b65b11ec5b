// Request validation compiled from the spec's schemas. Bodies are checked
// as sent, never coerced ("12" is not an integer); path and query values
// arrive as strings and are coerced. int64 values become bigints so that no
// digit is lost past 2^53.
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { FuncKeywordDefinition, SchemaValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import { INTEGER_LITERAL } from './json-body.ts'

// ajv-formats is CommonJS; its default export arrives wrapped.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

export const INT64_MIN = -(2n ** 63n)
export const INT64_MAX = 2n ** 63n - 1n
const INT64_MESSAGE = `must be an integer from ${INT64_MIN} to ${INT64_MAX}`

function toInt64 (data: unknown, fromString: boolean): bigint | undefined {
  let value: bigint | undefined
  if (typeof data === 'bigint') value = data
  else if (typeof data === 'number' && Number.isSafeInteger(data)) value = BigInt(data)
  else if (fromString && typeof data === 'string' && INTEGER_LITERAL.test(data)) value = BigInt(data)
  return value !== undefined && value >= INT64_MIN && value <= INT64_MAX ? value : undefined
}

function int64Keyword (fromString: boolean): FuncKeywordDefinition {
  const validate: SchemaValidateFunction = (_schema, data, _parentSchema, cxt) => {
    const value = toInt64(data, fromString)
    if (value === undefined) {
      validate.errors = [{ keyword: 'int64', message: INT64_MESSAGE, params: {} }]
      return false
    }
    if (cxt !== undefined) (cxt.parentData as Record<string | number, unknown>)[cxt.parentDataProperty] = value
    return true
  }
  return { keyword: 'x-int64', modifying: true, errors: true, schemaType: 'boolean', validate }
}

// Ajv's `type: integer` cannot hold a bigint, so int64 integers are checked
// by the x-int64 keyword instead. The spec itself is left as written.
export function markInt64 (schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(markInt64)
  if (typeof schema !== 'object' || schema === null) return schema
  const copy: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) copy[key] = markInt64(value)
  if (copy.type === 'integer' && copy.format === 'int64') {
    delete copy.type
    delete copy.format
    copy['x-int64'] = true
  }
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
  return ajv
}

/** A validator compiler for one plugin instance: strict bodies, coerced parameters. */
export function createValidatorCompiler (): FastifySchemaCompiler<unknown> {
  const strict = createAjv(false)
  const coercing = createAjv(true)
  return ({ schema, httpPart }) => {
    const ajv = httpPart === 'body' ? strict : coercing
    return ajv.compile(markInt64(schema) as object)
  }
}
