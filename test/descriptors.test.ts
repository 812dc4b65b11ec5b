// Running out of file descriptors never ends the process (finding 1: 1100
// unfinished connections under `ulimit -n 1024` used to make it exit 1).
// Below the ceiling, connections past it are refused with a 503; with the
// ceiling set too high, accept() itself fails (EMFILE), and the process
// still answers the connections it has and recovers when the flood stops.
import { request, Agent } from 'node:http'
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { join } from 'node:path'
import { setTimeout } from 'node:timers/promises'
import t from 'tap'
import type { Test } from 'tap'
import { contractProblems } from './contract.ts'
import { start } from './server-process.ts'

const TOKEN = 'fd-token'
const FLOOD = 1100

// A client that keeps one connection open, as a load balancer would.
function keptAlive (t: Test, url: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const { port } = new URL(url)
  return () => new Promise<number | string>((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', agent }, (res) => {
      res.resume()
      res.on('end', () => resolve(res.statusCode!))
    })
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
    req.setTimeout(5000, () => req.destroy(new Error('timeout')))
    req.end()
  })
}

async function flood (t: Test, url: string) {
  const { port } = new URL(url)
  const sockets: Socket[] = []
  const refusals: string[] = []
  let closed = 0
  for (let i = 0; i < FLOOD; i++) {
    const socket = connect(Number(port), '127.0.0.1')
    let answer = ''
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => { answer += chunk })
    socket.on('error', () => {})
    socket.on('close', () => {
      closed++
      if (answer) refusals.push(answer)
    })
    // An unfinished request: the headers never end.
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n')
    sockets.push(socket)
    if (i % 100 === 99) await setTimeout(20)
  }
  t.teardown(() => { for (const socket of sockets) socket.destroy() })
  await setTimeout(1500)
  return { sockets, refusals, closed: () => closed }
}

async function alive (pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

t.test('under ulimit -n 1024: 832 connections held, the rest refused with a 503, and it recovers', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: TOKEN, LOG_LEVEL: 'warn', HEADERS_TIMEOUT: '20000' }, { descriptors: 1024 })
  const bystander = keptAlive(t, server.url)
  t.equal(await bystander(), 200, 'a kept-alive client before the flood')
  const { sockets, refusals, closed } = await flood(t, server.url)
  t.ok(await alive(server.pid), 'the server is alive')
  const held = sockets.filter((socket) => !socket.destroyed && socket.readyState === 'open').length
  t.comment(`${held} connections held, ${closed()} closed by the server, ${refusals.length} of them with an answer`)
  t.ok(held >= 800 && held <= 832, `the ceiling holds (${held} held)`)
  t.ok(refusals.length > 0, 'connections past the ceiling were answered')
  for (const answer of new Set(refusals.map((text) => text.split('\r\n')[0]))) t.equal(answer, 'HTTP/1.1 503 Service Unavailable')
  const body = refusals[0]!.slice(refusals[0]!.indexOf('\r\n\r\n') + 4)
  t.same(contractProblems(undefined, 503, body), [], 'an Error body')
  t.match(refusals[0], /\r\nretry-after: 2\r\n/)
  t.equal(await bystander(), 200, 'the kept-alive client is still answered during the flood')
  for (const socket of sockets) socket.destroy()
  await setTimeout(500)
  t.equal((await fetch(`${server.url}/healthz`)).status, 200, 'a new client is served once the flood stops')
  t.equal(await server.stop(), 0, 'and it stops cleanly')
})

t.test('under ulimit -n 1024 with the ceiling set too high: descriptors run out, the process lives on', async (t) => {
  const server = await start(t, {
    PLANT_STORE_TOKENS: TOKEN,
    LOG_LEVEL: 'warn',
    HEADERS_TIMEOUT: '20000',
    MAX_CONNECTIONS: '5000',
    // The memory sampler runs, and must not die of EMFILE.
    MAX_RSS_MB: '100000',
    DATABASE_URL: `file:${join(t.testdir(), 'plants.db')}`
  }, { descriptors: 1024 })
  const bystander = keptAlive(t, server.url)
  t.equal(await bystander(), 200)
  const { sockets } = await flood(t, server.url)
  await setTimeout(1500) // a few samples of memory while no descriptor is free
  t.ok(await alive(server.pid), 'the server is alive')
  t.equal(await bystander(), 200, 'the kept-alive client is still answered')
  for (const socket of sockets) socket.destroy()
  await setTimeout(500)
  const res = await fetch(`${server.url}/plants`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{"id":1,"name":"after"}' })
  t.equal(res.status, 200, 'and creates again once the flood stops')
  t.equal(await server.stop(), 0)
  t.notMatch(server.stdout(), /uncaught|EMFILE.*at /i, 'no uncaught error in the log')
})
