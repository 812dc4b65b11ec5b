// Baseline: bare Fastify routes with the spec's JSON schemas and a Map; no
// auth, no glue, no int64 care, Fastify's default parser and validator.
import Fastify from 'fastify'
import { announce, schemas } from '../systems/spec-schemas.ts'

interface Plant { id: number, name: string, tag?: string }

const plants = new Map<number, Plant>()
const app = Fastify()
app.addHook('onSend', (request, reply, payload, done) => { done(null, payload) })

app.post<{ Body: Plant }>('/plants', {
  schema: { body: schemas.NewPlant, response: { 200: schemas.Plant } }
}, async (request, reply) => {
  const { id, name, tag } = request.body
  const existing = plants.get(id)
  if (existing && (existing.name !== name || existing.tag !== tag)) return reply.code(409).send({ error: 409, message: 'conflict' })
  if (!existing) plants.set(id, tag === undefined ? { id, name } : { id, name, tag })
  return { name, tag }
})

app.get<{ Params: { id: number } }>('/plants/:id', {
  schema: { params: { type: 'object', properties: { id: { type: 'integer' } } }, response: { 200: schemas.StoredPlant } }
}, async (request, reply) => plants.get(request.params.id) ?? reply.code(404).send({ error: 404, message: 'not found' }))

app.get<{ Querystring: { limit: number } }>('/plants', {
  schema: {
    querystring: { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 }, after: { type: 'integer' } } },
    response: { 200: { type: 'array', items: schemas.StoredPlant } }
  }
}, async (request) => {
  const page: Plant[] = []
  for (const plant of plants.values()) {
    if (page.length === request.query.limit) break
    page.push(plant)
  }
  return page
})

await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' })
announce(Number(process.env.PORT))
