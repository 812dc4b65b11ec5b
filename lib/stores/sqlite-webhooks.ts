// The SQLite store's webhook outbox: its statements for the writer thread
// (every change, in the writer's transactions, so that a plant and its
// deliveries commit together) and for the reading connection.
import type { SQLInputValue, StatementSync } from 'node:sqlite'
import { pageSize } from './plant-storage.ts'
import { LIMIT_PARAMETER } from './sqlite-limit.ts'
import { BACKLOG_SQL, DELIVERY_COLUMNS, allowance, backlogOf, deliveryOf, earliest, subscriptionOf } from './webhook-storage.ts'
import type { AttemptOutcome, Backlog, ClaimOptions, DeliveryRecord, DeliveryRow, DueDelivery, Subscription, SubscriptionRow } from './webhook-storage.ts'

/** The outbox's tables: the second migration. */
export const SQLITE_WEBHOOK_MIGRATION = `
  CREATE TABLE webhook_subscriptions (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    url         TEXT NOT NULL,
    description TEXT,
    secret      TEXT NOT NULL,
    created_at  TEXT NOT NULL
  ) STRICT;
  -- AUTOINCREMENT: a delivery's number (its webhook-id) is never reused.
  CREATE TABLE webhook_deliveries (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    subscription_seq INTEGER NOT NULL,
    plant_id         INTEGER NOT NULL,
    payload          TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status      INTEGER,
    last_error       TEXT,
    next_attempt_at  INTEGER,
    delivered_at     INTEGER,
    lease_until      INTEGER
  ) STRICT;
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
  CREATE INDEX webhook_deliveries_by_subscription ON webhook_deliveries (subscription_seq, seq);
`

/** When each delivery was written, for the age of the oldest pending one (metrics): the fourth migration. */
export const SQLITE_WEBHOOK_CREATED_AT = `
  ALTER TABLE webhook_deliveries ADD COLUMN created_at INTEGER;
  -- (A pending delivery of an older version was written no later than it is
  -- due, nor than now: a retry waiting for hours is that old at least.)
  UPDATE webhook_deliveries SET created_at = min(next_attempt_at, CAST(unixepoch('subsec') * 1000 AS INTEGER)) WHERE status = 'pending';
  CREATE INDEX webhook_deliveries_pending_age ON webhook_deliveries (created_at) WHERE status = 'pending';
`

/** The trace each delivery continues: the fifth migration. */
export const SQLITE_WEBHOOK_TRACEPARENT = 'ALTER TABLE webhook_deliveries ADD COLUMN traceparent TEXT'

/** Claims read each subscription's due deliveries through an index of its own. */
export const SQLITE_WEBHOOK_DUE_INDEX = `
  DROP INDEX webhook_deliveries_due;
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (subscription_seq, next_attempt_at, seq) WHERE status = 'pending';
`

type Prepare = (sql: string) => StatementSync

// A subscription's deliveries that may be claimed now: parameters subscription seq, now, now.
const DUE = "subscription_seq = ? AND status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until <= ?)"

/** The writer thread's side: every change to the outbox. */
export function webhookWrites (prepare: Prepare) {
  const enqueue = prepare(`INSERT INTO webhook_deliveries (subscription_seq, plant_id, payload, next_attempt_at, created_at, traceparent)
    SELECT seq, ?1, ?2, ?3, ?3, ?4 FROM webhook_subscriptions ORDER BY seq`)
  const subscribe = prepare(`INSERT INTO webhook_subscriptions (id, url, description, secret, created_at)
    SELECT ?, ?, ?, ?, ? WHERE (SELECT count(*) FROM webhook_subscriptions) < ?`)
  const forget = prepare('DELETE FROM webhook_deliveries WHERE subscription_seq = (SELECT seq FROM webhook_subscriptions WHERE id = ?)')
  const unsubscribe = prepare('DELETE FROM webhook_subscriptions WHERE id = ?')
  const retry = prepare(`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ?, lease_until = NULL
    WHERE seq = ? AND subscription_seq = (SELECT seq FROM webhook_subscriptions WHERE id = ?)
    RETURNING ${DELIVERY_COLUMNS}`)
  // A subscription's due, unclaimed deliveries, oldest due first: an index
  // range, however long its backlog.
  const subscriptions = prepare('SELECT seq, id, url, secret FROM webhook_subscriptions ORDER BY seq')
  const anySubscription = prepare('SELECT EXISTS (SELECT 1 FROM webhook_subscriptions) AS found')
  const due = prepare(`SELECT seq, payload, attempts, next_attempt_at, traceparent FROM webhook_deliveries WHERE ${DUE} ORDER BY next_attempt_at, seq ${LIMIT_PARAMETER}`)
  const lease = prepare('UPDATE webhook_deliveries SET lease_until = ? WHERE seq = ?')
  const delivered = prepare(`UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_status = ?,
    last_error = NULL, delivered_at = ?, next_attempt_at = NULL, lease_until = NULL WHERE seq = ? AND status = 'pending'`)
  // No next attempt: that was the last one.
  const failed = prepare(`UPDATE webhook_deliveries SET status = CASE WHEN ?1 IS NULL THEN 'failed' ELSE 'pending' END,
    attempts = attempts + 1, last_status = ?2, last_error = ?3, next_attempt_at = ?1, lease_until = NULL WHERE seq = ?4 AND status = 'pending'`)
  const release = prepare('UPDATE webhook_deliveries SET lease_until = NULL WHERE seq = ? AND status = \'pending\'')

  return {
    /** Whether a create has anyone to write deliveries for. */
    anySubscription (): boolean {
      return (anySubscription.get() as { found: bigint }).found === 1n
    },
    enqueue (plantId: bigint, payload: string, now: number, traceparent: string | undefined): void {
      enqueue.run(plantId, payload, now, traceparent ?? null)
    },
    subscribe ({ id, url, description, secret, createdAt }: Subscription, max: number): boolean {
      return Number(subscribe.run(id, url, description ?? null, secret, createdAt, max).changes) === 1
    },
    unsubscribe (id: string): boolean {
      forget.run(id)
      return Number(unsubscribe.run(id).changes) === 1
    },
    retry (subscriptionId: string, seq: bigint, now: number): DeliveryRecord | undefined {
      const row = retry.get(now, seq, subscriptionId) as DeliveryRow | undefined
      return row && deliveryOf(row)
    },
    claim (options: ClaimOptions): DueDelivery[] {
      const { now, limit, leaseUntil } = options
      const candidates: Array<DueDelivery & { nextAttemptAt: number }> = []
      for (const subscription of subscriptions.all() as Array<{ seq: bigint, id: string, url: string, secret: string }>) {
        const room = allowance(options, subscription.id)
        if (room === 0) continue
        for (const row of due.all(subscription.seq, now, now, room) as Array<{ seq: bigint, payload: string, attempts: bigint, next_attempt_at: bigint, traceparent: string | null }>) {
          candidates.push({
            seq: row.seq,
            subscriptionId: subscription.id,
            url: subscription.url,
            secret: subscription.secret,
            payload: row.payload,
            attempts: Number(row.attempts),
            nextAttemptAt: Number(row.next_attempt_at),
            ...(row.traceparent !== null && { traceparent: row.traceparent })
          })
        }
      }
      return earliest(candidates, limit).map(({ nextAttemptAt, ...delivery }) => {
        lease.run(leaseUntil, delivery.seq)
        return delivery
      })
    },
    record (outcomes: readonly AttemptOutcome[]): void {
      for (const outcome of outcomes) {
        if (outcome.delivered) delivered.run(outcome.status, outcome.at, outcome.seq)
        else failed.run(outcome.nextAttemptAt ?? null, outcome.status ?? null, outcome.error, outcome.seq)
      }
    },
    release (seqs: readonly bigint[]): void {
      for (const seq of seqs) release.run(seq)
    }
  }
}

export type WebhookWrites = ReturnType<typeof webhookWrites>

/** One change to the outbox, as the store sends it to the writer thread. */
export type WebhookWrite = { [Name in keyof WebhookWrites]: { op: 'webhooks', name: Name, args: Parameters<WebhookWrites[Name]> } }[keyof WebhookWrites]

/** The reading connection's side. */
export function webhookReads (prepare: Prepare) {
  const all = prepare('SELECT id, url, description, secret, created_at FROM webhook_subscriptions ORDER BY seq')
  const subscriptionSeqs = prepare('SELECT seq, id FROM webhook_subscriptions')
  const dueOne = prepare(`SELECT 1 FROM webhook_deliveries WHERE ${DUE} LIMIT 1`)
  const one = prepare('SELECT id, url, description, secret, created_at FROM webhook_subscriptions WHERE id = ?')
  const backlog = prepare(BACKLOG_SQL)
  const page = prepare(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
    WHERE subscription_seq = (SELECT seq FROM webhook_subscriptions WHERE id = ?) AND seq > ? ORDER BY seq ${LIMIT_PARAMETER}`)
  return {
    subscriptions: (): Subscription[] => (all.all() as unknown as SubscriptionRow[]).map(subscriptionOf),
    /** Whether a claim would find anything: most find nothing, and need not trouble the writer. */
    anyDue: (options: ClaimOptions): boolean => (subscriptionSeqs.all() as Array<{ seq: bigint, id: string }>).some(({ seq, id }) =>
      allowance(options, id) > 0 && dueOne.get(seq, options.now, options.now) !== undefined),
    subscription: (id: string): Subscription | undefined => {
      const row = one.get(id) as SubscriptionRow | undefined
      return row && subscriptionOf(row)
    },
    backlog: (): Backlog => backlogOf(backlog.get() as { pending: number | bigint, oldest: number | bigint | null }),
    deliveries: (subscriptionId: string, after: bigint | undefined, limit: number): DeliveryRecord[] =>
      (page.all(subscriptionId, (after ?? 0n) as SQLInputValue, pageSize(limit)) as unknown as DeliveryRow[]).map(deliveryOf)
  }
}

export type WebhookReads = ReturnType<typeof webhookReads>
