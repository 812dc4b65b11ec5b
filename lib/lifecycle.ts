// The service's state as load balancers and clients see it: ready,
// overloaded (event-loop delay or memory past a limit), closing, draining.
// /readyz, the request hooks and the answers' Connection header read the
// plugin's Lifecycle; the server closes through `drain` below.
//
// The overload check does what @fastify/under-pressure does, minus its one
// fatal flaw for a service under attack: it samples memory with an
// unguarded process.memoryUsage(), which throws EMFILE from a timer when
// file descriptors run out and so ends the process. Here a failed sample
// keeps the last value.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { getHeapStatistics } from 'node:v8'
import type { FastifyInstance } from 'fastify'
import { DEFAULT_MAX_EVENT_LOOP_DELAY } from './defaults.ts'

export interface OverloadLimits {
  /** Mean event-loop delay (ms) over a sample past which the process is overloaded; 0: no limit. Default 1000. */
  maxEventLoopDelay?: number
  /** Resident memory (bytes) past which it is overloaded; 0: no limit. */
  maxRssBytes?: number
  /** V8 heap in use (bytes) past which it is overloaded; 0: no limit. */
  maxHeapUsedBytes?: number
  /** Milliseconds between samples. Default 1000. */
  sampleInterval?: number
}

const RESOLUTION_MS = 10

/** Whether an event-loop delay (ms) is past the limit, the monitor's resolution allowed for. */
export function delayPast (delayMs: number, maxEventLoopDelay: number): boolean {
  return delayMs - RESOLUTION_MS > maxEventLoopDelay
}
// Busy: requests arrived in the last BUSY_WINDOW_MS, and the event loop
// was working for more than BUSY_UTILIZATION of it. (Half, not all: a
// process serving durable SQLite creates waits for their commits part of
// the time even when its core is saturated.)
const BUSY_WINDOW_MS = 100
const BUSY_UTILIZATION = 0.5

/**
 * Resident memory past the limit is an overload while at least half of the
 * limit is memory in use (the V8 heap and external buffers). Memory a burst
 * used and freed stays resident (allocators rarely give it back) but is
 * reused: counting it would keep the service refusing long after the burst.
 */
export function rssOverloaded (rss: number, inUse: number, maxRssBytes: number): boolean {
  return rss > maxRssBytes && inUse > maxRssBytes / 2
}

export class Lifecycle {
  readonly #limits: Required<OverloadLimits>
  #histogram: ReturnType<typeof monitorEventLoopDelay> | undefined
  #timer: NodeJS.Timeout | undefined
  #overload: string | undefined
  #closing = false
  #rss = 0
  #sampledAt = 0
  #requests = 0
  #window = { at: performance.now(), requests: 0, utilization: performance.eventLoopUtilization(), busy: false }

  constructor (limits: OverloadLimits | false) {
    this.#limits = {
      maxEventLoopDelay: DEFAULT_MAX_EVENT_LOOP_DELAY,
      maxRssBytes: 0,
      maxHeapUsedBytes: 0,
      sampleInterval: 1000,
      ...(limits || { maxEventLoopDelay: 0 })
    }
  }

  /**
   * Starts watching for overload, once the app is ready: start-up's own
   * synchronous work (compiling the spec's schemas, loading modules) would
   * otherwise read as event-loop delay and refuse the first requests.
   */
  start (): void {
    if (this.#timer !== undefined) return
    const { maxEventLoopDelay, maxRssBytes, maxHeapUsedBytes, sampleInterval } = this.#limits
    if (maxEventLoopDelay > 0) {
      this.#histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS })
      this.#histogram.enable()
    }
    if (this.#histogram || maxRssBytes > 0 || maxHeapUsedBytes > 0) {
      this.#sampledAt = performance.now()
      this.#timer = setInterval(() => this.#sample(), Math.max(RESOLUTION_MS, sampleInterval)).unref()
    }
  }

  #sample (): void {
    const { maxEventLoopDelay } = this.#limits
    let overload: string | undefined
    if (this.#histogram) {
      const now = performance.now()
      const elapsed = now - this.#sampledAt
      this.#sampledAt = now
      // An empty histogram: its timer fired at most once since the reset
      // (a first fire only marks the time), so the loop turned at most
      // once since the last sample, a turn as long as the time since.
      // (Taking it as past every limit, as under-pressure does, made any
      // turn longer than the sample interval an overload, whatever the limit.)
      const histogram = this.#histogram
      // (The mean, at most the max, is read only when the max is past the
      // limit: the histogram keeps its max as it records, while its mean
      // walks every bucket.)
      const past = histogram.count > 0
        ? delayPast(histogram.max / 1e6, maxEventLoopDelay) && delayPast(histogram.mean / 1e6, maxEventLoopDelay)
        : delayPast(elapsed, maxEventLoopDelay)
      if (past) overload = 'event-loop delay'
      histogram.reset()
    }
    const memory = this.#memoryOverload()
    this.#overload = overload ?? memory
  }

  // (The heap is read only when there is a memory limit to compare it with.)
  #memoryOverload (): string | undefined {
    const { maxRssBytes, maxHeapUsedBytes } = this.#limits
    if (maxRssBytes === 0 && maxHeapUsedBytes === 0) return undefined
    const heap = getHeapStatistics()
    if (maxRssBytes > 0) {
      try {
        this.#rss = process.memoryUsage.rss()
      } catch {
        // EMFILE: no descriptor to read /proc with. The last sample stands.
      }
      if (rssOverloaded(this.#rss, heap.used_heap_size + heap.external_memory, maxRssBytes)) return 'resident memory'
    }
    if (maxHeapUsedBytes > 0 && heap.used_heap_size > maxHeapUsedBytes) return 'heap'
    return undefined
  }

  /** A request arrived (for `busy`). */
  requestArrived (): void {
    this.#requests++
  }

  /**
   * Whether requests keep the event loop busy: they arrived in the last
   * moment and the loop had no time to spare. Background work (webhook
   * deliveries) takes less while it is. Read at most once a window; a
   * window runs until the next read.
   */
  get busy (): boolean {
    const window = this.#window
    const now = performance.now()
    if (now - window.at >= BUSY_WINDOW_MS) {
      const utilization = performance.eventLoopUtilization()
      window.busy = this.#requests > window.requests && performance.eventLoopUtilization(utilization, window.utilization).utilization > BUSY_UTILIZATION
      Object.assign(window, { at: now, requests: this.#requests, utilization })
    }
    return window.busy
  }

  /** Why requests should be refused for now (overloaded), if they should. */
  get overloaded (): string | undefined {
    return this.#overload
  }

  get closing (): boolean {
    return this.#closing
  }

  /** Why the service should take no traffic (shutting down, overloaded), if it should not. */
  notReadyReason (): string | undefined {
    if (this.#closing) return 'shutting down'
    if (this.#overload !== undefined) return 'overloaded'
    return undefined
  }

  /** The app is closing: readiness fails and answers close their connections. */
  beginClosing (): void {
    this.#closing = true
  }

  stop (): void {
    clearInterval(this.#timer)
    this.#histogram?.disable()
  }
}

/**
 * Server options a graceful stop needs: while closing, requests on open
 * connections are still answered (by the plugin, /readyz saying 503)
 * rather than refused by Fastify with its own 503: a drain must not turn
 * into errors.
 */
export const DRAIN_SERVER_OPTIONS = { return503OnClosing: false } as const

// How often connections that went idle during a drain are closed.
const SWEEP_INTERVAL_MS = 100

/**
 * Stops the server: no new connections, requests in flight answered, the
 * store closed. Connections that finish their last request after the
 * close began would stay open, idle, for the keep-alive timeout: they are
 * closed as they idle. Halfway to `deadlineMs`, connections still sending a
 * request (a slow body) are cut, so that they cannot turn a clean stop
 * into a timeout.
 */
export async function drain (app: FastifyInstance, deadlineMs: number): Promise<void> {
  const sweep = setInterval(() => app.server.closeIdleConnections(), SWEEP_INTERVAL_MS)
  const cut = setTimeout(() => app.server.closeAllConnections(), deadlineMs / 2)
  try {
    await app.close()
  } finally {
    clearInterval(sweep)
    clearTimeout(cut)
  }
}
