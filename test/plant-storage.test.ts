// "The same plant", the one definition every store calls: no tag, whether
// a request left it out (undefined) or a row holds NULL, differs from the
// empty tag.
import t from 'tap'
import { outcomeOver, plantOf } from '../lib/stores/plant-storage.ts'

t.test('a row with a NULL tag, a request without one: the same plant', async (t) => {
  t.equal(outcomeOver({ name: 'Fern', tag: null }, { name: 'Fern' }), 'replayed')
  t.equal(outcomeOver({ name: 'Fern', tag: null }, { name: 'Fern', tag: undefined }), 'replayed')
  t.equal(outcomeOver({ name: 'Fern' }, { name: 'Fern' }), 'replayed')
})

t.test('the empty tag is a tag', async (t) => {
  t.equal(outcomeOver({ name: 'Fern', tag: null }, { name: 'Fern', tag: '' }), 'conflict')
  t.equal(outcomeOver({ name: 'Fern', tag: '' }, { name: 'Fern' }), 'conflict')
  t.equal(outcomeOver({ name: 'Fern', tag: '' }, { name: 'Fern', tag: '' }), 'replayed')
})

t.test('another name or tag is a conflict', async (t) => {
  t.equal(outcomeOver({ name: 'Fern', tag: 'a' }, { name: 'Ivy', tag: 'a' }), 'conflict')
  t.equal(outcomeOver({ name: 'Fern', tag: 'a' }, { name: 'Fern', tag: 'b' }), 'conflict')
})

t.test('a stored plant has no tag property when it has no tag', async (t) => {
  t.same(plantOf(1n, 'Fern', null), { id: 1n, name: 'Fern' })
  t.notOk('tag' in plantOf(1n, 'Fern', null))
  t.notOk('tag' in plantOf(1n, 'Fern', undefined))
  t.same(plantOf(1n, 'Fern', ''), { id: 1n, name: 'Fern', tag: '' })
})
