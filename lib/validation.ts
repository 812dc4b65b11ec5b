// Request validation compiled from the spec's schemas. Bodies are checked
// as sent, never coerced ("12" is not an integer); path and query values
// arrive as text and are coerced. Two rules hold for every schema:
// - int64 integers are bigints (int64.ts): Ajv's `type: integer` cannot
//   hold one, so they are checked by the `x-int64` keyword instead;
// - every string is text: no NUL (PostgreSQL's text cannot hold it) and no
//   unpaired surrogate (UTF-8 cannot), so that what is acknowledged is what
//   every store keeps and every read returns.
// The keywords generate code that calls validation-rules.ts, rather than
// being called back, so that Ajv can write validators out as a module: the
// spec's own are compiled ahead by `npm run generate` (request-check.ts),
// and a start compiles only a schema that is not among them.
import { Ajv2020, _ } from 'ajv/dist/2020.js'
import type { CodeKeywordDefinition, KeywordCxt, Options, ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import { compileOnce, schemaKey } from './compile-once.ts'
import { INT64_MESSAGE, isInt64Schema } from './int64.ts'
import { REQUEST_CHECKS } from './request-check.ts'
import * as rules from './validation-rules.ts'

// ajv-formats is CommonJS; its default export arrives wrapped.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

// A rule of validation-rules.ts as the validator's code calls it; in a
// module written out, by that module's import of it as `rules`.
function rule (cxt: KeywordCxt, name: keyof typeof rules) {
  return cxt.gen.scopeValue('keyword', { key: name, ref: rules[name], code: _`rules[${name}]` })
}

// The value read replaces what was sent (a bigint for an int64's digits, a
// number for an integer's), in its parent and for the keywords after.
function replaceData (cxt: KeywordCxt, value: ReturnType<KeywordCxt['gen']['const']>) {
  const { gen, data, it } = cxt
  if (it.dataLevel === 0) return
  gen.assign(_`${it.parentData}[${it.parentDataProperty}]`, value)
  gen.assign(data, _`${it.parentData}[${it.parentDataProperty}]`)
}

function int64Keyword (fromText: boolean): CodeKeywordDefinition {
  return {
    keyword: 'x-int64',
    schemaType: 'boolean',
    error: { message: INT64_MESSAGE },
    code (cxt) {
      const value = cxt.gen.const('int64', _`${rule(cxt, fromText ? 'int64FromText' : 'int64FromJson')}(${cxt.data})`)
      cxt.gen.if(_`${value} === undefined`, () => cxt.error(), () => replaceData(cxt, value))
    }
  }
}

// Integers (other than int64s) in a path, query or header: their text is
// read by validation-rules.ts, which checks the bounds this replaces.
interface IntegerBounds { minimum?: number, maximum?: number }
const integerKeyword: CodeKeywordDefinition = {
  keyword: 'x-integer',
  schemaType: 'object',
  error: { message: ({ params }) => _`${params.problem}`, params: () => _`{}` },
  code (cxt) {
    const { minimum = null, maximum = null } = cxt.schema as IntegerBounds
    const value = cxt.gen.const('integer', _`${rule(cxt, 'integerFromText')}(${cxt.data}, ${minimum}, ${maximum})`)
    cxt.gen.if(_`typeof ${value} === "string"`, () => {
      cxt.setParams({ problem: value })
      cxt.error()
    }, () => replaceData(cxt, value))
  }
}

const textKeyword: CodeKeywordDefinition = {
  keyword: 'x-text',
  type: 'string',
  schemaType: 'boolean',
  error: { message: rules.TEXT_MESSAGE },
  code (cxt) {
    cxt.fail(_`!${rule(cxt, 'isText')}(${cxt.data})`)
  }
}

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

/** The Ajv that validates bodies (strict) or text (coerced); `code` when its validators are to be written out. */
export function createAjv (coerce: boolean, code?: Options['code']): Ajv2020 {
  const ajv = new Ajv2020({
    coerceTypes: coerce ? 'array' : false,
    useDefaults: true,
    allErrors: false,
    // OpenAPI adds keywords of its own (example, discriminator, xml…).
    strict: false,
    // Only the spec's schemas come here, and test/spec.test.ts checks each
    // of them against Ajv's meta-schema (Redocly lints them too): checking
    // them again at every start-up would cost the meta-schema's compile.
    validateSchema: false,
    // Unoptimized: the optimizer puts a member read once in place of its
    // variable and drops the declaration, leaving the keywords' assignment
    // to an undeclared name (an error in a module's strict code).
    code: { ...code, optimize: false }
  })
  addFormats(ajv)
  ajv.addKeyword(int64Keyword(coerce))
  ajv.addKeyword(textKeyword)
  ajv.addKeyword(integerKeyword)
  return ajv
}

/** What a validator is keyed by: how it validates (a strict body, or coerced text) and its schema's content. request-check.ts holds them by the prepared schema's key. */
export function checkKey (coerce: boolean, prepared: unknown): string {
  return `${coerce ? 'coerced' : 'body'} ${schemaKey(prepared)}`
}

/**
 * A validator compiler for one plugin instance: strict bodies, coerced
 * parameters. A schema compiled ahead (`ahead`, by its checkKey) is not
 * compiled again; Ajv is set up only for one that is not.
 */
export function createValidatorCompiler (ahead: ReadonlyMap<string, ValidateFunction> = REQUEST_CHECKS): FastifySchemaCompiler<unknown> {
  let strict: Ajv2020 | undefined
  let coercing: Ajv2020 | undefined
  return compileOnce(
    ({ schema, httpPart }) => checkKey(httpPart !== 'body', schema),
    ({ schema, httpPart }) => {
      const coerce = httpPart !== 'body'
      const prepared = prepareSchema(schema, coerce) as object
      const compiled = ahead.get(checkKey(coerce, prepared))
      if (compiled !== undefined) return compiled
      return coerce ? (coercing ??= createAjv(true)).compile(prepared) : (strict ??= createAjv(false)).compile(prepared)
    })
}
