// The service without a server: its store goes in through the constructor.
import t from 'tap'
import { PlantService } from '../service/plant-service.ts'
import { MemoryStore } from '../lib/plugin.ts'
import { createOperationResolver } from '../lib/operations.ts'
import { loadSpec } from '../lib/spec.ts'
import { JsonText } from '../lib/json-text.ts'
import type { ListOptions, StoredPlant } from '../lib/stores/plant-storage.ts'

const request = (body: { id: bigint, name: string, tag?: string }) => ({ body, params: {}, query: {} })

t.test('the read operations', async (t) => {
  const store = new MemoryStore()
  const service = new PlantService(store)
  for (const id of [3n, 1n, 2n]) await store.create({ id, name: `p${id}` })
  t.same(await service.getPlant({ body: undefined, params: { id: 2n }, query: {} }), { id: 2n, name: 'p2' })
  await t.rejects(service.getPlant({ body: undefined, params: { id: 9n }, query: {} }), { statusCode: 404, message: 'No plant has id 9' })
  t.same(await service.listPlants({ body: undefined, params: {}, query: { after: 1n, limit: 1 } }), [{ id: 2n, name: 'p2' }])
  t.equal(await service.deletePlant({ body: undefined, params: { id: 3n }, query: {} }), undefined)
  await t.rejects(service.deletePlant({ body: undefined, params: { id: 3n }, query: {} }), { statusCode: 404, code: 'PLANT_STORE_NOT_FOUND' })
})

t.test('listPlants answers with the page as JSON text when the store writes it', async (t) => {
  const asked: ListOptions[] = []
  const store = Object.assign(new MemoryStore(), {
    async listJson (options: ListOptions) {
      asked.push(options)
      return new JsonText<StoredPlant[]>('[{"id":1,"name":"a"}]')
    }
  })
  const page = await new PlantService(store).listPlants({ body: undefined, params: {}, query: { after: 0n, limit: 5 } })
  t.ok(page instanceof JsonText)
  t.equal((page as JsonText).text, '[{"id":1,"name":"a"}]')
  t.same(asked, [{ after: 0n, limit: 5 }])
})

t.test('createPlant stores the plant and answers the Plant', async (t) => {
  const store = new MemoryStore()
  const service = new PlantService(store)
  t.same(await service.createPlant(request({ id: 1n, name: 'Fern', tag: 'green' })), { name: 'Fern', tag: 'green' })
  t.same(await store.get(1n), { id: 1n, name: 'Fern', tag: 'green' })
  t.same(await service.createPlant(request({ id: 1n, name: 'Fern', tag: 'green' })), { name: 'Fern', tag: 'green' }, 'a replay')
  await t.rejects(service.createPlant(request({ id: 1n, name: 'Rose' })), { statusCode: 409, code: 'PLANT_STORE_CONFLICT' })
})

t.test('only the spec\'s fields are stored', async (t) => {
  const store = new MemoryStore()
  const service = new PlantService(store)
  await service.createPlant(request({ id: 2n, name: 'Ivy', extra: true } as never))
  t.same(await store.get(2n), { id: 2n, name: 'Ivy' })
})

t.test('start-up refuses a service that lacks an operation of the spec', async (t) => {
  const spec = await loadSpec()
  const incomplete = { getHealth () {}, getReadiness () {}, getMetrics () {}, createPlant () {}, listPlants () {}, getPlant () {} }
  t.throws(() => createOperationResolver(spec, incomplete), { code: 'PLANT_STORE_MISSING_OPERATION', message: /operation "deletePlant"/ })
  const resolve = createOperationResolver(spec, new PlantService(new MemoryStore()))
  t.type(resolve('createPlant').handler, 'function')
})
