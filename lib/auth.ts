import { timingSafeEqual } from 'node:crypto'
import type { FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify'
import { TooManyAuthFailuresError } from './errors.ts'
import { RouteFacts } from './route-facts.ts'

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

export interface FailureLimit {
  /** Failed authentications allowed per client address and window. */
  max: number
  /** The window, in milliseconds. */
  timeWindow: number
}

type Verify = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void
type CheckFailures = (request: FastifyRequest) => Promise<{ isAllowed: boolean, isExceeded?: boolean, ttlInSeconds?: number }>

/**
 * The onRequest hook that guards the API: operations the spec marks
 * `security: []` pass; others need a valid token. A client address that
 * keeps failing gets 429 until its window ends, but its requests with a
 * valid token are never counted nor refused.
 */
export function createAuthHook (verify: Verify, checkFailures?: CheckFailures): onRequestHookHandler {
  return function authenticate (request, reply, done) {
    if (RouteFacts.of(request).public) return done()
    verify(request, reply, (err) => {
      if (err === undefined || checkFailures === undefined) return done(err)
      checkFailures(request).then((limit) => {
        if (limit.isAllowed || !limit.isExceeded) return done(err)
        const tooMany = new TooManyAuthFailuresError(limit.ttlInSeconds ?? 1)
        done(Object.assign(tooMany, { retryAfter: limit.ttlInSeconds ?? 1 }))
      }, () => done(err))
    })
  }
}
