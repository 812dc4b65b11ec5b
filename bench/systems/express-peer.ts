// The peer a user would otherwise pick: Express 5 with express-openapi-
// validator on the same spec, a bearer check and a Map store.
import express from 'express'
import type { NextFunction, Request, Response } from 'express'
import * as OpenApiValidator from 'express-openapi-validator'
import { fileURLToPath } from 'node:url'
import { SPEC_PATH, announce } from './spec-schemas.ts'

interface Plant { id: number, name: string, tag?: string }
const plants = new Map<number, Plant>()
const TOKEN = process.env.PLANT_STORE_TOKENS ?? ''

const app = express()
app.use(express.json())
app.use((req, res, next) => {
  if (req.headers.authorization !== `Bearer ${TOKEN}`) {
    res.status(401).json({ error: 401, message: 'unauthorized' })
    return
  }
  next()
})
app.use(OpenApiValidator.middleware({ apiSpec: fileURLToPath(SPEC_PATH), validateRequests: true, validateResponses: false, validateSecurity: false }))

app.post('/plants', (req, res) => {
  const { id, name, tag } = req.body as Plant
  const existing = plants.get(id)
  if (existing && (existing.name !== name || existing.tag !== tag)) {
    res.status(409).json({ error: 409, message: 'conflict' })
    return
  }
  if (!existing) plants.set(id, tag === undefined ? { id, name } : { id, name, tag })
  res.json(tag === undefined ? { name } : { name, tag })
})
app.get('/plants/:id', (req, res) => {
  const plant = plants.get(Number(req.params.id))
  if (plant) res.json(plant)
  else res.status(404).json({ error: 404, message: 'not found' })
})
app.get('/plants', (req, res) => {
  const limit = Number(req.query.limit ?? 100)
  const page: Plant[] = []
  for (const plant of plants.values()) {
    if (page.length === limit) break
    page.push(plant)
  }
  res.json(page)
})
app.use((err: { status?: number, message: string }, _req: Request, res: Response, _next: NextFunction) => {
  res.status(err.status ?? 500).json({ error: err.status ?? 500, message: err.message })
})

app.listen(Number(process.env.PORT), '127.0.0.1', () => announce(Number(process.env.PORT)))
