// One behaviour for every PlantStorage: each backend's test file runs this.
import type { Test } from 'tap'
import type { PlantStorage } from '../lib/plugin.ts'
import type { Subscription, WebhookStorage } from '../lib/stores/webhook-storage.ts'
import { parseExactIds } from './helper.ts'

/** Subscription number `n`, as the outbox tests make them. */
export const subscription = (n: number): Subscription => ({
  id: `sub_${n.toString(16).padStart(32, '0')}`,
  url: `http://127.0.0.1:9/${n}`,
  secret: `whsec_${'A'.repeat(32)}`,
  createdAt: new Date(1_700_000_000_000 + n).toISOString(),
  ...(n % 2 === 0 && { description: `number ${n}` })
})

export function storeSuite (t: Test, open: (t: Test) => Promise<PlantStorage>): void {
  const fresh = async (t: Test) => {
    const store = await open(t)
    t.teardown(() => store.close())
    return store
  }

  t.test('create, then get', async (t) => {
    const store = await fresh(t)
    t.equal(await store.create({ id: 1n, name: 'Fern', tag: 'green' }), 'created')
    t.equal(await store.create({ id: 2n, name: 'Rose' }), 'created')
    t.same(await store.get(1n), { id: 1n, name: 'Fern', tag: 'green' })
    t.same(await store.get(2n), { id: 2n, name: 'Rose' })
    t.notOk('tag' in (await store.get(2n))!, 'an absent tag stays absent')
    t.equal(await store.get(3n), undefined)
  })

  t.test('the same id: replay or conflict, never an overwrite', async (t) => {
    const store = await fresh(t)
    await store.create({ id: 5n, name: 'Fern', tag: 'a' })
    t.equal(await store.create({ id: 5n, name: 'Fern', tag: 'a' }), 'replayed')
    t.equal(await store.create({ id: 5n, name: 'Fern', tag: 'b' }), 'conflict')
    t.equal(await store.create({ id: 5n, name: 'Fern' }), 'conflict')
    t.equal(await store.create({ id: 5n, name: 'Rose', tag: 'a' }), 'conflict')
    t.same(await store.get(5n), { id: 5n, name: 'Fern', tag: 'a' })
  })

  t.test('concurrent creates of one id: the first wins, the others compare with it', async (t) => {
    const store = await fresh(t)
    const outcomes = await Promise.all([
      store.create({ id: 8n, name: 'Fern' }),
      store.create({ id: 8n, name: 'Fern' }),
      store.create({ id: 8n, name: 'Rose' }),
      store.create({ id: 9n, name: 'Ivy' })
    ])
    t.same(outcomes, ['created', 'replayed', 'conflict', 'created'])
    t.same(await store.get(8n), { id: 8n, name: 'Fern' })
  })

  t.test('the empty string is a tag, distinct from no tag', async (t) => {
    const store = await fresh(t)
    await store.create({ id: 6n, name: 'Fern', tag: '' })
    t.same(await store.get(6n), { id: 6n, name: 'Fern', tag: '' })
    t.equal(await store.create({ id: 6n, name: 'Fern' }), 'conflict')
    t.equal(await store.create({ id: 6n, name: 'Fern', tag: undefined }), 'conflict')
    t.equal(await store.create({ id: 6n, name: 'Fern', tag: '' }), 'replayed')
    await store.create({ id: 7n, name: 'Ivy', tag: undefined })
    t.same(await store.get(7n), { id: 7n, name: 'Ivy' }, 'a tag given as undefined is no tag')
    t.notOk('tag' in (await store.get(7n))!)
    t.equal(await store.create({ id: 7n, name: 'Ivy' }), 'replayed', 'and a create without one replays it')
    t.equal(await store.create({ id: 7n, name: 'Ivy', tag: '' }), 'conflict', 'while the empty tag is another plant')
  })

  t.test('int64 ids at the edges of the range', async (t) => {
    const store = await fresh(t)
    const ids = [-(2n ** 63n), -(2n ** 53n) - 1n, -1n, 0n, 2n ** 53n + 1n, 2n ** 63n - 1n]
    for (const id of ids) t.equal(await store.create({ id, name: `p${id}` }), 'created')
    for (const id of ids) t.same(await store.get(id), { id, name: `p${id}` }, `${id} round-trips`)
    t.equal(await store.get(2n ** 53n), undefined, '2^53 is not 2^53+1')
  })

  t.test('ids on both sides of ±2^53 are distinct plants', async (t) => {
    const store = await fresh(t)
    const ids = [2n ** 53n - 1n, 2n ** 53n, -(2n ** 53n) + 1n, -(2n ** 53n)]
    for (const id of ids) t.equal(await store.create({ id, name: `p${id}` }), 'created')
    for (const id of ids) t.same(await store.get(id), { id, name: `p${id}` }, `${id} round-trips`)
    t.same((await store.list({ limit: 10 })).map((p) => p.id), [-(2n ** 53n), -(2n ** 53n) + 1n, 2n ** 53n - 1n, 2n ** 53n])
    t.equal(await store.delete(2n ** 53n), true)
    t.same(await store.get(2n ** 53n - 1n), { id: 2n ** 53n - 1n, name: `p${2n ** 53n - 1n}` }, 'deleting one keeps its neighbour')
    t.equal(await store.create({ id: 2n ** 53n - 1n, name: 'other' }), 'conflict')
  })

  t.test('list: ascending ids, an exclusive cursor, a limit; every plant once', async (t) => {
    const store = await fresh(t)
    const ids = [5n, -3n, 2n ** 63n - 1n, 0n, 17n, -(2n ** 63n), 2n ** 53n + 1n, 2n ** 53n, 8n]
    for (const id of ids) await store.create({ id, name: String(id) })
    const sorted = [...ids].sort((a, b) => (a < b ? -1 : 1))
    t.same((await store.list({ limit: 100 })).map((p) => p.id), sorted)
    t.same((await store.list({ limit: 3 })).map((p) => p.id), sorted.slice(0, 3))
    t.same((await store.list({ after: 0n, limit: 2 })).map((p) => p.id), [5n, 8n])
    t.same(await store.list({ after: 2n ** 63n - 1n, limit: 10 }), [])

    const seen: bigint[] = []
    let after: bigint | undefined
    for (;;) {
      const page = await store.list({ after, limit: 2 })
      if (page.length === 0) break
      seen.push(...page.map((p) => p.id))
      after = page.at(-1)!.id
    }
    t.same(seen, sorted, 'paging with the last id returns every plant once, in order')
  })

  t.test('list: a limit that is no whole count gets an empty page, or rounds up', async (t) => {
    // (The API's limit is validated to 1-1000; an embedding app may call
    // the store itself. SQLite reads LIMIT -1 as no limit at all.)
    const store = await fresh(t)
    for (let id = 1n; id <= 5n; id++) await store.create({ id, name: String(id) })
    for (const limit of [0, -1, -0.5, Number.NaN, Number.NEGATIVE_INFINITY]) {
      t.same(await store.list({ limit }), [], `limit ${limit}`)
      t.same(await store.list({ after: 1n, limit }), [], `limit ${limit}, after a cursor`)
    }
    t.same((await store.list({ limit: 2.5 })).map((plant) => plant.id), [1n, 2n, 3n], 'limit 2.5')
    t.same((await store.list({ after: 1n, limit: 1.01 })).map((plant) => plant.id), [2n, 3n], 'limit 1.01, after a cursor')
    t.same((await store.list({ limit: Number.POSITIVE_INFINITY })).map((plant) => plant.id), [1n, 2n, 3n, 4n, 5n], 'limit Infinity')
    // (From plain JavaScript, which the types do not stop.)
    t.same((await store.list({ limit: 2n as unknown as number })).map((plant) => plant.id), [1n, 2n], 'a bigint limit')
  })

  t.test('listJson, in a store that has it: the page list gives, as its JSON text', async (t) => {
    const store = await fresh(t)
    if (store.listJson === undefined) {
      t.pass('this store has no listJson: its pages are serialized')
      return
    }
    const names = ['Fern', '', '"quoted" \\ back\\slash', 'tab\tline\nfeed\r\b\f', '\u0001\u001f\u007f\u0080', '\u2028\u2029', '\uFEFF\uFFFF', '🌿 e\u0301', '</script>', '{"id":1}', 'x'.repeat(256)]
    const ids = [-(2n ** 63n), -(2n ** 53n) - 1n, -1n, 0n, 1n, 2n ** 53n + 1n, 2n ** 63n - 1n]
    for (const [i, id] of ids.entries()) {
      const name = names[i % names.length]!
      await store.create(i % 3 === 0 ? { id, name } : { id, name, tag: names[(i + 5) % names.length]! })
    }
    for (const [i, name] of names.entries()) await store.create({ id: 1000n + BigInt(i), name: name.slice(0, 64), tag: i % 2 === 0 ? name.slice(0, 64) : undefined })
    const pages = [
      { limit: 100 }, { limit: 3 }, { limit: 1 }, { after: 0n, limit: 4 }, { after: 2n ** 63n - 1n, limit: 10 }, { after: -(2n ** 63n), limit: 1000 },
      { limit: 0 }, { limit: Number.NaN }, { limit: 2.5 }, { after: 1n, limit: Number.POSITIVE_INFINITY }
    ]
    for (const options of pages) {
      const page = await store.list(options)
      const json = await store.listJson(options)
      const parsed = parseExactIds(json.text) as Array<Record<string, unknown>>
      t.same(parsed, page, `${JSON.stringify(options, (_key, value: unknown) => typeof value === 'bigint' ? `${value}n` : value)}`)
      t.same(parsed.filter((plant) => plant.tag === null), [], 'a plant without a tag has no tag member, not a null one')
    }
    t.equal((await store.listJson({ after: 2n ** 63n - 1n, limit: 10 })).text, '[]', 'an empty page is the empty array')
  })

  t.test('delete', async (t) => {
    const store = await fresh(t)
    await store.create({ id: 9n, name: 'Fern' })
    t.equal(await store.delete(9n), true)
    t.equal(await store.delete(9n), false)
    t.equal(await store.get(9n), undefined)
    t.equal(await store.create({ id: 9n, name: 'Rose' }), 'created', 'a deleted id can be used again')
    for (const id of [4n, 12n, 7n]) await store.create({ id, name: 'x' })
    await store.delete(7n)
    t.same((await store.list({ limit: 10 })).map((p) => p.id), [4n, 9n, 12n], 'a deleted plant leaves the list')
    t.same((await store.list({ after: 7n, limit: 10 })).map((p) => p.id), [9n, 12n], 'and a deleted id still works as a cursor')
  })

  t.test('any Unicode text is kept exactly: read back as written, and a replay', async (t) => {
    const store = await fresh(t)
    const names = ['🌿 Fern', 'Ivy\u0001\u001f\u007f', '\uFEFFbom', '\uFFFF\uFFFE', 'e\u0301 combining', 'שלום', '\u2028\u2029', '\\"quoted"', '𝔘𝔫𝔦𝔠𝔬𝔡𝔢'.repeat(8)]
    for (const [i, name] of names.entries()) {
      const plant = { id: BigInt(i), name, tag: name.slice(0, 4) }
      t.equal(await store.create(plant), 'created')
      t.same(await store.get(plant.id), plant, `name ${i} read back as written`)
      t.equal(await store.create({ ...plant }), 'replayed', 'the same text again is a replay')
    }
  })

  t.test('what is stored cannot be changed through a returned object', async (t) => {
    const store = await fresh(t)
    const plant = { id: 10n, name: 'Fern' }
    await store.create(plant)
    plant.name = 'changed'
    const got = (await store.get(10n))!
    got.name = 'changed too'
    t.same(await store.get(10n), { id: 10n, name: 'Fern' })
  })

  // The webhook outbox: the same rules in every store.
  const outbox = (store: PlantStorage): WebhookStorage => {
    if (store.webhooks === undefined) throw new Error('the store keeps no webhook outbox')
    return store.webhooks
  }
  // A store with `subscriptions` subscriptions, then plants 1..`plants` created.
  const withOutbox = async (t: Test, subscriptions: number, plants: bigint) => {
    const store = await fresh(t)
    const webhooks = outbox(store)
    for (let n = 1; n <= subscriptions; n++) await webhooks.subscribe(subscription(n), 10)
    for (let id = 1n; id <= plants; id++) await store.create({ id, name: `p${id}` })
    return { store, webhooks }
  }
  const claimAll = (webhooks: WebhookStorage, now = Date.now() + 1) =>
    webhooks.claim({ now, limit: 1000, perSubscription: 1000, held: {}, leaseUntil: now + 60_000 })

  t.test('webhooks: subscriptions are kept, listed oldest first, bounded, and deleted', async (t) => {
    const webhooks = outbox(await fresh(t))
    t.same(await webhooks.subscriptions(), [])
    t.equal(await webhooks.subscribe(subscription(1), 2), true)
    t.equal(await webhooks.subscribe(subscription(2), 2), true)
    t.equal(await webhooks.subscribe(subscription(3), 2), false, 'not past the limit')
    t.same(await webhooks.subscriptions(), [subscription(1), subscription(2)])
    t.same(await webhooks.subscription(subscription(2).id), subscription(2))
    t.equal(await webhooks.subscription(subscription(3).id), undefined)
    t.equal(await webhooks.unsubscribe(subscription(1).id), true)
    t.equal(await webhooks.unsubscribe(subscription(1).id), false)
    t.same(await webhooks.subscriptions(), [subscription(2)])
  })

  t.test('webhooks: a created plant is one pending delivery per subscription; replays and conflicts none', async (t) => {
    const store = await fresh(t)
    const webhooks = outbox(store)
    await store.create({ id: 1n, name: 'before any subscription' })
    await webhooks.subscribe(subscription(1), 10)
    await webhooks.subscribe(subscription(2), 10)
    const id = 2n ** 63n - 1n
    t.equal(await store.create({ id, name: 'Fern', tag: 'a"b' }), 'created')
    t.equal(await store.create({ id, name: 'Fern', tag: 'a"b' }), 'replayed')
    t.equal(await store.create({ id, name: 'Ivy' }), 'conflict')
    t.equal(await store.create({ id: -(2n ** 63n), name: 'Rose' }), 'created')
    const first = await webhooks.deliveries(subscription(1).id, { limit: 100 })
    t.match(first, [
      { plantId: id, status: 'pending', attempts: 0, nextAttemptAt: Number },
      { plantId: -(2n ** 63n), status: 'pending', attempts: 0 }
    ])
    t.equal(first!.length, 2, 'none for the replay, the conflict, or the plant created before subscribing')
    t.equal((await webhooks.deliveries(subscription(2).id, { limit: 100 }))!.length, 2)
    t.equal(await webhooks.deliveries('sub_' + 'f'.repeat(32), { limit: 100 }), undefined, 'no such subscription')
    const claimed = await claimAll(webhooks)
    t.same(claimed.map(({ payload }) => payload).sort(), [
      `{"id":${id},"name":"Fern","tag":"a\\"b"}`, `{"id":${id},"name":"Fern","tag":"a\\"b"}`,
      '{"id":-9223372036854775808,"name":"Rose"}', '{"id":-9223372036854775808,"name":"Rose"}'
    ].sort(), 'the NewPlant JSON, every digit, no tag when none')
    t.match(claimed[0], { url: subscription(1).url, secret: subscription(1).secret, subscriptionId: subscription(1).id, attempts: 0 })
  })

  t.test('webhooks: pages of deliveries, oldest first', async (t) => {
    const { webhooks } = await withOutbox(t, 1, 5n)
    const all = (await webhooks.deliveries(subscription(1).id, { limit: 100 }))!
    t.same(all.map(({ plantId }) => plantId), [1n, 2n, 3n, 4n, 5n])
    t.ok(all.every((delivery, i) => i === 0 || delivery.seq > all[i - 1]!.seq), 'ascending sequence numbers')
    const page = (await webhooks.deliveries(subscription(1).id, { after: all[1]!.seq, limit: 2 }))!
    t.same(page.map(({ plantId }) => plantId), [3n, 4n])
    // (The same rule as a list of plants: pageSize.)
    for (const limit of [0, -1, Number.NaN]) t.same(await webhooks.deliveries(subscription(1).id, { limit }), [], `limit ${limit}: an empty page`)
    t.equal(await webhooks.deliveries('sub_' + 'f'.repeat(32), { limit: 0 }), undefined, 'limit 0: still no such subscription')
    t.same((await webhooks.deliveries(subscription(1).id, { limit: 2.5 }))!.map(({ plantId }) => plantId), [1n, 2n, 3n], 'limit 2.5')
    t.same((await webhooks.deliveries(subscription(1).id, { limit: Number.POSITIVE_INFINITY }))!.length, 5, 'limit Infinity')
  })

  t.test('webhooks: a claim is held until its lease ends, and takes no more of a subscription than its allowance', async (t) => {
    const { webhooks } = await withOutbox(t, 2, 3n)
    const now = Date.now() + 1
    const first = await webhooks.claim({ now, limit: 10, perSubscription: 3, held: { [subscription(1).id]: 1, [subscription(2).id]: 3 }, leaseUntil: now + 1000 })
    t.same(first.map(({ subscriptionId }) => subscriptionId), [subscription(1).id, subscription(1).id], 'two of the first (one is in flight), none of the one at its allowance')
    const second = await webhooks.claim({ now, limit: 10, perSubscription: 10, held: {}, leaseUntil: now + 1000 })
    t.equal(second.length, 4, 'the claimed ones are not claimed again')
    t.same(await webhooks.claim({ now, limit: 10, perSubscription: 10, held: {}, leaseUntil: now + 1000 }), [])
    const later = await webhooks.claim({ now: now + 1000, limit: 10, perSubscription: 10, held: {}, leaseUntil: now + 2000 })
    t.equal(later.length, 6, 'an expired claim is taken over')
    await webhooks.release(later.map(({ seq }) => seq))
    const again = await claimAll(webhooks, now + 1000)
    t.equal(again.length, 6, 'released claims are due at once')
    await webhooks.release(again.map(({ seq }) => seq))
    const limited = await webhooks.claim({ now: now + 5000, limit: 3, perSubscription: 10, held: {}, leaseUntil: now + 6000 })
    t.equal(limited.length, 3, 'no more than the limit')
  })

  t.test('webhooks: the deliveries due first are claimed first, across subscriptions', async (t) => {
    const { webhooks } = await withOutbox(t, 2, 2n)
    const all = await claimAll(webhooks)
    const now = Date.now()
    // Sub 1's first is due last, sub 2's second first.
    const due = [now + 400, now + 100, now + 300, now + 200]
    await webhooks.record(all.map(({ seq }, i) => ({ seq, delivered: false as const, error: 'x', nextAttemptAt: due[i]! })))
    const order = await webhooks.claim({ now: now + 1000, limit: 2, perSubscription: 10, held: {}, leaseUntil: now + 2000 })
    t.same(order.map(({ seq }) => seq), [all[1]!.seq, all[3]!.seq], 'the two due earliest')
  })

  t.test('webhooks: attempts recorded; delivered is final; the last failure fails it; retry makes it pending', async (t) => {
    const store = await fresh(t)
    const webhooks = outbox(store)
    await webhooks.subscribe(subscription(1), 10)
    await store.create({ id: 1n, name: 'a' })
    await store.create({ id: 2n, name: 'b' })
    const [a, b] = await claimAll(webhooks)
    const now = Date.now()
    await webhooks.record([
      { seq: a!.seq, delivered: false, status: 500, error: 'the receiver answered 500', nextAttemptAt: now + 5000 },
      { seq: b!.seq, delivered: false, error: 'connection refused' }
    ])
    let [da, db] = (await webhooks.deliveries(subscription(1).id, { limit: 10 }))!
    t.same(da, { seq: a!.seq, plantId: 1n, status: 'pending', attempts: 1, lastStatus: 500, lastError: 'the receiver answered 500', nextAttemptAt: now + 5000 })
    t.same(db, { seq: b!.seq, plantId: 2n, status: 'failed', attempts: 1, lastError: 'connection refused' })
    t.same(await claimAll(webhooks, now + 1000), [], 'not due before its time')
    const [again] = await claimAll(webhooks, now + 5000)
    t.equal(again!.attempts, 1)
    await webhooks.record([{ seq: a!.seq, delivered: true, status: 204, at: now + 5001 }])
    await webhooks.record([{ seq: a!.seq, delivered: false, error: 'late', nextAttemptAt: now + 9000 }])
    ;[da] = (await webhooks.deliveries(subscription(1).id, { limit: 10 }))!
    t.same(da, { seq: a!.seq, plantId: 1n, status: 'delivered', attempts: 2, lastStatus: 204, deliveredAt: now + 5001 }, 'delivered stays delivered')
    t.same(await webhooks.retry(subscription(1).id, b!.seq, now + 6000), { seq: b!.seq, plantId: 2n, status: 'pending', attempts: 1, lastError: 'connection refused', nextAttemptAt: now + 6000 })
    t.equal((await claimAll(webhooks, now + 6000)).length, 1, 'a retried delivery is claimed again')
    t.equal(await webhooks.retry(subscription(2).id, b!.seq, now), undefined, 'another subscription\'s delivery is not found')
    t.equal(await webhooks.retry(subscription(1).id, 999_999n, now), undefined)
  })

  t.test('webhooks: the trace context a create is given is kept with its deliveries and claimed with them', async (t) => {
    const { store, webhooks } = await withOutbox(t, 2, 0n)
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'
    await store.create({ id: 1n, name: 'traced' }, traceparent)
    await store.create({ id: 2n, name: 'untraced' })
    const claimed = await claimAll(webhooks)
    t.same(claimed.filter((delivery) => delivery.payload.includes('"traced"')).map((delivery) => delivery.traceparent), [traceparent, traceparent])
    t.same(claimed.filter((delivery) => delivery.payload.includes('untraced')).map((delivery) => 'traceparent' in delivery), [false, false], 'none when not given')
  })

  t.test('webhooks: creates that share a commit keep each its own trace context, or none', async (t) => {
    const { store, webhooks } = await withOutbox(t, 1, 0n)
    const traceparent = (n: number) => `00-0af7651916cd43dd8448eb211c80319${n}-b7ad6b716920333${n}-01`
    // (Made in one turn: the stores that batch writes commit them together.)
    await Promise.all([
      store.create({ id: 1n, name: 'p1' }),
      store.create({ id: 2n, name: 'p2' }, traceparent(2)),
      store.create({ id: 3n, name: 'p3' }),
      store.create({ id: 4n, name: 'p4' }, traceparent(4))
    ])
    const claimed = await claimAll(webhooks)
    const trace = (name: string) => claimed.filter((delivery) => delivery.payload.includes(`"${name}"`)).map((delivery) => delivery.traceparent)
    t.same([trace('p1'), trace('p2'), trace('p3'), trace('p4')], [[undefined], [traceparent(2)], [undefined], [traceparent(4)]])
  })

  t.test('webhooks: the backlog counts pending deliveries and dates the oldest from when it was written', async (t) => {
    const before = Date.now()
    const { store, webhooks } = await withOutbox(t, 2, 0n)
    t.same(await webhooks.backlog(), { pending: 0 }, 'nothing pending: no oldest')
    await store.create({ id: 1n, name: 'a' })
    const written = Date.now()
    await new Promise((resolve) => setTimeout(resolve, 5))
    await store.create({ id: 2n, name: 'b' })
    const backlog = await webhooks.backlog()
    t.equal(backlog.pending, 4)
    t.ok(backlog.oldestCreatedAt! >= before && backlog.oldestCreatedAt! <= written, 'the first create\'s time')
    const claimed = await claimAll(webhooks)
    const now = Date.now()
    await webhooks.record(claimed.map(({ seq }) => ({ seq, delivered: true as const, status: 204, at: now })))
    t.same(await webhooks.backlog(), { pending: 0 }, 'delivered ones are not pending')
  })

  t.test('webhooks: unsubscribing forgets its deliveries and stops them', async (t) => {
    const store = await fresh(t)
    const webhooks = outbox(store)
    await webhooks.subscribe(subscription(1), 10)
    await webhooks.subscribe(subscription(2), 10)
    await store.create({ id: 1n, name: 'a' })
    await webhooks.unsubscribe(subscription(1).id)
    const claimed = await claimAll(webhooks)
    t.same(claimed.map(({ subscriptionId }) => subscriptionId), [subscription(2).id])
    t.equal(await webhooks.deliveries(subscription(1).id, { limit: 10 }), undefined)
    await store.create({ id: 2n, name: 'b' })
    t.equal((await webhooks.deliveries(subscription(2).id, { limit: 10 }))!.length, 2)
  })
}
