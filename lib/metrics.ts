// The service's Prometheus metrics (prom-client): every metric the plugin
// keeps is declared here, and the rest of the code reports to it through
// the small interfaces below. Names follow Prometheus conventions: a
// `plant_store_` prefix, base units (seconds), `_total` on counters.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client'
import { LabelledCounter, LabelledHistogram } from './metric-series.ts'
import type { AnyRegistry, CounterSeries, HistogramSeries } from './metric-series.ts'
import { BACKLOG_COUNT_LIMIT } from './stores/webhook-storage.ts'
import type { AttemptOutcome, Backlog, WebhookStorage } from './stores/webhook-storage.ts'
import { wrapStore } from './stores/plant-storage.ts'
import type { Around, PlantStorage, PoolCounts, StoreObserver } from './stores/plant-storage.ts'

/** What the readiness gauges read. */
export interface StateSource {
  closing: boolean
  overloaded: string | undefined
}

// A scrape reads the webhook backlog at most once a second, and waits for it
// at most a second.
const BACKLOG_CACHE_MS = 1000
const BACKLOG_TIMEOUT_MS = 1000

const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const ROWS_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]

// Node's process metrics, collected once per process however many plugin
// instances keep registries of their own: each collection starts an
// event-loop monitor and a GC observer that nothing stops.
let processMetrics: Registry | undefined
function processRegistry (): Registry {
  if (processMetrics === undefined) {
    processMetrics = new Registry()
    collectDefaultMetrics({ register: processMetrics })
  }
  return processMetrics
}

export interface MetricsOptions {
  /** Where the metrics are registered; default a registry of the plugin's own. */
  registry?: AnyRegistry
}

/**
 * The plugin's metrics in one registry. With a registry of its own it also
 * collects Node's default process metrics; a host that passes its registry
 * decides that for itself (they can be collected once per registry).
 */
export class PlantStoreMetrics {
  readonly registry: AnyRegistry
  // The names the plugin's metrics were registered under, to take them out
  // by: an OpenMetrics registry renames its counters (dropping `_total`)
  // the first time it renders them.
  readonly #owned: string[] = []
  readonly #ownRegistry: boolean

  // (On every request's path: series of metric-series.ts; the rest prom-client's.)
  readonly #requests: LabelledCounter
  readonly #durations: LabelledHistogram
  // By operation, method and status.
  readonly #requestSeries = new Map<string, Map<string, Map<number, { counter: CounterSeries, histogram: HistogramSeries }>>>()
  readonly #authFailures: Counter
  readonly #authThrottled: Counter
  readonly #authLimitErrors: Counter
  readonly #storeDurations: LabelledHistogram
  readonly #commits: CounterSeries
  readonly #unsyncedCommits: CounterSeries
  readonly #commitRows: HistogramSeries
  readonly #commitDurations: HistogramSeries
  readonly #deliveries: Counter<'outcome'>

  constructor ({ registry }: MetricsOptions = {}) {
    this.#ownRegistry = registry === undefined
    this.registry = registry ?? new Registry()
    const registers = [this.registry]

    this.#requests = this.#own(new LabelledCounter({ name: 'plant_store_http_requests_total', help: 'HTTP requests answered, by operationId (`none` for no operation), method and status code', registers }))
    this.#durations = this.#own(new LabelledHistogram({ name: 'plant_store_http_request_duration_seconds', help: 'Time from a request\'s arrival to its answer being sent', buckets: LATENCY_BUCKETS, registers }))
    this.#authFailures = this.#own(new Counter({ name: 'plant_store_auth_failures_total', help: 'Requests refused 401: no token, or one not accepted', registers }))
    this.#authThrottled = this.#own(new Counter({ name: 'plant_store_auth_throttled_total', help: 'Requests refused 429: their client address failed authentication too often', registers }))
    this.#authLimitErrors = this.#own(new Counter({ name: 'plant_store_auth_limit_errors_total', help: 'Failed authentications the limit could not count (its store, Redis, did not answer): the limit failed open', registers }))
    this.#storeDurations = this.#own(new LabelledHistogram({ name: 'plant_store_store_operation_duration_seconds', help: 'Duration of store operations, by store and operation', buckets: LATENCY_BUCKETS, registers }))
    this.#commits = this.#own(new LabelledCounter({ name: 'plant_store_sqlite_commits_total', help: 'SQLite write transactions (each one fsync, but those of plant_store_sqlite_unsynced_commits_total)', registers })).series('', {})
    this.#unsyncedCommits = this.#own(new LabelledCounter({ name: 'plant_store_sqlite_unsynced_commits_total', help: 'SQLite write transactions of webhook bookkeeping alone (claims, attempt records), not waited for on the disk: the next fsync carries them', registers })).series('', {})
    this.#commitRows = this.#own(new LabelledHistogram({ name: 'plant_store_sqlite_commit_writes', help: 'Writes per SQLite transaction (group commit)', buckets: ROWS_BUCKETS, registers })).series('', {})
    this.#commitDurations = this.#own(new LabelledHistogram({ name: 'plant_store_sqlite_commit_duration_seconds', help: 'Duration of SQLite write transactions, the fsync included for those that wait for one', buckets: LATENCY_BUCKETS, registers })).series('', {})
    this.#deliveries = this.#own(new Counter({ name: 'plant_store_webhook_attempts_total', help: 'Webhook delivery attempts by outcome: `delivered`, `retry` (failed, another attempt is due later) or `failed` (the last attempt failed)', labelNames: ['outcome'], registers }))
    if (this.#ownRegistry) processRegistry()
  }

  /** The request metrics of one answer. */
  request (operation: string, method: string, status: number, seconds: number): void {
    // (Looked up by its parts, each a string or number already hashed: a
    // key made of them would be a new string to hash on every request.)
    let byMethod = this.#requestSeries.get(operation)
    if (byMethod === undefined) this.#requestSeries.set(operation, byMethod = new Map())
    let byStatus = byMethod.get(method)
    if (byStatus === undefined) byMethod.set(method, byStatus = new Map())
    let series = byStatus.get(status)
    if (series === undefined) {
      const key = `${operation} ${method} ${status}`
      const labels = { operation, method, status }
      series = { counter: this.#requests.series(key, labels), histogram: this.#durations.series(key, labels) }
      byStatus.set(status, series)
    }
    series.counter.value++
    series.histogram.observe(seconds)
  }

  authFailed (): void { this.#authFailures.inc() }
  authThrottled (): void { this.#authThrottled.inc() }
  authLimitFailed (): void { this.#authLimitErrors.inc() }

  /** What a SQLite store opened for the plugin reports its commits to. */
  readonly commits: StoreObserver = {
    commit: (writes, seconds, synced) => {
      this.#commits.value++
      if (!synced) this.#unsyncedCommits.value++
      this.#commitRows.observe(writes)
      this.#commitDurations.observe(seconds)
    }
  }

  /** A store whose operations are timed and whose webhook attempts are counted. */
  instrument (store: PlantStorage, name: string): PlantStorage {
    const timed: Around = (operation, method) => {
      // (Made on the first call: operations never called show no series.)
      let series: HistogramSeries | undefined
      return (...args) => {
        const observed = series ??= this.#storeDurations.series(`${name} ${operation}`, { store: name, operation })
        const start = performance.now()
        // (The caller gets the same settlement as without metrics: a
        // rejection it drops is still reported as unhandled.)
        return method(...args).then((value) => {
          observed.observe((performance.now() - start) / 1000)
          return value
        }, (err: unknown) => {
          observed.observe((performance.now() - start) / 1000)
          throw err
        })
      }
    }
    return wrapStore(store, timed, (operation, method) => {
      const call = timed(operation, method)
      if (operation !== 'record') return call
      return (outcomes: AttemptOutcome[], ...rest) => {
        for (const outcome of outcomes) this.#deliveries.inc({ outcome: outcomeOf(outcome) })
        return call(outcomes, ...rest)
      }
    })
  }

  /** Gauges read at each scrape: readiness, the webhook backlog, the PostgreSQL pool. */
  watch ({ state, webhooks, pool }: { state: StateSource, webhooks?: WebhookStorage, pool?: () => PoolCounts }): void {
    const registers = [this.registry]
    this.#own(new Gauge({
      name: 'plant_store_ready',
      help: '1 while the service takes traffic, 0 while overloaded or shutting down (summed over workers: how many are ready)',
      registers,
      collect () { this.set(state.closing || state.overloaded !== undefined ? 0 : 1) }
    }))
    this.#own(new Gauge({
      name: 'plant_store_overloaded',
      help: '1 while requests are refused 503 for overload (event-loop delay or memory past its limit)',
      registers,
      collect () { this.set(state.overloaded === undefined ? 0 : 1) }
    }))
    if (webhooks !== undefined) {
      // Every instance reads the same database: the oldest and the count are
      // the same wherever read, so workers' values are not added up. One
      // read serves every scrape of a second (a flood of scrapes is one
      // query a second), and one the database does not answer within
      // BACKLOG_TIMEOUT_MS leaves the gauges as they were and is counted:
      // the other metrics still answer while the database is away.
      let read: { at: number, backlog: Promise<Backlog | undefined> } | undefined
      const errors: Counter = this.#own(new Counter({
        name: 'plant_store_webhook_backlog_errors_total',
        help: 'Scrapes whose webhook backlog read failed or took too long (the backlog gauges kept their last values)',
        registers,
        // (Rendered with the read of this scrape, not before it.)
        async collect () { await backlog() }
      }))
      const backlog = (): Promise<Backlog | undefined> => {
        if (read !== undefined && Date.now() - read.at < BACKLOG_CACHE_MS) return read.backlog
        let timer: NodeJS.Timeout | undefined
        const timeout = new Promise<undefined>((resolve) => { timer = setTimeout(() => resolve(undefined), BACKLOG_TIMEOUT_MS) })
        const backlog = Promise.race([webhooks.backlog(), timeout]).finally(() => clearTimeout(timer)).then((value) => {
          if (value === undefined) errors.inc()
          return value
        }, () => {
          errors.inc()
          return undefined
        })
        read = { at: Date.now(), backlog }
        return backlog
      }
      this.#own(new Gauge({
        name: 'plant_store_webhook_deliveries_pending',
        help: `Webhook deliveries not yet delivered nor failed (counted up to ${BACKLOG_COUNT_LIMIT}: more reads as ${BACKLOG_COUNT_LIMIT})`,
        aggregator: 'max',
        registers,
        async collect () {
          const value = await backlog()
          if (value !== undefined) this.set(value.pending)
        }
      }))
      this.#own(new Gauge({
        name: 'plant_store_webhook_oldest_pending_age_seconds',
        help: 'Age of the oldest pending webhook delivery; 0 when none is pending',
        aggregator: 'max',
        registers,
        async collect () {
          const value = await backlog()
          if (value !== undefined) this.set(value.oldestCreatedAt === undefined ? 0 : Math.max(0, (Date.now() - value.oldestCreatedAt) / 1000))
        }
      }))
    }
    if (pool !== undefined) {
      this.#own(new Gauge({
        name: 'plant_store_postgres_pool_connections',
        help: 'PostgreSQL connections of the pool: `total` open, `idle` of them',
        labelNames: ['state'],
        registers,
        collect () {
          const counts = pool()
          this.set({ state: 'total' }, counts.total)
          this.set({ state: 'idle' }, counts.idle)
        }
      }))
      this.#own(new Gauge({
        name: 'plant_store_postgres_pool_waiting',
        help: 'Queries waiting for a PostgreSQL connection of the pool',
        registers,
        collect () { this.set(pool().waiting) }
      }))
    }
  }

  /** The metrics text: the plugin's, and the process's when the registry is the plugin's own. */
  async text (): Promise<string> {
    if (!this.#ownRegistry) return this.registry.metrics()
    const [process, own] = await Promise.all([processRegistry().metrics(), this.registry.metrics()])
    return process + own
  }

  #own<M extends object> (metric: M): M {
    this.#owned.push((metric as unknown as { name: string }).name)
    return metric
  }

  /** Takes the plugin's metrics out of a host's registry (its own is dropped whole). */
  close (): void {
    if (this.#ownRegistry) return this.registry.clear()
    for (const name of this.#owned) this.registry.removeSingleMetric(name)
  }
}

function outcomeOf (outcome: AttemptOutcome): 'delivered' | 'retry' | 'failed' {
  if (outcome.delivered) return 'delivered'
  return outcome.nextAttemptAt === undefined ? 'failed' : 'retry'
}

/** The content type of the Prometheus text format. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE
