// A webhook receiver for the benchmark: counts deliveries, answers 204.
// GET /count says how many arrived.
import { createServer } from 'node:http'
import { announce } from './spec-schemas.ts'

let received = 0
const server = createServer((req, res) => {
  if (req.method === 'GET') return res.end(String(received))
  req.resume().on('end', () => {
    received++
    res.writeHead(204).end()
  })
})
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => announce(Number(process.env.PORT)))
