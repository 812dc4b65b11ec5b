// Sends the webhook outbox: claims due deliveries from the store, POSTs
// each, signed, and records what came of it. At least once: a delivery is
// marked delivered only after a 2xx, and one whose claim lapsed (this
// process died, or took too long) is claimed again, here or elsewhere.
//
// Claims run ahead of the attempts (but while requests keep the process
// busy): each subscription may hold as many claimed deliveries waiting for
// a slot as it may have attempts in flight, so that an attempt that ends is
// followed at once by the next, and a claim takes many deliveries rather
// than the one or two that just ended (each claim and each record is a
// write: with SQLite, a round trip to the writer and a transaction).
// Attempt records are gathered for RECORD_MS, or until the next claim,
// which they join.
//
// Bounds: at most `concurrency` attempts in flight, at most a quarter of
// them (SHARE) to one subscription (a quarter of that while requests keep
// the process busy: deliveries yield to them), and one while its last
// attempt failed (a hanging or failing receiver holds few of the slots the
// others need); as many claimed deliveries waiting (no more claimed while
// failing but one at a time), each attempted only while its claim outlasts
// the attempt's deadline by LEASE_MARGIN_MS (else given back); as many
// sockets to one
// receiver as there may be attempts in flight (so that none waits for a
// socket, even when subscriptions share a receiver), `timeoutMs` per
// attempt, and what attempt.ts reads of an answer.
import type { Agent } from 'undici'
import type { FastifyBaseLogger } from 'fastify'
import { post } from './attempt.ts'
import type { Attempt } from './attempt.ts'
import { guardedLookup, literalAddressProblem } from './address-guard.ts'
import { webhookHeaders } from './signature.ts'
import { deliveryId } from '../stores/webhook-storage.ts'
import type { AttemptOutcome, DueDelivery, WebhookStorage } from '../stores/webhook-storage.ts'

export interface WebhookOptions {
  /** Allow receivers on loopback, private and other non-public addresses. Default false. */
  allowPrivateNetworks: boolean
  /** Attempts of one delivery, the first included, before it is failed. Default 8. */
  maxAttempts: number
  /** The wait after the first failed attempt; each next one is GROWTH times longer. Default 5 s. */
  retryBaseMs: number
  /** Milliseconds one attempt may take, connection included. Default 10 s. */
  timeoutMs: number
  /** Attempts in flight at once, a quarter of them at most to one subscription. Default 64. */
  concurrency: number
}

/** What an attempt runs in: given the delivery's trace context and the headers to add, it calls the attempt. */
export type AroundAttempt = <T extends { status?: number, error?: string }>(traceparent: string | undefined, url: URL, attempt: (headers: Record<string, string>) => Promise<T>) => Promise<T>

// The part of the attempts in flight one subscription may hold: the rest
// stay free for the others while up to SHARE - 1 receivers hang.
const SHARE = 4
// Waits grow fourfold, with ±25 % jitter so that deliveries failed together
// do not retry together, and never past six hours.
const GROWTH = 4
const JITTER = 0.25
const MAX_WAIT_MS = 6 * 60 * 60 * 1000
// A claim outlives its attempt by this much: past it, another dispatcher
// takes the delivery over. A claim lasts for two attempts and their
// margins: the time to wait for a slot (an attempt ahead may end late),
// then its own attempt.
const LEASE_MARGIN_MS = 10_000
// Attempt records wait at most this long to be written together.
const RECORD_MS = 2
// How often the store is asked for due deliveries when nothing wakes the
// dispatcher (retries falling due, deliveries another instance wrote).
const MAX_POLL_MS = 1000
const ERROR_LENGTH = 1024

/** The wait before the next attempt after `attempts` failed ones, jittered by `random` (0–1). */
function retryDelay (attempts: number, baseMs: number, random = Math.random()): number {
  const wait = Math.min(MAX_WAIT_MS, baseMs * GROWTH ** (attempts - 1))
  return Math.round(wait * (1 - JITTER + 2 * JITTER * random))
}

/** A claimed delivery waiting for a slot, and when it was claimed. */
interface Waiting {
  delivery: DueDelivery
  claimedAt: number
}

export class WebhookDispatcher {
  readonly #storage: WebhookStorage
  readonly #options: WebhookOptions
  readonly #log: FastifyBaseLogger
  // undici loads with the first attempt: a server without subscribers never pays for it.
  #client: Promise<Agent> | undefined
  readonly #inFlight = new Map<string, number>()
  // Claimed deliveries waiting for a slot, oldest claim first.
  #waiting: Waiting[] = []
  // Every delivery held, waiting or in flight: a claim that takes one again
  // (a retry made it due while it was held) does not send it twice.
  readonly #held = new Set<bigint>()
  // Subscriptions whose last attempt failed: one attempt at a time until one succeeds.
  readonly #failing = new Set<string>()
  readonly #attempts = new Set<Promise<void>>()
  readonly #records = new Set<Promise<void>>()
  // Outcomes of attempts that ended, until recorded.
  #outcomes: AttemptOutcome[] = []
  #recordTimer: NodeJS.Timeout | undefined
  readonly #stopping = new AbortController()
  // Each attempt's own abort: its deadline, or the stop.
  readonly #sending = new Set<Attempt>()
  readonly #perSubscription: number
  // How long a claim holds.
  readonly #leaseMs: number
  readonly #busy: () => boolean
  #timer: NodeJS.Timeout | undefined
  // The claims under way (stop waits for them, to give back what they took).
  #ticking: Promise<void> | undefined
  #wakeScheduled = false
  // Whether anyone is subscribed, as last seen (undefined: not known).
  #subscribed: boolean | undefined
  // The subscriptions the last poll found (undefined: not known, as after
  // a subscription made here): while each is at its share, a claim could
  // take nothing, and none is made.
  #known: string[] | undefined
  #subscriptionsMade = 0
  #claimsFailing = false
  #again = false

  readonly #around: AroundAttempt | undefined

  /**
   * `around`: what each attempt runs in (a trace span), given the headers it
   * adds. `busy`: whether requests keep the process busy now (Lifecycle).
   */
  constructor (storage: WebhookStorage, options: WebhookOptions, log: FastifyBaseLogger, around?: AroundAttempt, busy: () => boolean = () => false) {
    this.#storage = storage
    this.#options = options
    this.#perSubscription = Math.max(1, Math.floor(options.concurrency / SHARE))
    this.#leaseMs = 2 * (options.timeoutMs + LEASE_MARGIN_MS)
    this.#busy = busy
    this.#log = log
    this.#around = around
  }

  #http () {
    const { timeoutMs, allowPrivateNetworks } = this.#options
    this.#client ??= import('undici').then(({ Agent }) => new Agent({
      connections: this.#options.concurrency,
      connect: { timeout: timeoutMs, lookup: guardedLookup(allowPrivateNetworks) },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs
    }))
    return this.#client
  }

  start (): void {
    const poll = Math.max(10, Math.min(MAX_POLL_MS, this.#options.retryBaseMs))
    this.#timer = setInterval(() => this.#poll(), poll).unref()
    this.#poll()
  }

  // Each poll asks again whether anyone is subscribed (another instance may
  // have subscribed), then looks for due deliveries.
  #poll (): void {
    const made = this.#subscriptionsMade
    const asked = Date.now()
    this.#storage.subscriptions().then((subscriptions) => {
      // (A subscription made meanwhile may be missing from what was read.)
      if (made === this.#subscriptionsMade) {
        this.#subscribed = subscriptions.length > 0
        this.#known = subscriptions.map(({ id }) => id)
        this.#forget(new Set(this.#known), asked)
      }
    }, () => {
      this.#subscribed = undefined
      this.#known = undefined
    }).finally(() => this.#schedule())
  }

  /** A subscription was made, or a delivery retried: look at once, and after every create. */
  subscribed (): void {
    this.#subscriptionsMade++
    this.#subscribed = true
    this.#known = undefined
    this.#schedule()
  }

  /**
   * Looks for due deliveries at the end of this turn of the event loop (a
   * plant was just created, an attempt ended): the creates of one turn
   * share one look, which keeps it off each request's path. Nobody
   * subscribed, as the last poll found: no look until the next poll.
   */
  wake (): void {
    if (this.#subscribed === false) return
    this.#schedule()
  }

  #schedule (): void {
    if (this.#wakeScheduled || this.#stopping.signal.aborted) return
    this.#wakeScheduled = true
    setImmediate(() => {
      this.#wakeScheduled = false
      this.#look()
    })
  }

  #look (): void {
    if (this.#stopping.signal.aborted) return
    if (this.#ticking !== undefined) {
      this.#again = true
      return
    }
    this.#ticking = this.#tick().then(() => {
      if (this.#claimsFailing) this.#log.info('webhook deliveries can be claimed again')
      this.#claimsFailing = false
    }, (err: Error) => {
      // Once per outage, not once a poll.
      if (!this.#claimsFailing) this.#log.warn({ err }, 'webhook deliveries could not be claimed; trying again every poll')
      this.#claimsFailing = true
    }).finally(() => { this.#ticking = undefined })
  }

  async #tick (): Promise<void> {
    do {
      this.#again = false
      this.#start()
      const { concurrency } = this.#options
      const room = 2 * concurrency - this.#attempts.size - this.#waiting.length
      if (room <= 0) return
      // While requests keep the process busy, no claims run ahead: the
      // deliveries' part of the process stays what their quarter share
      // takes in flight.
      const busy = this.#busy()
      const share = this.#share(busy)
      const hold = busy ? share : 2 * share
      const held = this.#claimCounts(hold)
      // A claim once a subscription has room for half a share or more, or a
      // failing one for its one (a subscription made elsewhere since the
      // poll waits for the next): under load, every turn's creates wake the
      // dispatcher, and most would take one delivery, or none.
      const worth = Math.max(1, Math.floor(share / 2))
      if (this.#known?.every((id) => hold - (held[id] ?? 0) < (this.#failing.has(id) ? 1 : worth)) === true) return
      // (The records gathered so far go with the claim: one write.)
      this.#record()
      const now = Date.now()
      const claimed = await this.#storage.claim({ now, limit: room, perSubscription: hold, held, leaseUntil: now + this.#leaseMs })
      const taken: Waiting[] = []
      for (const delivery of claimed) {
        if (this.#held.has(delivery.seq)) continue
        this.#held.add(delivery.seq)
        taken.push({ delivery, claimedAt: now })
      }
      // (Stopped meanwhile: given back at once.)
      if (this.#stopping.signal.aborted) return this.#giveBack(taken, Date.now())
      this.#waiting.push(...taken)
      this.#start()
      if (claimed.length === room) this.#again = true
    } while (this.#again && !this.#stopping.signal.aborted)
  }

  // Claimed deliveries by subscription, in flight or waiting, as claims
  // count them against `hold`: a failing subscription counts as full but
  // for one, which it may take when it has none.
  #claimCounts (hold: number): Record<string, number> {
    const held: Record<string, number> = Object.fromEntries(this.#inFlight)
    for (const { delivery: { subscriptionId: id } } of this.#waiting) held[id] = (held[id] ?? 0) + 1
    for (const id of this.#failing) held[id] = held[id] === undefined ? hold - 1 : hold
    return held
  }

  // A subscription's attempts in flight: its share, a quarter of it while
  // requests keep the process busy (attempts already out go on).
  #share (busy = this.#busy()): number {
    return busy ? Math.max(1, Math.floor(this.#perSubscription / SHARE)) : this.#perSubscription
  }

  // Starts waiting deliveries, oldest claim first, while there are slots:
  // each within its subscription's share (one at a time while failing).
  // One whose claim would lapse before its attempt's deadline and margin
  // is given back instead (or, with its claim all but over, left to lapse).
  #start (): void {
    if (this.#waiting.length === 0 || this.#stopping.signal.aborted) return
    const share = this.#share()
    const now = Date.now()
    const kept: Waiting[] = []
    const late: Waiting[] = []
    for (const entry of this.#waiting) {
      const id = entry.delivery.subscriptionId
      if (now + this.#options.timeoutMs + LEASE_MARGIN_MS > entry.claimedAt + this.#leaseMs) {
        late.push(entry)
      } else if (this.#attempts.size >= this.#options.concurrency || (this.#inFlight.get(id) ?? 0) >= (this.#failing.has(id) ? 1 : share)) {
        kept.push(entry)
      } else {
        this.#track(entry.delivery)
      }
    }
    this.#waiting = kept
    this.#giveBack(late, now)
  }

  // Gives back waiting deliveries (already out of #waiting) whose claims
  // surely hold for the write (LEASE_MARGIN_MS and more): due again at once,
  // for a claim here or elsewhere. The others' claims lapse on their own.
  #giveBack (entries: readonly Waiting[], now: number): void {
    const seqs: bigint[] = []
    for (const { delivery, claimedAt } of entries) {
      this.#held.delete(delivery.seq)
      if (now + LEASE_MARGIN_MS < claimedAt + this.#leaseMs) seqs.push(delivery.seq)
    }
    if (seqs.length === 0) return
    const released = this.#storage.release(seqs).catch(() => {}).finally(() => this.#records.delete(released))
    this.#records.add(released)
  }

  // After a poll: the waiting deliveries of subscriptions it did not find
  // (deleted, or made elsewhere after it read them: so only those claimed
  // before it read) are given back, and the failing marks of subscriptions
  // gone are forgotten.
  #forget (known: ReadonlySet<string>, asked: number): void {
    for (const id of this.#failing) if (!known.has(id)) this.#failing.delete(id)
    const kept: Waiting[] = []
    const gone: Waiting[] = []
    for (const entry of this.#waiting) (!known.has(entry.delivery.subscriptionId) && entry.claimedAt < asked ? gone : kept).push(entry)
    this.#waiting = kept
    this.#giveBack(gone, Date.now())
  }

  #track (delivery: DueDelivery): void {
    this.#inFlight.set(delivery.subscriptionId, (this.#inFlight.get(delivery.subscriptionId) ?? 0) + 1)
    const attempt = this.#attempt(delivery).finally(() => {
      this.#held.delete(delivery.seq)
      const left = this.#inFlight.get(delivery.subscriptionId)! - 1
      if (left === 0) this.#inFlight.delete(delivery.subscriptionId)
      else this.#inFlight.set(delivery.subscriptionId, left)
      this.#attempts.delete(attempt)
      this.#start()
      this.wake()
    })
    this.#attempts.add(attempt)
  }

  async #attempt (delivery: DueDelivery): Promise<void> {
    let result: { status?: number, error?: string }
    try {
      const target = new URL(delivery.url)
      result = this.#around === undefined
        ? await this.#send(delivery, target)
        : await this.#around(delivery.traceparent, target, (headers) => this.#send(delivery, target, headers))
    } catch (err) {
      if (this.#stopping.signal.aborted) {
        // Our own shutdown is no failure of the receiver: the delivery
        // stays pending, due at once, its attempts unchanged.
        await this.#storage.release([delivery.seq]).catch(() => {})
        return
      }
      result = { error: describe(err as Parameters<typeof describe>[0]) }
    }
    const now = Date.now()
    if (result.error === undefined) this.#failing.delete(delivery.subscriptionId)
    else this.#failing.add(delivery.subscriptionId)
    const attempts = delivery.attempts + 1
    const outcome: AttemptOutcome = result.error === undefined
      ? { seq: delivery.seq, delivered: true, status: result.status!, at: now }
      : {
          seq: delivery.seq,
          delivered: false,
          ...(result.status !== undefined && { status: result.status }),
          error: result.error.slice(0, ERROR_LENGTH),
          ...(attempts < this.#options.maxAttempts && { nextAttemptAt: now + retryDelay(attempts, this.#options.retryBaseMs) })
        }
    // Not awaited: the slot frees now. The attempts that end within
    // RECORD_MS are recorded together, or with the next claim, so that a
    // SQLite writer commits them in one transaction. (The deliveries just
    // attempted stay claimed until recorded, so no claim takes them.)
    if (this.#outcomes.push(outcome) === 1) this.#recordTimer = setTimeout(() => this.#record(), RECORD_MS)
  }

  // A record that fails, wholly or in part, leaves the claims of what it
  // did not record to lapse: those deliveries are attempted again, at least
  // once holds.
  #record (): void {
    const outcomes = this.#outcomes
    if (outcomes.length === 0) return
    clearTimeout(this.#recordTimer)
    this.#outcomes = []
    const recorded = this.#storage.record(outcomes)
      .catch((err: Error) => this.#log.warn({ err, deliveries: outcomes.map((outcome) => deliveryId(outcome.seq)) }, 'webhook attempts could not all be recorded; those not recorded will be attempted again'))
      .finally(() => this.#records.delete(recorded))
    this.#records.add(recorded)
  }

  async #send ({ seq, secret, payload }: DueDelivery, target: URL, extraHeaders?: Record<string, string>): Promise<{ status?: number, error?: string }> {
    const refused = literalAddressProblem(target, this.#options.allowPrivateNetworks)
    if (refused !== undefined) return { error: refused }
    const agent = await this.#http()
    // (Stopped meanwhile: nothing is sent, nor queued for a connection.)
    if (this.#stopping.signal.aborted) throw this.#stopping.signal.reason
    const attempt = post(agent, target, { ...extraHeaders, ...webhookHeaders(secret, deliveryId(seq), payload, Date.now()) }, payload)
    const deadline = setTimeout(() => attempt.abort(new AttemptTimeoutError()), this.#options.timeoutMs)
    this.#sending.add(attempt)
    try {
      return outcomeOf(await attempt.status)
    } finally {
      clearTimeout(deadline)
      this.#sending.delete(attempt)
    }
  }

  /** Stops claiming; attempts in flight are cut and their deliveries, and those waiting, left pending. */
  async stop (): Promise<void> {
    clearInterval(this.#timer)
    this.#stopping.abort()
    for (const attempt of this.#sending) attempt.abort(this.#stopping.signal.reason)
    // A claim under way adds what it took to the waiting, given back here.
    await this.#ticking
    const waiting = this.#waiting
    this.#waiting = []
    this.#giveBack(waiting, Date.now())
    await Promise.allSettled([...this.#attempts])
    this.#record()
    await Promise.allSettled([...this.#records])
    if (this.#client !== undefined) await (await this.#client).close()
  }
}

// What an answer's status makes of an attempt. (A status outside HTTP's
// range is no status to keep.)
function outcomeOf (statusCode: number): { status?: number, error?: string } {
  if (statusCode < 100 || statusCode > 599) return { error: `the receiver answered an invalid status (${statusCode})` }
  return statusCode >= 200 && statusCode < 300 ? { status: statusCode } : { status: statusCode, error: `the receiver answered ${statusCode}` }
}

/** An attempt that took longer than `timeoutMs`, connecting included. */
class AttemptTimeoutError extends Error {
  override name = 'TimeoutError'
  constructor () {
    super('the attempt took too long')
  }
}

// What a receiver's failure was, in a sentence with no secrets (the URL's
// host and the error code only).
function describe (err: Error & { code?: string, cause?: { code?: string, message?: string } }): string {
  if (err.name === 'TimeoutError' || err.code === 'UND_ERR_HEADERS_TIMEOUT' || err.code === 'UND_ERR_BODY_TIMEOUT' || err.code === 'UND_ERR_CONNECT_TIMEOUT') return 'no answer in time'
  const cause = err.cause?.message ?? err.message
  return `${err.cause?.code ?? err.code ?? 'error'}: ${cause}`
}
