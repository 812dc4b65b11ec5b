// The published types of the plugin, as a host app meets them (tsd).
import Fastify from 'fastify'
import { expectAssignable, expectError, expectNotAssignable, expectType } from 'tsd'
import plantStore, { JsonText, MemoryStore } from 'plant-store'
import { Registry } from 'prom-client'
import type { OpenMetricsContentType } from 'prom-client'
import type { CreateOutcome, PlantStorage, PlantStoreOptions, StoredPlant } from 'plant-store'

const app = Fastify()
await app.register(plantStore, { prefix: '/api', tokens: ['a-token'], database: 'memory:' })
await app.register(plantStore, { tokens: ['a-token'], database: new MemoryStore(), bodyLimit: 4096, protectDocs: true, notFound: true, maxHeldBytes: 1024 })

// Options are checked, not `any`.
expectError(app.register(plantStore, { tokens: 'one-token' }))
expectError(app.register(plantStore, { tokens: ['t'], bodyLimit: '1mb' }))
expectError(app.register(plantStore, { tokens: ['t'], database: 42 }))
expectAssignable<PlantStoreOptions>({ tokens: ['t'], overload: false, authFailureLimit: { max: 5, timeWindow: 1000 } })
expectNotAssignable<PlantStoreOptions>({ tokens: ['t'], overload: 'sometimes' })

// A host's prom-client registry, in either of its formats.
expectAssignable<PlantStoreOptions>({ tokens: ['t'], metrics: { registry: new Registry() } })
expectAssignable<PlantStoreOptions>({ tokens: ['t'], metrics: { registry: new Registry<OpenMetricsContentType>() } })
expectNotAssignable<PlantStoreOptions>({ tokens: ['t'], metrics: { registry: {} } })

// A storage of the host's own, through the interface.
const storage: PlantStorage = new MemoryStore()
expectType<Promise<CreateOutcome>>(storage.create({ id: 1n, name: 'Fern' }))
expectType<Promise<StoredPlant | undefined>>(storage.get(1n))
expectError(storage.create({ id: 1, name: 'Fern' }))
expectType<bigint>((await storage.list({ limit: 10 }))[0]!.id)

// A storage that writes its pages as JSON text: the text of plants, only.
const jsonPages: PlantStorage = Object.assign(new MemoryStore(), { listJson: async () => new JsonText<StoredPlant[]>('[]') })
expectType<Promise<JsonText<StoredPlant[]>> | undefined>(jsonPages.listJson?.({ limit: 10 }))
expectNotAssignable<PlantStorage>(Object.assign(new MemoryStore(), { listJson: async () => '[]' }))
expectNotAssignable<PlantStorage>(Object.assign(new MemoryStore(), { listJson: async () => new JsonText<string>('"a"') }))
expectNotAssignable<PlantStorage>(Object.assign(new MemoryStore(), { listJson: async () => ({ text: '[]' }) }))
