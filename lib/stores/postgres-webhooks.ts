// The PostgreSQL store's webhook outbox. A plant's deliveries are written
// by the statement that creates it (postgres-store.ts); here the rest.
// Several instances share the work: a claim locks the rows it takes with
// SKIP LOCKED and leases them, so that each is attempted by one instance at
// a time, and one an instance died holding is taken over once its lease ends.
import { pageSize } from './plant-storage.ts'
import { BACKLOG_SQL, DELIVERY_COLUMNS, backlogOf, byDue, deliveryOf, subscriptionOf } from './webhook-storage.ts'
import type { AttemptOutcome, Backlog, ClaimOptions, DeliveryPage, DeliveryRecord, DeliveryRow, DueDelivery, Subscription, SubscriptionRow, WebhookStorage } from './webhook-storage.ts'

/** The outbox's tables: the second migration. */
export const POSTGRES_WEBHOOK_MIGRATION = `
  CREATE TABLE webhook_subscriptions (
    seq         BIGSERIAL PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    url         TEXT NOT NULL,
    description TEXT,
    secret      TEXT NOT NULL,
    created_at  TEXT NOT NULL
  );
  CREATE TABLE webhook_deliveries (
    seq              BIGSERIAL PRIMARY KEY,
    subscription_seq BIGINT NOT NULL REFERENCES webhook_subscriptions (seq) ON DELETE CASCADE,
    plant_id         BIGINT NOT NULL,
    payload          TEXT NOT NULL,
    status           TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    last_status      INTEGER,
    last_error       TEXT,
    next_attempt_at  BIGINT,
    delivered_at     BIGINT,
    lease_until      BIGINT
  );
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
  CREATE INDEX webhook_deliveries_by_subscription ON webhook_deliveries (subscription_seq, seq);
`

/** When each delivery was written, for the age of the oldest pending one (metrics): the fourth migration. */
export const POSTGRES_WEBHOOK_CREATED_AT = `
  -- The default covers instances of the older version still writing during
  -- a rolling upgrade; pending rows of before are dated no later than due,
  -- nor than now.
  ALTER TABLE webhook_deliveries ADD COLUMN created_at BIGINT DEFAULT (extract(epoch FROM now()) * 1000)::bigint;
  UPDATE webhook_deliveries SET created_at = least(next_attempt_at, (extract(epoch FROM now()) * 1000)::bigint) WHERE status = 'pending';
  CREATE INDEX webhook_deliveries_pending_age ON webhook_deliveries (created_at) WHERE status = 'pending';
`

/** The trace each delivery continues: the fifth migration. */
export const POSTGRES_WEBHOOK_TRACEPARENT = 'ALTER TABLE webhook_deliveries ADD COLUMN traceparent TEXT'

/** Claims read each subscription's due deliveries through an index of its own. */
export const POSTGRES_WEBHOOK_DUE_INDEX = `
  DROP INDEX webhook_deliveries_due;
  CREATE INDEX webhook_deliveries_due ON webhook_deliveries (subscription_seq, next_attempt_at, seq) WHERE status = 'pending';
`

/** Every statement of the outbox, named as postgres-store.ts names its own. */
export const WEBHOOK_STATEMENTS = {
  plant_store_wh_subscribe: `INSERT INTO webhook_subscriptions (id, url, description, secret, created_at)
    SELECT $1, $2, $3, $4, $5 WHERE (SELECT count(*) FROM webhook_subscriptions) < $6`,
  plant_store_wh_all: 'SELECT id, url, description, secret, created_at FROM webhook_subscriptions ORDER BY seq',
  plant_store_wh_one: 'SELECT id, url, description, secret, created_at FROM webhook_subscriptions WHERE id = $1',
  plant_store_wh_unsubscribe: 'DELETE FROM webhook_subscriptions WHERE id = $1',
  plant_store_wh_page: `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries
    WHERE subscription_seq = (SELECT seq FROM webhook_subscriptions WHERE id = $1) AND seq > $2 ORDER BY seq LIMIT $3`,
  plant_store_wh_retry: `UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = $1, lease_until = NULL
    WHERE seq = $2 AND subscription_seq = (SELECT seq FROM webhook_subscriptions WHERE id = $3) RETURNING ${DELIVERY_COLUMNS}`,
  // Each subscription's due, unclaimed deliveries up to its allowance, by
  // an index range; rows another instance holds are skipped, not waited for.
  plant_store_wh_claim: `WITH room AS (
      SELECT s.seq, greatest($3 - coalesce(f.n, 0), 0) AS k
      FROM webhook_subscriptions s LEFT JOIN unnest($2::text[], $6::int[]) AS f (id, n) ON f.id = s.id
    ), due AS (
      SELECT d.seq, d.next_attempt_at FROM room CROSS JOIN LATERAL (
        SELECT seq, next_attempt_at FROM webhook_deliveries
        WHERE subscription_seq = room.seq AND status = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
        ORDER BY next_attempt_at, seq LIMIT room.k
        FOR UPDATE SKIP LOCKED
      ) d
      ORDER BY d.next_attempt_at, d.seq LIMIT $4
    )
    UPDATE webhook_deliveries d SET lease_until = $5 FROM due, webhook_subscriptions s
    WHERE d.seq = due.seq AND s.seq = d.subscription_seq
    RETURNING d.seq, s.id AS subscription_id, s.url, s.secret, d.payload, d.attempts, d.next_attempt_at, d.traceparent`,
  plant_store_wh_delivered: `UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, last_status = $1,
    last_error = NULL, delivered_at = $2, next_attempt_at = NULL, lease_until = NULL WHERE seq = $3 AND status = 'pending'`,
  // No next attempt: that was the last one.
  plant_store_wh_failed: `UPDATE webhook_deliveries SET status = CASE WHEN $1::bigint IS NULL THEN 'failed' ELSE 'pending' END,
    attempts = attempts + 1, last_status = $2, last_error = $3, next_attempt_at = $1, lease_until = NULL WHERE seq = $4 AND status = 'pending'`,
  plant_store_wh_backlog: BACKLOG_SQL,
  plant_store_wh_release: 'UPDATE webhook_deliveries SET lease_until = NULL WHERE seq = ANY($1::bigint[]) AND status = \'pending\''
} as const

export type WebhookStatement = keyof typeof WEBHOOK_STATEMENTS
type Query = <R>(name: WebhookStatement, values: unknown[]) => Promise<{ rows: R[], rowCount: number | null }>

export class PostgresWebhooks implements WebhookStorage {
  readonly #query: Query
  readonly #exclusive: Query

  /** `exclusive` runs a statement with the subscriptions table locked against creates. */
  constructor (query: Query, exclusive: Query) {
    this.#query = query
    this.#exclusive = exclusive
  }

  async subscribe ({ id, url, description, secret, createdAt }: Subscription, max: number): Promise<boolean> {
    return (await this.#exclusive('plant_store_wh_subscribe', [id, url, description ?? null, secret, createdAt, max])).rowCount === 1
  }

  async subscriptions (): Promise<Subscription[]> {
    return (await this.#query<SubscriptionRow>('plant_store_wh_all', [])).rows.map(subscriptionOf)
  }

  async subscription (id: string): Promise<Subscription | undefined> {
    const { rows } = await this.#query<SubscriptionRow>('plant_store_wh_one', [id])
    return rows[0] && subscriptionOf(rows[0])
  }

  async unsubscribe (id: string): Promise<boolean> {
    return (await this.#exclusive('plant_store_wh_unsubscribe', [id])).rowCount === 1
  }

  async deliveries (subscriptionId: string, { after, limit }: DeliveryPage): Promise<DeliveryRecord[] | undefined> {
    const { rows } = await this.#query<DeliveryRow>('plant_store_wh_page', [subscriptionId, (after ?? 0n).toString(), pageSize(limit)])
    // (Rows prove the subscription exists; an empty page may be a missing one.)
    if (rows.length === 0 && await this.subscription(subscriptionId) === undefined) return undefined
    return rows.map(deliveryOf)
  }

  async retry (subscriptionId: string, seq: bigint, now: number): Promise<DeliveryRecord | undefined> {
    const { rows } = await this.#query<DeliveryRow>('plant_store_wh_retry', [now, seq.toString(), subscriptionId])
    return rows[0] && deliveryOf(rows[0])
  }

  async claim ({ now, limit, perSubscription, held, leaseUntil }: ClaimOptions): Promise<DueDelivery[]> {
    const { rows } = await this.#query<{ seq: string, subscription_id: string, url: string, secret: string, payload: string, attempts: number, next_attempt_at: string, traceparent: string | null }>(
      'plant_store_wh_claim', [now, Object.keys(held), perSubscription, limit, leaseUntil, Object.values(held)])
    // (UPDATE … RETURNING keeps no order.)
    return rows
      .map((row) => ({
        seq: BigInt(row.seq),
        nextAttemptAt: Number(row.next_attempt_at),
        subscriptionId: row.subscription_id,
        url: row.url,
        secret: row.secret,
        payload: row.payload,
        attempts: row.attempts,
        ...(row.traceparent !== null && { traceparent: row.traceparent })
      }))
      .sort(byDue)
      .map(({ nextAttemptAt: _due, ...delivery }) => delivery)
  }

  async record (outcomes: readonly AttemptOutcome[]): Promise<void> {
    await Promise.all(outcomes.map((outcome) => outcome.delivered
      ? this.#query('plant_store_wh_delivered', [outcome.status, outcome.at, outcome.seq.toString()])
      : this.#query('plant_store_wh_failed', [outcome.nextAttemptAt ?? null, outcome.status ?? null, outcome.error, outcome.seq.toString()])))
  }

  async release (seqs: readonly bigint[]): Promise<void> {
    await this.#query('plant_store_wh_release', [seqs.map(String)])
  }

  async backlog (): Promise<Backlog> {
    const { rows } = await this.#query<{ pending: string, oldest: string | null }>('plant_store_wh_backlog', [])
    return backlogOf(rows[0]!)
  }
}
