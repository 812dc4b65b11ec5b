import { timingSafeEqual } from 'node:crypto'

/**
 * A token check for @fastify/bearer-auth's `auth` option whose time depends
 * on neither the accepted tokens' contents nor which of them matched: every
 * accepted token is compared in constant time, and one of another length is
 * compared with itself instead, which costs the same.
 */
export function createTokenCheck (tokens: readonly string[]): (token: string) => boolean {
  const accepted = tokens.map((token) => Buffer.from(token))
  return (token) => {
    const presented = Buffer.from(token)
    let match = false
    for (const candidate of accepted) {
      const sameLength = candidate.length === presented.length
      const equal = timingSafeEqual(candidate, sameLength ? presented : candidate)
      match ||= equal && sameLength
    }
    return match
  }
}
