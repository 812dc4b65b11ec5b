// The plugin's defaults, in a module of their own: the plugin applies
// them, and the server's configuration (config.ts) states them, without
// either loading the other.
import { getHeapStatistics } from 'node:v8'

export const DEFAULT_BODY_LIMIT = 1024 * 1024
/** Failed authentications per client address and window before 429. */
export const DEFAULT_AUTH_FAILURE_LIMIT = { max: 10, timeWindow: 60_000 }
export const DEFAULT_MAX_EVENT_LOOP_DELAY = 1000
export const DEFAULT_WRITE_TIMEOUT = 30_000
export const DEFAULT_MAX_PIPELINED = 32
export const DEFAULT_MAX_HELD_BYTES = 256 * 1024 * 1024

/** Webhook delivery: attempts (the first included), first wait, per-attempt time, attempts in flight. */
export const DEFAULT_WEBHOOKS = {
  allowPrivateNetworks: false,
  maxAttempts: 8,
  retryBaseMs: 5000,
  timeoutMs: 10_000,
  concurrency: 64
}

/**
 * `memory:`: the V8 heap a record takes at most: a plant of the longest
 * name and tag (two-byte characters, an id past 2^53) some 650 bytes, a
 * webhook delivery of it some 1,250 (measured on Node 24).
 */
export const LARGEST_MEMORY_RECORD_BYTES = 1300

/**
 * `memory:`: plants and webhook delivery records held at most unless told:
 * as many of the largest as fill a quarter of V8's heap limit, so that the
 * store is full before the process runs out of memory. (The limit counts
 * the young generation, and a Map growing holds its old and new tables.)
 */
export function defaultMemoryMaxRecords (): number {
  return Math.floor(getHeapStatistics().heap_size_limit / 4 / LARGEST_MEMORY_RECORD_BYTES)
}

/** PostgreSQL: connections in a process's pool. */
export const DEFAULT_POOL_SIZE = 10
