import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { MemoryStore } from '../lib/plugin.ts'
import { storeSuite, subscription } from './store-suite.ts'

storeSuite(t, async () => new MemoryStore())

t.test('a create among 100,000 plants moves a tree node\'s entries, not the store\'s', async (t) => {
  // The ids were once a sorted array: an id among those stored moved every
  // one above it, so that a create among 100,000 plants cost about 15x one
  // among 5,000. Counted, not timed: the lengths of the arrays the creates
  // splice (a sorted array's is the store's; a B+ tree's node, 256 at most).
  // An insert that moved entries otherwise than by splice would go unseen.
  const BATCH = 5_000
  // A store of `stored` plants with the even ids, then BATCH creates of odd
  // ids spread among them in a fixed shuffled order: the entries per create.
  const spliced = async (stored: number) => {
    const store = new MemoryStore({ maxRecords: 1_000_000 })
    for (let i = 0; i < stored; i++) await store.create({ id: BigInt(2 * i), name: 'x' })
    const step = Math.floor(stored / BATCH)
    const ids = Array.from({ length: BATCH }, (_, i) => BigInt(2 * i * step + 1))
    for (let i = BATCH - 1, seed = 1; i > 0; i--) {
      seed = (seed * 48271) % 2147483647
      const j = seed % (i + 1);
      [ids[i], ids[j]] = [ids[j]!, ids[i]!]
    }
    const splice = Array.prototype.splice
    let entries = 0
    let largest = 0
    Array.prototype.splice = function (this: unknown[], ...args: unknown[]) { // eslint-disable-line no-extend-native
      entries += this.length
      largest = Math.max(largest, this.length)
      return Reflect.apply(splice, this, args)
    } as typeof splice
    try {
      for (const id of ids) await store.create({ id, name: 'x' })
    } finally {
      Array.prototype.splice = splice // eslint-disable-line no-extend-native
    }
    const page = await store.list({ after: ids[0]! - 2n, limit: 3 })
    t.same(page.map((plant) => plant.id), [ids[0]! - 1n, ids[0], ids[0]! + 1n], 'kept in order')
    return { perCreate: entries / BATCH, largest }
  }
  const among5k = await spliced(5_000)
  const among100k = await spliced(100_000)
  t.comment(`entries spliced per create: ${among5k.perCreate.toFixed(1)} among 5,000, ${among100k.perCreate.toFixed(1)} among 100,000`)
  t.ok(among100k.largest <= 256, `no array longer than a node (${among100k.largest})`)
  // A tree's height grows as log n: 20x the plants, about 2x the entries
  // (a sorted array with splice: the store's length at every create).
  t.ok(among5k.perCreate > 0, 'the creates splice (a store that does not is not what this test counts)')
  t.ok(among100k.perCreate < 4 * among5k.perCreate, 'not growing as the store does')
})

// A create refused as the store being full.
const FULL = { code: 'PLANT_STORE_UNAVAILABLE', statusCode: 503, message: /\(full\)/ }

t.test('memory: full past maxRecords plants, as a disk would be; replays, conflicts and deletes still work', async (t) => {
  const store = new MemoryStore({ maxRecords: 3 })
  for (const id of [1n, 2n, 3n]) t.equal(await store.create({ id, name: `p${id}` }), 'created')
  await t.rejects(store.create({ id: 4n, name: 'p4' }), FULL)
  t.equal(await store.get(4n), undefined, 'the refused create left nothing')
  t.equal(await store.create({ id: 1n, name: 'p1' }), 'replayed', 'a replay needs no room')
  t.equal(await store.create({ id: 2n, name: 'other' }), 'conflict', 'nor does a conflict')
  t.equal(await store.delete(3n), true)
  t.equal(await store.create({ id: 4n, name: 'p4' }), 'created', 'a delete makes room')
  t.same((await store.list({ limit: 10 })).map((plant) => plant.id), [1n, 2n, 4n])
})

t.test('memory: webhook delivery records count toward maxRecords', async (t) => {
  const store = new MemoryStore({ maxRecords: 5 })
  t.equal(await store.webhooks.subscribe(subscription(1), 10), true)
  t.equal(await store.create({ id: 1n, name: 'a' }), 'created', 'a plant and its delivery: 2 records')
  t.equal(await store.create({ id: 2n, name: 'b' }), 'created', '4 records')
  await t.rejects(store.create({ id: 3n, name: 'c' }), FULL, 'a third would make 6')
  t.equal((await store.webhooks.deliveries(subscription(1).id, { limit: 10 }))!.length, 2, 'no delivery for the refused create')
  await store.webhooks.unsubscribe(subscription(1).id)
  t.equal(await store.create({ id: 3n, name: 'c' }), 'created', 'the subscription\'s records gone: room again')
})

t.test('memory: the default bound holds the largest records in some 250 MB of heap', async (t) => {
  // The largest records: 100 subscriptions (the most there may be), plants
  // of the longest two-byte name and tag, their deliveries failed with the
  // longest two-byte error and a trace context; creates until the store
  // is full. Without the bound, or with a larger one, the child runs out
  // of its heap or past the figure the README gives.
  const script = `
    const { MemoryStore } = await import(${JSON.stringify(new URL('../lib/stores/memory-store.ts', import.meta.url).href)})
    const store = new MemoryStore()
    for (let s = 0; s < 100; s++) {
      await store.webhooks.subscribe({ id: 'sub_' + String(s).padStart(32, '0'), url: 'https://example.com/hook', secret: 'whsec_x', createdAt: '1970-01-01T00:00:00.000Z' }, 100)
    }
    globalThis.gc()
    const before = process.memoryUsage().heapUsed
    const traceparent = '00-' + 'a'.repeat(32) + '-' + 'b'.repeat(16) + '-01'
    let refusal
    for (let i = 0n; refusal === undefined; i++) {
      await store.create({ id: 9007199254740993n + i, name: 'é'.repeat(250) + String(i).padStart(6, '0'), tag: '🌿'.repeat(32) }, traceparent)
        .catch((err) => { refusal = { created: Number(i), statusCode: err.statusCode, message: err.message } })
    }
    const now = Date.now()
    const claimed = await store.webhooks.claim({ now: now + 1, limit: 1e6, perSubscription: 1e6, held: {}, leaseUntil: now + 1e6 })
    // (Each error a string of its own, as each attempt's is.)
    const codes = new Uint16Array(1024).fill(0xe9)
    const error = (i) => {
      codes[0] = 0x100 + (i % 0xd000)
      codes[1] = 0x100 + Math.floor(i / 0xd000)
      return String.fromCharCode.apply(null, codes)
    }
    await store.webhooks.record(claimed.map(({ seq }, i) => ({ seq, delivered: false, status: 599, error: error(i), nextAttemptAt: now + 1e6 })))
    globalThis.gc()
    console.log(JSON.stringify({ ...refusal, deliveries: claimed.length, heapMb: (process.memoryUsage().heapUsed - before) / 2 ** 20 }))`
  const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--max-old-space-size=512', '--input-type=module', '-e', script], { timeout: 120_000 })
  const { created, statusCode, message, deliveries, heapMb } = JSON.parse(stdout)
  t.equal(statusCode, 503)
  t.match(message, /\(full\)/)
  t.ok(created + deliveries <= 100_000 && created + deliveries > 100_000 - 101, `full at 100,000 records, less than a create's: ${created} plants, ${deliveries} deliveries`)
  t.ok(heapMb < 250, `${heapMb.toFixed(0)} MB of heap`)
})

t.test('memory: a maxRecords that is no whole number of at least 1 is refused, not taken as no bound', async (t) => {
  for (const maxRecords of [0, -1, 1.5, Number.NaN, Infinity]) {
    t.throws(() => new MemoryStore({ maxRecords }), { code: 'PLANT_STORE_MEMORY_MAX_RECORDS' }, String(maxRecords))
  }
  t.doesNotThrow(() => new MemoryStore({ maxRecords: 1 }))
})
