// The storage contract every backend implements; the service depends on this
// interface only, and test/store-suite.ts holds every backend to it.
import type { JsonText } from '../json-text.ts'
import type { WebhookStorage } from './webhook-storage.ts'

export interface StoredPlant {
  id: bigint
  name: string
  tag?: string
}

/**
 * What `create` did: `created` a new plant, found the same plant already
 * there (`replayed`, a safe client retry), or found a different plant under
 * that id (`conflict`, nothing changed).
 */
export type CreateOutcome = 'created' | 'replayed' | 'conflict'

export interface ListOptions {
  /** Only plants whose id is greater than this (an exclusive cursor). */
  after?: bigint
  /** At most this many plants: see pageSize for a limit that is no whole count. */
  limit: number
}

/**
 * How many items a page of `limit` holds, at most (plants, and a
 * subscription's deliveries). The API takes 1-1000; an app that calls a
 * store itself may pass anything: NaN or under 1 gets an empty page (never
 * everything, as SQLite's `LIMIT -1` would give), a fraction rounds up, and
 * Infinity means all (2^53 - 1). A plain-JS caller's bigint or numeric
 * string is read as its number.
 */
export function pageSize (limit: number): number {
  const count = Number(limit)
  return count >= 1 ? Math.min(Math.ceil(count), Number.MAX_SAFE_INTEGER) : 0
}

export interface PlantStorage {
  /**
   * `traceparent`: the W3C trace context the plant's newPlant deliveries
   * continue (kept with them, sent to receivers), when traces are on.
   * `timing`: filled by a store that commits in batches (SQLite), for the
   * trace's wait and commit spans.
   */
  create (plant: StoredPlant, traceparent?: string, timing?: WriteTiming): Promise<CreateOutcome>
  get (id: bigint): Promise<StoredPlant | undefined>
  /** Plants in ascending id order. */
  list (options: ListOptions): Promise<StoredPlant[]>
  /**
   * The page `list` gives, as its JSON text (ids as exact integers, no
   * `tag` member where there is none), for a store that can write it faster
   * than the plants could be serialized. The service answers with it when
   * the store has it.
   */
  listJson? (options: ListOptions): Promise<JsonText<StoredPlant[]>>
  /** Whether a plant was deleted. */
  delete (id: bigint): Promise<boolean>
  /**
   * The webhook outbox, in a store that keeps one: `create` then writes a
   * delivery per subscription in the transaction that creates the plant.
   */
  readonly webhooks?: WebhookStorage
  /** Resolves when the database answers; rejects (503 kind) when it does not. */
  ping (): Promise<void>
  /** A store with a connection pool: its counts now (metrics). */
  poolCounts? (): PoolCounts
  close (): Promise<void>
}

/** When the transaction that held a write began and ended (milliseconds since the epoch). */
export interface WriteTiming {
  committing?: number
  committed?: number
}

/** What a store reports beyond its operations' durations (metrics): SQLite, its commits. */
export interface StoreObserver {
  /**
   * A transaction of `writes` writes committed (or failed) after `seconds`;
   * `synced` false: webhook bookkeeping alone, not waited for on the disk
   * (BOOKKEEPING in webhook-storage.ts).
   */
  commit (writes: number, seconds: number, synced: boolean): void
}

/** Connection counts of a PostgreSQL pool (metrics). */
export interface PoolCounts {
  total: number
  idle: number
  /** Queries waiting for a connection. */
  waiting: number
}

/** A plant as a database row holds it: no tag is NULL there. */
export interface PlantContent {
  name: string
  tag?: string | null
}

/** A stored plant as every store returns it: no `tag` property when it has none. */
export function plantOf (id: bigint, name: string, tag: string | null | undefined): StoredPlant {
  return tag === null || tag === undefined ? { id, name } : { id, name, tag }
}

/**
 * What a create of `plant` did, given what is stored under its id: the one
 * definition of "the same plant" for every store. No tag (undefined or
 * NULL) and the empty tag differ.
 */
export function outcomeOver (stored: PlantContent, plant: PlantContent): 'replayed' | 'conflict' {
  return stored.name === plant.name && (stored.tag ?? undefined) === (plant.tag ?? undefined) ? 'replayed' : 'conflict'
}

type Method = (...args: any[]) => Promise<unknown>

/**
 * What a wrapper does around one operation (time it, trace it): given the
 * operation's name and its method (bound to the store), the method to call
 * instead. Made once per operation, so that a call costs what the wrapper
 * does and no lookup of its own.
 */
export type Around = (operation: string, method: Method) => Method

// Each method that is an operation, by the operation it counts as (a page
// as JSON is a list).
const PLANT_OPERATIONS = { create: 'create', get: 'get', list: 'list', listJson: 'list', delete: 'delete', ping: 'ping' }
const WEBHOOK_OPERATIONS = Object.fromEntries(['subscribe', 'subscriptions', 'subscription', 'unsubscribe', 'deliveries', 'retry', 'claim', 'record', 'release', 'backlog']
  .map((name) => [name, name]))

function around<T extends object> (target: T, operations: Record<string, string>, wrap: Around, bound: readonly string[]): T {
  // A plain object over the store: its methods are bound to it, so that
  // its private fields stay reachable.
  const wrapped: Record<string, unknown> = {}
  const methods = target as unknown as Record<string, Method>
  for (const [name, operation] of Object.entries(operations)) {
    if (typeof methods[name] === 'function') wrapped[name] = wrap(operation, methods[name].bind(target))
  }
  for (const name of bound) if (typeof methods[name] === 'function') wrapped[name] = methods[name].bind(target)
  return wrapped as T
}

/**
 * The store with its operations run through `plant` (and its webhook
 * outbox's through `webhooks`, when given); `close` and `poolCounts` stay
 * the store's own. Metrics and traces wrap a store this way.
 */
export function wrapStore (store: PlantStorage, plant: Around, webhooks?: Around): PlantStorage {
  const wrapped = around(store, PLANT_OPERATIONS, plant, ['close', 'poolCounts'])
  const outbox = store.webhooks && webhooks ? around(store.webhooks, WEBHOOK_OPERATIONS, webhooks, []) : store.webhooks
  return Object.defineProperty(wrapped, 'webhooks', { value: outbox, enumerable: true })
}
