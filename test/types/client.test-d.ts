// The published types of the typed client (tsd).
import { expectError, expectType } from 'tsd'
import { createPlantStoreClient } from 'plant-store/client'

const client = createPlantStoreClient({ baseUrl: 'http://127.0.0.1:3000/api', token: 'a-token' })

const created = await client.POST('/plants', { body: { id: 9007199254740993n, name: 'Fern' } })
expectType<string | undefined>(created.data?.name)
const read = await client.GET('/plants/{id}', { params: { path: { id: 1n } } })
expectType<bigint | undefined>(read.data?.id)

// Bodies, paths and parameters are the spec's.
expectError(client.POST('/plants', { body: { id: 'one', name: 2 } }))
expectError(client.GET('/nowhere'))
expectError(client.GET('/plants', { params: { query: { limit: 'ten' } } }))

// An id may go out as a number too (exact up to 2^53); it comes back a bigint.
expectType<bigint | undefined>((await client.GET('/plants/{id}', { params: { path: { id: 5 } } })).data?.id)
await client.POST('/plants', { body: { id: 5, name: 'Ivy' } })
await client.GET('/plants', { params: { query: { after: 5, limit: 10 } } })
expectError(client.POST('/plants', { body: { id: '5', name: 'Ivy' } }))
