// The webhook outbox as every store keeps it: subscriptions, and one
// delivery row per subscription for each plant created, written in the
// transaction that creates the plant. The dispatcher (lib/webhooks/)
// claims due deliveries, attempts them and records each attempt here.
import type { StoredPlant } from './plant-storage.ts'

export interface Subscription {
  /** `sub_` and 32 hex digits. */
  id: string
  url: string
  description?: string
  /** `whsec_` and the base64 of 24 random bytes. */
  secret: string
  /** ISO 8601. */
  createdAt: string
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed'

/** A delivery as stored; times in milliseconds since the epoch. */
export interface DeliveryRecord {
  /** The delivery's sequence number: ever growing, never reused. */
  seq: bigint
  plantId: bigint
  status: DeliveryStatus
  attempts: number
  lastStatus?: number
  lastError?: string
  nextAttemptAt?: number
  deliveredAt?: number
}

/** A delivery claimed for an attempt: what the request needs. */
export interface DueDelivery {
  seq: bigint
  subscriptionId: string
  url: string
  secret: string
  payload: string
  /** Attempts made before this one. */
  attempts: number
  /** The trace the create that made it was part of (W3C traceparent), if traced. */
  traceparent?: string
}

/** What an attempt came to; `nextAttemptAt` undefined after a failure: the delivery has failed. */
export type AttemptOutcome =
  | { seq: bigint, delivered: true, status: number, at: number }
  | { seq: bigint, delivered: false, status?: number, error: string, nextAttemptAt?: number }

export interface DeliveryPage {
  /** Only deliveries with a greater sequence number. */
  after?: bigint
  /** At most this many: see pageSize (plant-storage.ts) for a limit that is no whole count. */
  limit: number
}

export interface ClaimOptions {
  now: number
  /** Deliveries to claim at most. */
  limit: number
  /** At most this many claimed deliveries of one subscription held at once (in flight, or waiting for a slot), those held already included. */
  perSubscription: number
  /** Claimed deliveries held now (not yet recorded), by subscription id. */
  held: Readonly<Record<string, number>>
  /** Until when the claim holds: after it, another dispatcher may take the delivery. */
  leaseUntil: number
}

export interface WebhookStorage {
  /** Adds a subscription unless `max` exist already (then false). */
  subscribe (subscription: Subscription, max: number): Promise<boolean>
  /** Every subscription, oldest first. */
  subscriptions (): Promise<Subscription[]>
  subscription (id: string): Promise<Subscription | undefined>
  /** Deletes a subscription and its deliveries; false when there was none. */
  unsubscribe (id: string): Promise<boolean>
  /** A page of a subscription's deliveries, oldest first; undefined when there is no such subscription. */
  deliveries (subscriptionId: string, page: DeliveryPage): Promise<DeliveryRecord[] | undefined>
  /** Makes a delivery pending and due at `now`; undefined when there is no such delivery of that subscription. */
  retry (subscriptionId: string, seq: bigint, now: number): Promise<DeliveryRecord | undefined>
  /**
   * Claims due, pending deliveries whose earlier claim (if any) expired,
   * oldest due first; the work is bounded by the subscriptions (at most 100)
   * times their allowance, however long the backlog.
   */
  claim (options: ClaimOptions): Promise<DueDelivery[]>
  /** Records attempts; an attempt of a delivery no longer pending (delivered, deleted) changes nothing. */
  record (outcomes: readonly AttemptOutcome[]): Promise<void>
  /** Gives claims back untried (a stop): the deliveries are due again at once, attempts unchanged. */
  release (seqs: readonly bigint[]): Promise<void>
  /** Pending deliveries: how many, and when the oldest was written (for metrics; an index read). */
  backlog (): Promise<Backlog>
}

/**
 * The outbox's bookkeeping: claims, attempt records and releases. Losing
 * the last of them (a power cut, a kernel crash) only makes a delivery be
 * attempted again, as losing the process after an attempt does: at least
 * once still holds. So a store need not wait for the disk to commit a
 * transaction of these alone; every other write is on the disk before it is
 * answered.
 */
export const BOOKKEEPING: ReadonlySet<string> = new Set<keyof WebhookStorage>(['claim', 'record', 'release'])

/** Pending deliveries a backlog read counts at most: the count costs one index entry each. */
export const BACKLOG_COUNT_LIMIT = 100_000

/**
 * The backlog query of either database: the pending count, capped, and the
 * oldest, each read from the index of pending deliveries by creation time.
 */
export const BACKLOG_SQL = `SELECT
  (SELECT count(*) FROM (SELECT 1 FROM webhook_deliveries WHERE status = 'pending' LIMIT ${BACKLOG_COUNT_LIMIT}) AS p) AS pending,
  (SELECT created_at FROM webhook_deliveries WHERE status = 'pending' AND created_at IS NOT NULL ORDER BY created_at LIMIT 1) AS oldest`

export interface Backlog {
  /** At most BACKLOG_COUNT_LIMIT. */
  pending: number
  /** Milliseconds since the epoch; undefined when nothing is pending. */
  oldestCreatedAt?: number
}

/** How many deliveries of a subscription a claim may take. */
export function allowance ({ perSubscription, held }: ClaimOptions, subscriptionId: string): number {
  return Math.max(0, perSubscription - (held[subscriptionId] ?? 0))
}

/** The order deliveries are due in: the earliest attempt first, then the oldest. */
export function byDue (a: { nextAttemptAt: number, seq: bigint }, b: { nextAttemptAt: number, seq: bigint }): number {
  return a.nextAttemptAt - b.nextAttemptAt || (a.seq < b.seq ? -1 : 1)
}

/** Claimed candidates in the order they are due, at most `limit` of them. */
export function earliest<T extends { nextAttemptAt: number, seq: bigint }> (candidates: T[], limit: number): T[] {
  return candidates.sort(byDue).slice(0, limit)
}

/** The delivery id a receiver sees in `webhook-id` and the API shows. */
export function deliveryId (seq: bigint): string {
  return `msg_${seq}`
}

/** The sequence number of a delivery id (the spec's pattern has checked its form). */
export function deliverySeq (id: string): bigint {
  return BigInt(id.slice('msg_'.length))
}

/**
 * The body of a newPlant event: the NewPlant JSON, `id` as a plain integer
 * with every digit, no `tag` when there is none. Made once, when the
 * plant is created, and sent as is on every attempt.
 */
export function newPlantPayload ({ id, name, tag }: StoredPlant): string {
  return `{"id":${id},"name":${JSON.stringify(name)}${tag === undefined ? '' : `,"tag":${JSON.stringify(tag)}`}}`
}

/** A delivery row as either database returns it: integers as bigint (SQLite) or text (PostgreSQL int8). */
export interface DeliveryRow {
  seq: bigint | string
  plant_id: bigint | string
  status: DeliveryStatus
  attempts: bigint | number
  last_status: bigint | number | null
  last_error: string | null
  next_attempt_at: bigint | string | null
  delivered_at: bigint | string | null
}

/** The columns of a DeliveryRow. */
export const DELIVERY_COLUMNS = 'seq, plant_id, status, attempts, last_status, last_error, next_attempt_at, delivered_at'

/** A delivery as every store reports it: no field for what is not there, no next attempt unless pending. */
export function deliveryRecord (fields: { seq: bigint, plantId: bigint, status: DeliveryStatus, attempts: number, lastStatus?: number | null, lastError?: string | null, nextAttemptAt?: number | null, deliveredAt?: number | null }): DeliveryRecord {
  const { seq, plantId, status, attempts, lastStatus, lastError, nextAttemptAt, deliveredAt } = fields
  const record: DeliveryRecord = { seq, plantId, status, attempts }
  if (lastStatus != null) record.lastStatus = lastStatus
  if (lastError != null) record.lastError = lastError
  if (status === 'pending' && nextAttemptAt != null) record.nextAttemptAt = nextAttemptAt
  if (deliveredAt != null) record.deliveredAt = deliveredAt
  return record
}

// A nullable integer column as a number (times are far below 2^53).
const numberOrNull = (value: bigint | number | string | null) => value === null ? null : Number(value)

/** A delivery row of either database as a record. */
export function deliveryOf (row: DeliveryRow): DeliveryRecord {
  return deliveryRecord({
    seq: BigInt(row.seq),
    plantId: BigInt(row.plant_id),
    status: row.status,
    attempts: Number(row.attempts),
    lastStatus: numberOrNull(row.last_status),
    lastError: row.last_error,
    nextAttemptAt: numberOrNull(row.next_attempt_at),
    deliveredAt: numberOrNull(row.delivered_at)
  })
}

/** The backlog as either database counts it (integers as bigint, number or text). */
export function backlogOf ({ pending, oldest }: { pending: number | bigint | string, oldest: number | bigint | string | null }): Backlog {
  return oldest === null ? { pending: Number(pending) } : { pending: Number(pending), oldestCreatedAt: Number(oldest) }
}

export interface SubscriptionRow { id: string, url: string, description: string | null, secret: string, created_at: string }

export function subscriptionOf ({ id, url, description, secret, created_at: createdAt }: SubscriptionRow): Subscription {
  return description === null ? { id, url, secret, createdAt } : { id, url, description, secret, createdAt }
}
