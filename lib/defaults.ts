// The plugin's defaults, in a module of their own: the plugin applies
// them, and the server's configuration (config.ts) states them, without
// either loading the other.

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
 * `memory:`: plants and webhook delivery records held at most. The largest
 * record, a failed delivery of a plant with the longest name and tag (all
 * two-byte characters) with the longest error, takes some 2.3 KB of heap:
 * at most some 250 MB together (test/memory-store.test.ts).
 */
export const DEFAULT_MEMORY_MAX_RECORDS = 100_000

/** PostgreSQL: connections in a process's pool. */
export const DEFAULT_POOL_SIZE = 10
