// JSON bodies that keep every integer digit for digit. A plain JSON.parse
// turns 9007199254740993 into 9007199254740992; Node 24 hands a reviver the
// raw source text, from which integers past 2^53 become bigints.
import secureJson from 'secure-json-parse'
import { InvalidJsonError } from './errors.ts'

// Integers with fewer digits are exact as numbers: the reviver, which costs
// a call per value, only runs on bodies that might hold a longer one.
const MAYBE_LONG_INTEGER = /\d{16}/
/** A JSON integer written as plain digits: no fraction, no exponent. */
export const INTEGER_LITERAL = /^-?\d+$/

function keepIntegerDigits (_key: string, value: unknown, context?: { source?: string }): unknown {
  if (typeof value === 'number' && !Number.isSafeInteger(value) &&
      context?.source !== undefined && INTEGER_LITERAL.test(context.source)) {
    return BigInt(context.source)
  }
  return value
}

/**
 * Parses a JSON body, integers past 2^53 as bigints, and refuses
 * `__proto__` and `constructor.prototype` keys as Fastify's own parser does.
 */
export function parseJsonBody (text: string): unknown {
  if (text.trim() === '') throw new InvalidJsonError('the body is empty')
  try {
    return secureJson.parse(text, MAYBE_LONG_INTEGER.test(text) ? keepIntegerDigits : undefined, {
      protoAction: 'error',
      constructorAction: 'error'
    })
  } catch (err) {
    throw new InvalidJsonError((err as Error).message)
  }
}
