// Every rule about int64 values, in one place. The spec declares ids as
// `type: integer, format: int64`; JavaScript numbers are exact only up to
// 2^53, so int64 values travel inside the service as bigints:
// - in: the JSON body parser (json-body.ts) reads an int64 member from its
//   source digits (`int64FromJsonNumber`); paths and queries arrive as text
//   (`int64FromDigits`); the validator (validation.ts) checks either with the
//   `x-int64` keyword that `toInt64` implements;
// - out: Fastify's serializer (fast-json-stringify) writes a bigint in an
//   `integer` schema as its digits, so answers need nothing more.

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

/** The validation message for any value that is not an int64. */
export const INT64_MESSAGE = `must be an integer from ${INT64_MIN} to ${INT64_MAX}`

/** Digits of the largest int64 magnitude: anything longer is out of range. */
const MAX_DIGITS = 19

/** A decimal integer as a path or query carries it: digits, optional minus. */
const DIGITS = /^-?\d+$/
const ZERO = 0x30
/** An integer literal short enough to be in range whatever its digits. */
const SHORT_INTEGER = /^-?(?:0|[1-9]\d{0,17})$/
/** A JSON number token, in parts: sign, integer digits, fraction, exponent. */
const JSON_NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/

function inRange (value: bigint): bigint | undefined {
  return value >= INT64_MIN && value <= INT64_MAX ? value : undefined
}

/**
 * An int64 written as decimal digits (`-12`, `007`), or undefined. The
 * length is checked before BigInt, whose parsing is not linear.
 */
export function int64FromDigits (text: string): bigint | undefined {
  // The usual case: no sign games, no leading zeros, in range whatever the digits.
  if (SHORT_INTEGER.test(text)) return BigInt(text)
  if (!DIGITS.test(text)) return undefined
  const negative = text.startsWith('-')
  const digits = (negative ? text.slice(1) : text).replace(/^0+(\d)/, '$1')
  if (digits.length > MAX_DIGITS) return undefined
  return inRange(negative ? -BigInt(digits) : BigInt(digits))
}

/**
 * The exact value of a JSON number token when it is a whole number in the
 * int64 range, whatever its form: `1e3` is 1000, `1.0` is 1, `-0.0` is 0,
 * `9007199254740993.0` is itself; `1.5` and `1e19` are not int64s. It is
 * computed from the digits, never through a double, in time linear in the
 * token.
 */
export function int64FromJsonNumber (token: string): bigint | undefined {
  // The usual case: plain digits, exact as they are.
  if (SHORT_INTEGER.test(token)) return BigInt(token)
  const parts = JSON_NUMBER.exec(token)
  if (parts === null) return undefined
  const [, sign, whole, fraction = '', exponent = '0'] = parts as unknown as [string, string, string, string?, string?]
  // The significant digits, found by walking in from both ends (a regex
  // such as /0+$/ backtracks quadratically on a long run of inner zeros).
  const digits = whole + fraction
  let first = 0
  while (first < digits.length && digits.charCodeAt(first) === ZERO) first++
  if (first === digits.length) return 0n
  let last = digits.length - 1
  while (digits.charCodeAt(last) === ZERO) last--
  // An exponent past 15 digits would need more digits than a body can hold
  // to bring the value back into the range; up to 15, Number is exact.
  if (exponent.replace(/^[+-]?0*/, '').length > 15) return undefined
  const significant = last - first + 1
  const scale = Number(exponent) - fraction.length + (digits.length - 1 - last)
  if (scale < 0 || significant + scale > MAX_DIGITS) return undefined
  const magnitude = BigInt(digits.slice(first, last + 1)) * 10n ** BigInt(scale)
  return inRange(sign === '-' ? -magnitude : magnitude)
}

/**
 * Stands for a body's int64 member that held a number but not a whole
 * int64 (`1.5`, `1e30`): the validator refuses it by name, rather than a
 * double that JSON.parse may have rounded to a whole number.
 */
export const NOT_AN_INT64 = Symbol('not an int64')

/**
 * The int64 a validated value stands for, or undefined. Bodies hold
 * bigints from the parser (or safe-integer numbers, from code that builds
 * them); paths and queries hold text when `fromText`.
 */
export function toInt64 (value: unknown, fromText: boolean): bigint | undefined {
  if (typeof value === 'bigint') return inRange(value)
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : undefined
  if (fromText && typeof value === 'string') return int64FromDigits(value)
  return undefined
}

/** Whether a schema declares an int64 integer. */
export function isInt64Schema (schema: unknown): boolean {
  const { type, format } = (schema ?? {}) as { type?: unknown, format?: unknown }
  return type === 'integer' && format === 'int64'
}
