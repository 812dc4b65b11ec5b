// The typed client (plant-store/client) against a real listening server.
import Fastify from 'fastify'
import t from 'tap'
import type { Test } from 'tap'
import plantStore from '../lib/plugin.ts'
import { createPlantStoreClient } from '../lib/client.ts'

async function serve (t: Test, prefix = '') {
  const app = Fastify()
  // (No overload check: a loaded CI machine stalls test processes.)
  await app.register(plantStore, { prefix, tokens: ['client-token'], database: 'memory:', overload: false })
  const url = await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => app.close())
  return url + prefix
}

t.test('every operation, with int64 ids exact both ways', async (t) => {
  const client = createPlantStoreClient({ baseUrl: await serve(t), token: 'client-token' })

  const created = await client.POST('/plants', { body: { id: 9007199254740993n, name: 'Fern', tag: 'green' } })
  t.equal(created.response.status, 200)
  t.same(created.data, { name: 'Fern', tag: 'green' })
  await client.POST('/plants', { body: { id: -9223372036854775808n, name: 'Moss' } })
  const numeric = await client.POST('/plants', { body: { id: 5, name: 'Ivy' } })
  t.equal(numeric.response.status, 200, 'an id given as a number')

  const got = await client.GET('/plants/{id}', { params: { path: { id: 9007199254740993n } } })
  t.equal(got.data?.id, 9007199254740993n, 'the id comes back as the same bigint')
  t.same(got.data, { id: 9007199254740993n, name: 'Fern', tag: 'green' })

  const page = await client.GET('/plants', { params: { query: { limit: 2 } } })
  t.same(page.data?.map((plant) => plant.id), [-9223372036854775808n, 5n])
  const next = await client.GET('/plants', { params: { query: { after: 5, limit: 2 } } })
  t.same(next.data?.map((plant) => plant.id), [9007199254740993n])
  t.equal(typeof next.data?.[0]?.id, 'bigint', 'small ids are bigints too, as the types say')

  t.equal((await client.GET('/plants/{id}', { params: { path: { id: 5 } } })).data?.id, 5n, 'read with a number, back as a bigint')
  const deleted = await client.DELETE('/plants/{id}', { params: { path: { id: 5n } } })
  t.equal(deleted.response.status, 204)
  const gone = await client.GET('/plants/{id}', { params: { path: { id: 5n } } })
  t.equal(gone.response.status, 404)
  t.same(gone.error, { error: 404, message: 'No plant has id 5' })

  t.same((await client.GET('/healthz')).data, { status: 'ok' })
  t.same((await client.GET('/readyz')).data, { status: 'ok' })
})

t.test('errors arrive typed: conflict, validation, bad token', async (t) => {
  const baseUrl = await serve(t, '/api')
  const client = createPlantStoreClient({ baseUrl, token: 'client-token' })
  await client.POST('/plants', { body: { id: 1n, name: 'Fern' } })
  const conflict = await client.POST('/plants', { body: { id: 1n, name: 'Rose' } })
  t.equal(conflict.response.status, 409)
  t.equal(conflict.error?.error, 409)

  const invalid = await client.POST('/plants', { body: { id: 2n, name: 12 as unknown as string } })
  t.equal(invalid.response.status, 400)
  t.match(invalid.error?.message, /body\/name must be string/)

  const stranger = createPlantStoreClient({ baseUrl, token: 'wrong' })
  const refused = await stranger.GET('/plants')
  t.equal(refused.response.status, 401)
  t.equal(refused.response.headers.get('www-authenticate'), 'Bearer realm="plant-store", error="invalid_token"')
})
