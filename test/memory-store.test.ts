import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { MemoryStore } from '../lib/plugin.ts'
import { cpuTime, medianRatio } from './cpu-time.ts'
import { storeSuite } from './store-suite.ts'

storeSuite(t, async () => new MemoryStore())

t.test('a create costs about the same among 100,000 plants as among 5,000 (CPU time, interleaved, median)', async (t) => {
  // The ids were once a sorted array: an id among those stored moved every
  // one above it, so that a create among 100,000 plants cost about 15x one
  // among 5,000. No absolute time: the two are compared with each other in one run.
  const BATCH = 5_000
  // A store of `stored` plants with the even ids, then BATCH creates of odd
  // ids spread among them in a fixed shuffled order: their CPU time.
  const cpu = async (stored: number) => {
    const store = new MemoryStore()
    for (let i = 0; i < stored; i++) await store.create({ id: BigInt(2 * i), name: 'x' })
    const step = Math.floor(stored / BATCH)
    const ids = Array.from({ length: BATCH }, (_, i) => BigInt(2 * i * step + 1))
    for (let i = BATCH - 1, seed = 1; i > 0; i--) {
      seed = (seed * 48271) % 2147483647
      const j = seed % (i + 1);
      [ids[i], ids[j]] = [ids[j]!, ids[i]!]
    }
    const time = await cpuTime(async () => {
      for (const id of ids) await store.create({ id, name: 'x' })
    })
    const page = await store.list({ after: ids[0]! - 2n, limit: 3 })
    t.same(page.map((plant) => plant.id), [ids[0]! - 1n, ids[0], ids[0]! + 1n], 'kept in order')
    return time
  }
  await cpu(5_000)
  await cpu(100_000) // warm both up
  const ratio = await medianRatio(5, () => cpu(5_000), () => cpu(100_000))
  t.comment(`CPU time of ${BATCH} creates among 100,000 plants / among 5,000, median of 5 rounds: ${ratio.toFixed(2)}`)
  t.ok(ratio < 4, `within 4x (${ratio.toFixed(2)})`)
})

t.test('memory: full past maxRecords plants, as a disk would be; replays, conflicts and deletes still work', async (t) => {
  const store = new MemoryStore({ maxRecords: 3 })
  for (const id of [1n, 2n, 3n]) t.equal(await store.create({ id, name: `p${id}` }), 'created')
  await t.rejects(store.create({ id: 4n, name: 'p4' }), { code: 'PLANT_STORE_UNAVAILABLE', statusCode: 503, message: /\(full\)/ })
  t.equal(await store.get(4n), undefined, 'the refused create left nothing')
  t.equal(await store.create({ id: 1n, name: 'p1' }), 'replayed', 'a replay needs no room')
  t.equal(await store.create({ id: 2n, name: 'other' }), 'conflict', 'nor does a conflict')
  t.equal(await store.delete(3n), true)
  t.equal(await store.create({ id: 4n, name: 'p4' }), 'created', 'a delete makes room')
  t.same((await store.list({ limit: 10 })).map((plant) => plant.id), [1n, 2n, 4n])
})

t.test('memory: webhook delivery records count toward maxRecords', async (t) => {
  const store = new MemoryStore({ maxRecords: 5 })
  const subscription = { id: `sub_${'0'.repeat(32)}`, url: 'https://example.com/hook', secret: 'whsec_x', createdAt: new Date(0).toISOString() }
  t.equal(await store.webhooks.subscribe(subscription, 10), true)
  t.equal(await store.create({ id: 1n, name: 'a' }), 'created', 'a plant and its delivery: 2 records')
  t.equal(await store.create({ id: 2n, name: 'b' }), 'created', '4 records')
  await t.rejects(store.create({ id: 3n, name: 'c' }), { code: 'PLANT_STORE_UNAVAILABLE', statusCode: 503, message: /\(full\)/ }, 'a third would make 6')
  t.equal((await store.webhooks.deliveries(subscription.id, { limit: 10 }))!.length, 2, 'no delivery for the refused create')
  await store.webhooks.unsubscribe(subscription.id)
  t.equal(await store.create({ id: 3n, name: 'c' }), 'created', 'the subscription\'s records gone: room again')
})

t.test('memory: by default the store is full before the heap is, with the largest records (a 128 MB heap)', async (t) => {
  // Creates of the largest plants, each with a delivery, until refused: a
  // store bounded by a fixed count, or not at all, ends the process (out
  // of memory) instead.
  const script = `
    const { MemoryStore } = await import(${JSON.stringify(new URL('../lib/stores/memory-store.ts', import.meta.url).href)})
    const store = new MemoryStore()
    await store.webhooks.subscribe({ id: 'sub_' + '0'.repeat(32), url: 'https://example.com/hook', secret: 'whsec_x', createdAt: '1970-01-01T00:00:00.000Z' }, 10)
    for (let i = 0n; ; i++) {
      try {
        await store.create({ id: 9007199254740993n + i, name: 'é'.repeat(250) + String(i).padStart(6, '0'), tag: '🌿'.repeat(32) })
      } catch (err) {
        console.log(JSON.stringify({ created: Number(i), statusCode: err.statusCode, message: err.message }))
        break
      }
    }`
  const { stdout } = await promisify(execFile)(process.execPath, ['--max-old-space-size=128', '--input-type=module', '-e', script], { timeout: 120_000 })
  const { created, statusCode, message } = JSON.parse(stdout)
  t.equal(statusCode, 503)
  t.match(message, /\(full\)/)
  t.ok(created > 5000, `${created} creates (a plant and a delivery each) before it was full`)
})
