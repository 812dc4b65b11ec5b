// The checks behind the validator's own keywords (validation.ts), apart
// from Ajv: the request validators compiled ahead (request-check.ts) call
// them without loading Ajv at all.
import { toInt64 } from './int64.ts'

export const TEXT_MESSAGE = 'must be Unicode text without NUL characters (U+0000) or unpaired surrogates (U+D800 to U+DFFF)'

/** A body's int64 (a bigint from the parser, or a safe integer), or undefined. */
export const int64FromJson = (data: unknown): bigint | undefined => toInt64(data, false)

/** A path's or query's int64 (its text, or a value already read), or undefined. */
export const int64FromText = (data: unknown): bigint | undefined => toInt64(data, true)

// Integers (other than int64s) in a path, query or header: decimal digits
// only, so that `0x10`, `1e2`, `+5` or ` 5` are not read as numbers the
// client did not write. Ajv's coercion would take them; this reads the
// text itself, and checks the bounds it replaces.
const INTEGER_TEXT = /^-?\d{1,15}$/

/** The integer `data` stands for, within the bounds (null: none); or what is wrong with it. */
export function integerFromText (data: unknown, minimum: number | null, maximum: number | null): number | string {
  const value = typeof data === 'number' ? data : typeof data === 'string' && INTEGER_TEXT.test(data) ? Number(data) : Number.NaN
  if (!Number.isSafeInteger(value)) return 'must be integer'
  if (minimum !== null && value < minimum) return `must be >= ${minimum}`
  if (maximum !== null && value > maximum) return `must be <= ${maximum}`
  return value
}

/** Whether a string is text: no NUL (PostgreSQL's text cannot hold it) and no unpaired surrogate (UTF-8 cannot). */
export const isText = (data: string): boolean => data.isWellFormed() && !data.includes('\0')
