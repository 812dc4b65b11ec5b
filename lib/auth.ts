import { timingSafeEqual } from 'node:crypto'
import { createRequire } from 'node:module'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'
import type { FastifyRateLimitOptions, FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { Redis } from 'ioredis'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import { TooManyAuthFailuresError } from './errors.ts'
import { duplicateHeader } from './raw-headers.ts'
import { RouteFacts } from './route-facts.ts'

/**
 * A token check for @fastify/bearer-auth's `auth` option whose time depends
 * on neither the accepted tokens' contents nor which of them matched: every
 * accepted token is compared in constant time, and one of another length is
 * compared with itself instead, which costs the same.
 */
export function createTokenCheck (tokens: readonly string[]): (token: string) => boolean {
  const accepted = tokens.map((token) => Buffer.from(token))
  // The presented token is written (UTF-8) into one buffer, made once, 4
  // bytes longer than the longest accepted token. write() stops before a
  // character that does not fit, and none is longer than 4 bytes: a token
  // longer than every accepted one still writes more bytes than any of
  // them has, and so matches none. Each accepted token is compared with a
  // view of the buffer of its own length.
  // (A reduce: spreading a long list of tokens into Math.max overflows the stack.)
  const scratch = Buffer.alloc(accepted.reduce((longest, candidate) => Math.max(longest, candidate.length), 0) + 4)
  const views = accepted.map((candidate) => scratch.subarray(0, candidate.length))
  return (token) => {
    const written = scratch.write(token)
    let match = false
    for (let i = 0; i < accepted.length; i++) {
      const candidate = accepted[i]!
      const sameLength = candidate.length === written
      const equal = timingSafeEqual(candidate, sameLength ? views[i]! : candidate)
      match ||= equal && sameLength
    }
    return match
  }
}

/** The scheme bearer-auth takes, in any case (its `rfc6749` compliance, as RFC 7235 says), and the space after it. */
const BEARER_PREFIX = 'bearer '

/**
 * Whether bearer-auth would accept an Authorization header at once: a
 * `Bearer` token (the scheme in any case) that `check` accepts, read as
 * bearer-auth reads it (after the scheme and its space, trimmed). The auth
 * hook lets such a request through without bearer-auth, which settles
 * every check through a promise (a turn of the microtask queue per
 * request); what this does not accept still goes to bearer-auth, which
 * names what is wrong.
 */
export function createBearerCheck (check: (token: string) => boolean): (header: string | undefined) => boolean {
  return (header) => header !== undefined && header.length > BEARER_PREFIX.length && hasBearerPrefix(header) && check(header.slice(BEARER_PREFIX.length).trim())
}

// The prefix compared in ASCII without case, copying nothing. (Only ASCII
// letters fold to the prefix's: what this accepts, bearer-auth's
// toLowerCase() comparison accepts too.)
function hasBearerPrefix (header: string): boolean {
  for (let i = 0; i < BEARER_PREFIX.length; i++) {
    const char = header.charCodeAt(i)
    const lower = BEARER_PREFIX.charCodeAt(i)
    // (Its letters are lower case: their upper case is 0x20 below.)
    if (char !== lower && !(lower >= 0x61 && char === lower - 0x20)) return false
  }
  return true
}

export interface FailureLimit {
  /** Failed authentications allowed per client address and window. */
  max: number
  /** The window, in milliseconds. */
  timeWindow: number
}

/** Where the failure counts live in a shared Redis: this prefix and the client address. */
export const FAILURE_KEY_PREFIX = 'plant-store:auth-failures:'

type RedisStoreClass = new (continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key: string) => FastifyRateLimitStore
// (Not in the package's types: its store for the `redis` option.)
const RedisStore = createRequire(import.meta.url)('@fastify/rate-limit/store/RedisStore.js') as RedisStoreClass

/**
 * @fastify/rate-limit's Redis store for its `store` option, keyed by the
 * prefix and the client address alone: the child store createRateLimit
 * makes would add a route to the key, which it has none of.
 */
export function failureStore (redis: Redis): FastifyRateLimitStoreCtor {
  return class FailureStore extends RedisStore {
    constructor (options: FastifyRateLimitOptions) {
      // (The plugin passes its merged settings, these two among them.)
      const { continueExceeding = false, exponentialBackoff = false } = options as { continueExceeding?: boolean, exponentialBackoff?: boolean }
      super(continueExceeding, exponentialBackoff, redis, FAILURE_KEY_PREFIX)
    }

    override child (): FastifyRateLimitStore {
      return this
    }
  }
}

/**
 * The address failures are counted under: the client's (request.ip, which
 * TRUST_PROXY may take from X-Forwarded-For) when it is an IP address,
 * else the connection's, so that a proxy passing a client's made-up text
 * cannot make keys of any size or number.
 */
export function failureKey (request: FastifyRequest): string {
  const ip = isIP(request.ip) === 0 ? request.socket.remoteAddress ?? 'unknown' : request.ip
  if (isIP(ip) !== 6) return ip
  // An IPv6 client picks its address from a /64 of its own: the /64 is
  // counted, as @fastify/rate-limit's own key does.
  const address = ipaddr.IPv6.parse(ip)
  if (address.isIPv4MappedAddress()) return address.toIPv4Address().toString()
  return `${new ipaddr.IPv6([...address.parts.slice(0, 4), 0, 0, 0, 0]).toString()}/64`
}

/** A callback-style step of an onRequest hook. */
export type RequestStep = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void
type CheckFailures = (request: FastifyRequest) => Promise<{ isAllowed: boolean, isExceeded?: boolean, ttlInSeconds?: number }>

/** What the auth hook reports: refusals, and whether the failure limit could count. */
export interface AuthObserver {
  failed (): void
  throttled (): void
  /** The limit's store (Redis) did not answer: this failure went uncounted. */
  limitFailed (err: Error): void
  limitCounted (): void
}

/**
 * Counts refusals in the metrics, and logs when the failure limit stops
 * counting (its Redis is away: failures pass as 401s) and when it counts
 * again: once per change, not once per request.
 */
export function authObserver (metrics: { authFailed (): void, authThrottled (): void, authLimitFailed (): void } | undefined, log: FastifyBaseLogger): AuthObserver {
  let failing = false
  return {
    failed: () => metrics?.authFailed(),
    throttled: () => metrics?.authThrottled(),
    limitFailed (err) {
      metrics?.authLimitFailed()
      if (failing) return
      failing = true
      log.warn({ err }, 'the failed-authentication limit cannot count (its store does not answer): failures get 401, not 429, until it can')
    },
    limitCounted () {
      if (!failing) return
      failing = false
      log.info('the failed-authentication limit counts again')
    }
  }
}

/** The API's guard: what passes at once, and the onRequest step that judges the rest. */
export interface AuthHook {
  /**
   * Whether a request passes without waiting: it needs no token (routes of
   * no operation, operations marked public) or carries a valid one, the
   * common case (createBearerCheck).
   */
  passes (request: FastifyRequest): boolean
  /**
   * The onRequest step for a request `passes` did not let through (it is
   * not asked again): bearer-auth's verdict and the failure limit.
   */
  judge: RequestStep
}

/**
 * The guard of the API: the spec's operations need a valid token, but for
 * those it marks `security: []`; the plugin's other routes (docs, 404,
 * 405) are not its to guard. A client address that keeps failing gets 429
 * until its window ends, but its requests with a valid token are never
 * counted nor refused.
 */
export function createAuthHook (verify: RequestStep, checkFailures?: CheckFailures, observer?: AuthObserver, accepts?: (header: string | undefined) => boolean): AuthHook {
  // A token passes at once only when it came alone: two are judge's to refuse.
  const passes = (request: FastifyRequest): boolean => {
    const route = RouteFacts.of(request)
    return route.operationId === undefined || route.public === true ||
      (accepts?.(request.headers.authorization) === true && duplicateHeader(request.raw, 'Authorization') === undefined)
  }
  return {
    passes,
    judge (request, reply, done) {
      const duplicate = duplicateHeader(request.raw, 'Authorization')
      if (duplicate !== undefined) return done(duplicate)
      verify(request, reply, (err) => {
        if (err === undefined) return done()
        if (checkFailures === undefined) {
          observer?.failed()
          return done(err)
        }
        checkFailures(request).then((limit) => {
          observer?.limitCounted()
          if (limit.isAllowed || !limit.isExceeded) {
            observer?.failed()
            return done(err)
          }
          observer?.throttled()
          const tooMany = new TooManyAuthFailuresError(limit.ttlInSeconds ?? 1)
          done(Object.assign(tooMany, { retryAfter: limit.ttlInSeconds ?? 1 }))
        }, (limitError: Error) => {
          observer?.limitFailed(limitError)
          observer?.failed()
          done(err)
        })
      })
    }
  }
}
