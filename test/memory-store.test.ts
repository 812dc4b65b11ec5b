import t from 'tap'
import { MemoryStore } from '../lib/plugin.ts'
import { storeSuite } from './store-suite.ts'

storeSuite(t, async () => new MemoryStore())

t.test('a limit that is no whole count: an empty page, or one ending past its value', async (t) => {
  // (The API's limit is validated to 1-1000; an embedding app may call the store itself.)
  const store = new MemoryStore()
  for (let id = 1n; id <= 5n; id++) await store.create({ id, name: String(id) })
  for (const limit of [0, -1, Number.NaN]) t.same(await store.list({ limit }), [], `limit ${limit}`)
  t.same((await store.list({ limit: 2.5 })).map((plant) => plant.id), [1n, 2n, 3n], 'limit 2.5')
})

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
    const start = process.cpuUsage()
    for (const id of ids) await store.create({ id, name: 'x' })
    const { user, system } = process.cpuUsage(start)
    const page = await store.list({ after: ids[0]! - 2n, limit: 3 })
    t.same(page.map((plant) => plant.id), [ids[0]! - 1n, ids[0], ids[0]! + 1n], 'kept in order')
    return user + system
  }
  await cpu(5_000)
  await cpu(100_000) // warm both up
  const ratios: number[] = []
  for (let round = 0; round < 5; round++) {
    const few = await cpu(5_000)
    ratios.push(await cpu(100_000) / few)
  }
  const median = ratios.toSorted((x, y) => x - y)[2]!
  t.comment(`CPU time of ${BATCH} creates among 100,000 plants / among 5,000, median of 5 rounds: ${median.toFixed(2)}`)
  t.ok(median < 4, `within 4x (${median.toFixed(2)})`)
})
