// One behaviour for every PlantStorage: each backend's test file runs this.
import type { Test } from 'tap'
import type { PlantStorage } from '../lib/plugin.ts'

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
}
