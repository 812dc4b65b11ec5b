// The memory store's webhook outbox: the same rules as the databases', in
// the process (gone when it ends).
import { pageSize } from './plant-storage.ts'
import { allowance, deliveryRecord, earliest } from './webhook-storage.ts'
import type { Backlog, ClaimOptions, AttemptOutcome, DeliveryPage, DeliveryRecord, DueDelivery, Subscription, WebhookStorage } from './webhook-storage.ts'

interface Row extends DeliveryRecord {
  subscriptionId: string
  createdAt: number
  payload: string
  leaseUntil?: number
  traceparent?: string
}

export class MemoryWebhooks implements WebhookStorage {
  readonly #subscriptions = new Map<string, Subscription>()
  // In sequence order: a Map keeps insertion order.
  readonly #deliveries = new Map<bigint, Row>()
  #seq = 0n

  /** Whether there is anyone to write deliveries for. */
  get hasSubscriptions (): boolean {
    return this.#subscriptions.size > 0
  }

  /** Delivery records held once a create adds its own (one per subscription). */
  get deliveriesAfterCreate (): number {
    return this.#deliveries.size + this.#subscriptions.size
  }

  /** The plant store calls this when it creates a plant: one delivery per subscription. */
  enqueue (plantId: bigint, payload: string, now: number, traceparent?: string): void {
    for (const { id } of this.#subscriptions.values()) {
      const seq = ++this.#seq
      this.#deliveries.set(seq, { seq, subscriptionId: id, plantId, payload, status: 'pending', attempts: 0, nextAttemptAt: now, createdAt: now, ...(traceparent !== undefined && { traceparent }) })
    }
  }

  async subscribe (subscription: Subscription, max: number): Promise<boolean> {
    if (this.#subscriptions.size >= max) return false
    this.#subscriptions.set(subscription.id, { ...subscription })
    return true
  }

  async subscriptions (): Promise<Subscription[]> {
    return [...this.#subscriptions.values()].map((subscription) => ({ ...subscription }))
  }

  async subscription (id: string): Promise<Subscription | undefined> {
    const subscription = this.#subscriptions.get(id)
    return subscription && { ...subscription }
  }

  async unsubscribe (id: string): Promise<boolean> {
    if (!this.#subscriptions.delete(id)) return false
    for (const [seq, row] of this.#deliveries) if (row.subscriptionId === id) this.#deliveries.delete(seq)
    return true
  }

  async deliveries (subscriptionId: string, { after, limit }: DeliveryPage): Promise<DeliveryRecord[] | undefined> {
    if (!this.#subscriptions.has(subscriptionId)) return undefined
    const page: DeliveryRecord[] = []
    const size = pageSize(limit)
    for (const row of this.#deliveries.values()) {
      if (page.length === size) break
      if (row.subscriptionId === subscriptionId && (after === undefined || row.seq > after)) page.push(deliveryRecord(row))
    }
    return page
  }

  async retry (subscriptionId: string, seq: bigint, now: number): Promise<DeliveryRecord | undefined> {
    const row = this.#deliveries.get(seq)
    if (row === undefined || row.subscriptionId !== subscriptionId) return undefined
    Object.assign(row, { status: 'pending', nextAttemptAt: now, leaseUntil: undefined })
    return deliveryRecord(row)
  }

  async claim (options: ClaimOptions): Promise<DueDelivery[]> {
    const { now, limit, leaseUntil } = options
    if (this.#subscriptions.size === 0) return []
    const candidates: Array<Row & { nextAttemptAt: number }> = []
    const taken = new Map<string, number>()
    for (const row of this.#deliveries.values()) {
      if (row.status !== 'pending' || row.nextAttemptAt! > now || (row.leaseUntil !== undefined && row.leaseUntil > now)) continue
      const count = taken.get(row.subscriptionId) ?? 0
      if (count >= allowance(options, row.subscriptionId)) continue
      taken.set(row.subscriptionId, count + 1)
      candidates.push(row as Row & { nextAttemptAt: number })
    }
    return earliest(candidates, limit).map((row) => {
      row.leaseUntil = leaseUntil
      const { url, secret } = this.#subscriptions.get(row.subscriptionId)!
      return { seq: row.seq, subscriptionId: row.subscriptionId, url, secret, payload: row.payload, attempts: row.attempts, ...(row.traceparent !== undefined && { traceparent: row.traceparent }) }
    })
  }

  async record (outcomes: readonly AttemptOutcome[]): Promise<void> {
    for (const outcome of outcomes) {
      const row = this.#deliveries.get(outcome.seq)
      if (row === undefined || row.status !== 'pending') continue
      row.attempts++
      row.leaseUntil = undefined
      row.lastStatus = outcome.status
      if (outcome.delivered) {
        Object.assign(row, { status: 'delivered', deliveredAt: outcome.at, nextAttemptAt: undefined, lastError: undefined })
      } else {
        Object.assign(row, { lastError: outcome.error, nextAttemptAt: outcome.nextAttemptAt, status: outcome.nextAttemptAt === undefined ? 'failed' : 'pending' })
      }
    }
  }

  async backlog (): Promise<Backlog> {
    let pending = 0
    let oldest: number | undefined
    for (const row of this.#deliveries.values()) {
      if (row.status !== 'pending') continue
      pending++
      oldest = Math.min(oldest ?? row.createdAt, row.createdAt)
    }
    return oldest === undefined ? { pending } : { pending, oldestCreatedAt: oldest }
  }

  async release (seqs: readonly bigint[]): Promise<void> {
    for (const seq of seqs) {
      const row = this.#deliveries.get(seq)
      if (row !== undefined) row.leaseUntil = undefined
    }
  }
}
