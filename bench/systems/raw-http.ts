// Baseline: node:http parsing and answering the same JSON by hand, a Map.
import { createServer } from 'node:http'
import { announce } from './spec-schemas.ts'

interface Plant { id: number, name: string, tag?: string }
const plants = new Map<number, Plant>()

function send (res: import('node:http').ServerResponse, status: number, body: unknown) {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

createServer((req, res) => {
  const url = req.url ?? '/'
  if (req.method === 'POST' && url === '/plants') {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', (chunk) => { body += chunk })
    req.on('end', () => {
      let plant: Plant
      try {
        plant = JSON.parse(body)
      } catch {
        return send(res, 400, { error: 400, message: 'invalid JSON' })
      }
      if (!Number.isInteger(plant?.id) || typeof plant.name !== 'string') return send(res, 400, { error: 400, message: 'invalid plant' })
      const existing = plants.get(plant.id)
      if (existing && existing.name !== plant.name) return send(res, 409, { error: 409, message: 'conflict' })
      if (!existing) plants.set(plant.id, { id: plant.id, name: plant.name, tag: plant.tag })
      return send(res, 200, { name: plant.name, tag: plant.tag })
    })
    return
  }
  if (req.method === 'GET' && url.startsWith('/plants/')) {
    const plant = plants.get(Number(url.slice('/plants/'.length)))
    return plant ? send(res, 200, plant) : send(res, 404, { error: 404, message: 'not found' })
  }
  if (req.method === 'GET' && url.startsWith('/plants')) {
    const limit = Number(new URL(url, 'http://x').searchParams.get('limit') ?? 100)
    const page: Plant[] = []
    for (const plant of plants.values()) {
      if (page.length === limit) break
      page.push(plant)
    }
    return send(res, 200, page)
  }
  send(res, 404, { error: 404, message: 'not found' })
}).listen(Number(process.env.PORT), '127.0.0.1', () => announce(Number(process.env.PORT)))
