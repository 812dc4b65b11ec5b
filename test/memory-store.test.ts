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
