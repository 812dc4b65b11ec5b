// The edge's backstop for an answer that never moves (http-edge.ts,
// dropStalledConnections): a connection whose answer has been under way
// with no traffic either way past the idle time is dropped; one whose
// answer trickles, or that waits kept alive between requests, is not.
// On a plain node:http server, with an idle time of a fraction of a second.
import { createServer } from 'node:http'
import type { Server, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { once } from 'node:events'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { Test } from 'tap'
import Fastify from 'fastify'
import { DEFAULT_EDGE_LIMITS, dropStalledConnections, edgeServerOptions } from '../lib/http-edge.ts'
import { open } from './raw-http.ts'

const IDLE_MS = 400
// The connections are looked at every IDLE_MS / 6; the rest is room for a loaded machine.
const SLACK = 1500

async function serve (t: Test, answer: (res: ServerResponse) => void): Promise<{ url: string, server: Server }> {
  const server = createServer({ keepAliveTimeout: 30_000 }, (_req, res) => answer(res))
  dropStalledConnections(server, IDLE_MS)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    server.closeAllConnections()
    server.close()
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

t.test('an answer that never comes: the connection is dropped after the idle time', async (t) => {
  const held: ServerResponse[] = []
  const { url } = await serve(t, (res) => { held.push(res) })
  const client = open(t, url)
  client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
  const end = await client.ended
  t.ok(end.after >= IDLE_MS, `not before the idle time (${end.after} ms)`)
  t.ok(end.after <= IDLE_MS + SLACK, `dropped after ${end.after} ms (idle time ${IDLE_MS} ms)`)
  t.equal(held.length, 1, 'the request reached the handler')
})

t.test('an answer under way that stops moving is dropped; one that keeps moving is not', async (t) => {
  const { url } = await serve(t, (res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    // Four parts, one each half idle time, then silence.
    let parts = 0
    const tick = setInterval(() => {
      res.write('part\n')
      if (++parts === 4) clearInterval(tick)
    }, IDLE_MS / 2)
    res.once('close', () => clearInterval(tick))
  })
  const client = open(t, url)
  client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
  const end = await client.ended
  // The last part came after 4 × IDLE_MS / 2: the answer moved until then.
  t.ok(end.after >= 2 * IDLE_MS + IDLE_MS, `not while the answer moved (${end.after} ms)`)
  t.ok(end.after <= 3 * IDLE_MS + SLACK, `dropped ${end.after} ms after the request`)
  t.equal(client.received().split('part\n').length - 1, 4, 'every part arrived')
})

t.test('a kept-alive connection between requests is the keep-alive timeout\'s, not dropped for idling', async (t) => {
  const { url } = await serve(t, (res) => res.end('ok'))
  const client = open(t, url)
  client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
  t.equal((await client.answersWithin(1, 5000))[0]?.status, 200)
  await sleep(3 * IDLE_MS)
  client.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
  const answers = await client.answersWithin(2, 5000)
  t.equal(answers.length, 2, `a second answer on the same connection after ${3 * IDLE_MS} ms idle`)
})

t.test('while the server closes, a silent or half-sent connection is dropped after the idle time, and the close ends', async (t) => {
  // (Node's close stops its header and request timeout checks.)
  const { url, server } = await serve(t, (res) => res.end('ok'))
  const silent = open(t, url)
  const halfSent = open(t, url)
  halfSent.write('GET / HT')
  await sleep(100)
  const closed = new Promise<number>((resolve) => server.close(() => resolve(Date.now())))
  const began = Date.now()
  const ends = await Promise.all([silent.ended, halfSent.ended])
  t.ok(ends.every(({ after }) => after <= 100 + IDLE_MS + SLACK), `both dropped (${ends.map(({ after }) => after).join(', ')} ms)`)
  t.ok(await closed - began <= IDLE_MS + SLACK, 'and the server closed')
})

t.test('a step of the wall clock drops nothing: idle time is the monotonic clock\'s', async (t) => {
  const { url } = await serve(t, (res) => { setTimeout(() => res.end('ok'), IDLE_MS * 3 / 4) })
  const wallClock = Date.now
  t.teardown(() => { Date.now = wallClock })
  const answer = fetch(url)
  await sleep(IDLE_MS / 4)
  Date.now = () => wallClock() + 3_600_000
  const res = await answer
  t.equal(res.status, 200, 'answered, though the wall clock jumped an hour meanwhile')
})

t.test('the edge sets no socket timeout of Node\'s: a request arms no timer for it', async (t) => {
  // (Node's would be armed by every request and rearmed by every read and write.)
  const app = Fastify(edgeServerOptions({ ...DEFAULT_EDGE_LIMITS, maxConnections: 100 }))
  t.teardown(() => app.close())
  t.equal(app.server.timeout, 0)
})
