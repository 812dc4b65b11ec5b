// File descriptors run out, on purpose: a server process under a low
// `ulimit -n` meets a flood of connections that never finish their
// headers. It must stay alive, keep serving the connections it already
// has, refuse the rest politely while it can, and serve new clients again
// once the flood is gone, without a restart.
import { Agent, request } from 'node:http'
import { readdirSync } from 'node:fs'
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { Test } from 'tap'
import { contractProblems } from './contract.ts'
import { alive } from './processes.ts'
import { errorLines, open, parseAnswers } from './raw-http.ts'
import { start } from './server-process.ts'

const TOKEN = 'descriptor-token'
const DESCRIPTORS = 1024
/** lib/http-edge.ts: what the server keeps for everything but clients. */
const RESERVED = 192
const FLOOD = 1100

const ENV = {
  PLANT_STORE_TOKENS: TOKEN,
  LOG_LEVEL: 'warn',
  // The flood's unfinished requests must outlive the test, not time out.
  HEADERS_TIMEOUT: '30000',
  REQUEST_TIMEOUT: '30000',
  MAX_EVENT_LOOP_DELAY: '0'
}

// How many file descriptors a process has open.
function descriptors (pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length
}

interface Reply { status: number | string, reused: boolean, body: string }

// A client with one kept-alive connection, as a load balancer's would be:
// each call goes over the same socket while the server keeps it.
function bystander (t: Test, url: string) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())
  const { port } = new URL(url)
  return (method = 'GET', path = '/healthz', body?: string) => new Promise<Reply>((resolve) => {
    const headers: Record<string, string> = path.startsWith('/plants') ? { authorization: `Bearer ${TOKEN}` } : {}
    if (body !== undefined) headers['content-type'] = 'application/json'
    const req = request({ host: '127.0.0.1', port, method, path, agent, headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode!, reused: req.reusedSocket, body: text }))
    })
    req.on('error', (err: NodeJS.ErrnoException) => resolve({ status: err.code ?? err.message, reused: req.reusedSocket, body: '' }))
    req.setTimeout(5000, () => req.destroy(new Error('no answer within 5 s')))
    req.end(body)
  })
}

interface Flood {
  sockets: Socket[]
  /** Sockets the server still holds open, having answered nothing. */
  held: () => number
  /** What the server sent to the sockets it refused, one string each. */
  answered: () => string[]
  /** Sockets the server closed without a byte. */
  closedSilently: () => number
}

// FLOOD connections, each with an unfinished request: the headers never end.
async function flood (t: Test, url: string): Promise<Flood> {
  const port = Number(new URL(url).port)
  const sockets: Socket[] = []
  const answered: string[] = []
  let closedSilently = 0
  let mine = false
  t.teardown(() => {
    mine = true
    for (const socket of sockets) socket.destroy()
  })
  for (let i = 0; i < FLOOD; i++) {
    const socket = connect(port, '127.0.0.1')
    let received = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => { received += chunk })
    socket.on('error', () => {})
    socket.on('close', () => {
      if (mine) return
      if (received) answered.push(received)
      else closedSilently++
    })
    socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n')
    sockets.push(socket)
    if (i % 100 === 99) await sleep(20)
  }
  // Until the server has taken, refused or dropped each of them: the count
  // of closed ones stays the same for a while.
  let settled = -1
  let since = Date.now()
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
    const now = answered.length + closedSilently
    if (now !== settled) {
      settled = now
      since = Date.now()
    } else if (Date.now() - since >= 1000) {
      break
    }
  }
  return {
    sockets,
    held: () => sockets.filter((socket) => !socket.destroyed && socket.readyState === 'open' && socket.bytesRead === 0).length,
    answered: () => answered,
    closedSilently: () => closedSilently
  }
}

function endFlood (flood: Flood): void {
  for (const socket of flood.sockets) socket.destroy()
}

// A new connection is served within `ms`: polled with fresh sockets.
async function servedAgain (t: Test, url: string, ms: number): Promise<number> {
  const started = Date.now()
  while (Date.now() - started < ms) {
    const client = open(t, url)
    client.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    const answer = (await client.answersWithin(1, 1000))[0]
    client.socket.destroy()
    if (answer?.status === 200) return Date.now() - started
    await sleep(100)
  }
  return -1
}

t.test(`under ulimit -n ${DESCRIPTORS}: the derived ceiling holds, the rest are refused with a 503, and it recovers`, async (t) => {
  const server = await start(t, ENV, { descriptors: DESCRIPTORS })
  const ceiling = DESCRIPTORS - RESERVED
  const first = bystander(t, server.url)
  t.equal((await first()).status, 200, 'a kept-alive client is served before the flood')

  const crowd = await flood(t, server.url)
  t.ok(alive(server.pid), 'the server process is alive during the flood')
  const held = crowd.held()
  const refused = crowd.answered()
  t.comment(`${FLOOD} connections: ${held} held, ${refused.length} refused with an answer, ${crowd.closedSilently()} closed without one; ${descriptors(server.pid)} descriptors in use`)
  // The bystander and the start-up poll hold a connection or two of the ceiling.
  t.ok(held <= ceiling && held >= ceiling - 10, `at most ${ceiling} connections held (${held})`)
  t.equal(held + refused.length + crowd.closedSilently(), FLOOD, 'every other connection was refused')
  t.ok(refused.length > 0, 'connections past the ceiling were answered')
  for (const [i, text] of refused.entries()) {
    const { answers } = parseAnswers(text)
    const answer = answers[0]
    const problems = [
      answers.length === 1 ? '' : `${answers.length} answers`,
      answer?.statusLine === 'HTTP/1.1 503 Service Unavailable' ? '' : `status line ${answer?.statusLine}`,
      answer?.headers['retry-after'] === '2' ? '' : `retry-after ${answer?.headers['retry-after']}`,
      /^[\w.:-]{1,128}$/.test(answer?.headers['x-request-id'] ?? '') ? '' : 'no x-request-id',
      answer?.headers.connection === 'close' ? '' : 'no connection: close',
      ...contractProblems(undefined, 503, answer?.body ?? '')
    ].filter(Boolean)
    // One assertion for the lot, and the first refusal in full.
    if (problems.length > 0 || i === refused.length - 1) {
      t.same(problems, [], `each refusal is a 503 Error with retry-after and a request id (${i + 1} checked): ${refused[i]!.slice(0, 400)}`)
      if (problems.length > 0) break
    }
  }
  t.match(JSON.parse(parseAnswers(refused[0] ?? '').answers[0]?.body ?? '{}').message, new RegExp(`limit of ${ceiling} connections`))
  const ids = refused.map((text) => parseAnswers(text).answers[0]?.headers['x-request-id'])
  t.equal(new Set(ids).size, ids.length, `each of the ${ids.length} refusals names a request of its own`)

  const during = await first()
  t.equal(during.status, 200, 'the kept-alive client is still served during the flood')
  t.ok(during.reused, 'over the connection it already had')
  // The held connections are live ones: one that finishes its request is served.
  const waiting = crowd.sockets.find((socket) => !socket.destroyed && socket.bytesRead === 0)!
  let answer = ''
  waiting.on('data', (chunk: string) => { answer += chunk })
  waiting.write('\r\n')
  for (let i = 0; i < 300 && !answer.includes('\r\n\r\n'); i++) await sleep(10)
  t.match(answer, /^HTTP\/1\.1 200 OK\r\n/, 'a held connection that finishes its headers is answered')

  endFlood(crowd)
  const after = await servedAgain(t, server.url, 5000)
  t.ok(after >= 0, `a new client is served once the flood is gone (after ${after} ms)`)
  t.ok(alive(server.pid), 'without a restart')
  t.same(errorLines(server.stdout()), [], 'nothing logged at level error')
  t.equal(await server.stop(), 0, 'and it stops cleanly')
})

t.test(`under ulimit -n ${DESCRIPTORS} with the ceiling set too high: accept() fails with EMFILE, the process lives on`, async (t) => {
  const server = await start(t, {
    ...ENV,
    MAX_CONNECTIONS: '5000',
    // The memory sampler runs (it reads /proc, which needs a descriptor).
    MAX_RSS_MB: '100000',
    DATABASE_URL: `file:${join(t.testdir(), 'plants.db')}`
  }, { descriptors: DESCRIPTORS })
  const first = bystander(t, server.url)
  t.equal((await first()).status, 200, 'a kept-alive client is served before the flood')
  t.equal((await first('POST', '/plants', '{"id":1,"name":"before"}')).status, 200, 'and can create')
  // The store opens its read connection on the first read: made during the
  // flood, with no descriptor free, that read would be a 503 (and /readyz
  // too) until a descriptor is free again.
  t.equal((await first('GET', '/plants/1')).status, 200, 'and read')

  const crowd = await flood(t, server.url)
  // A few samples of memory while no descriptor is free.
  await sleep(1500)
  t.ok(alive(server.pid), 'the server process is alive during the flood')
  t.comment(`${FLOOD} connections: ${crowd.held()} held, ${crowd.answered().length} answered, ${crowd.closedSilently()} closed without an answer`)
  const used = descriptors(server.pid)
  t.ok(used >= DESCRIPTORS - 16, `the descriptors ran out: ${used} of ${DESCRIPTORS} in use`)
  t.ok(crowd.held() < FLOOD && crowd.closedSilently() > 0, `connections past them were closed (EMFILE on accept): ${crowd.held()} held`)
  t.equal(crowd.answered().length, 0, 'none was refused with a 503: the ceiling is far away')

  const during = await first()
  t.equal(during.status, 200, 'the kept-alive client is still served during the flood')
  t.ok(during.reused, 'over the connection it already had')
  const ready = await first('GET', '/readyz')
  t.equal(ready.status, 200, `ready: running out of descriptors is not overload (${ready.body})`)
  const read = await first('GET', '/plants/1')
  t.equal(read.status, 200, `it reads (${read.body})`)
  const write = await first('POST', '/plants', '{"id":2,"name":"during"}')
  t.equal(write.status, 200, `and writes (${write.body})`)

  endFlood(crowd)
  const after = await servedAgain(t, server.url, 5000)
  t.ok(after >= 0, `a new client is served once the flood is gone (after ${after} ms)`)
  t.equal((await first('POST', '/plants', '{"id":3,"name":"after"}')).status, 200, 'and the store takes creates again')
  const readBack = await fetch(`${server.url}/plants/2`, { headers: { authorization: `Bearer ${TOKEN}` } })
  t.equal(readBack.status, 200, `the create made during the flood is there (${await readBack.text()})`)
  t.ok(alive(server.pid), 'without a restart')
  t.notMatch(server.stdout() + server.stderr(), /uncaught|unhandled/i, 'no uncaught error')
  t.equal(await server.stop(), 0, 'and it stops cleanly')
})
