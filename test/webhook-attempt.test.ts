// One webhook attempt's HTTP exchange (lib/webhooks/attempt.ts) against
// raw servers: what it keeps of an answer, what it reads of one, and how
// it is cut. The dispatcher's own tests cover the attempts it makes.
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { Socket } from 'node:net'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { Agent } from 'undici'
import { post } from '../lib/webhooks/attempt.ts'
import { until } from './helper.ts'

interface Raw {
  url: URL
  /** Every connection made to it, and what each received. */
  connections: Array<{ socket: Socket, received: string, closed: boolean }>
}

// A server that answers each request with `answer(n)` bytes (n counts the
// requests), written raw so that a test can send what Node's server never would.
async function raw (t: Test, answer: (n: number, socket: Socket) => void): Promise<Raw> {
  const self: Raw = { url: new URL('http://127.0.0.1/'), connections: [] }
  let requests = 0
  const server = createServer((socket) => {
    const connection = { socket, received: '', closed: false }
    self.connections.push(connection)
    socket.on('error', () => {})
    socket.on('close', () => { connection.closed = true })
    let answered = 0
    socket.on('data', (chunk) => {
      connection.received += chunk
      // Each request here ends with its 2-byte body, '{}'.
      const complete = connection.received.split('\r\n\r\n{}').length - 1
      while (answered < complete) {
        answered++
        answer(++requests, socket)
      }
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  self.url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook?x=1`)
  t.teardown(() => {
    for (const { socket } of self.connections) socket.destroy()
    server.close()
  })
  return self
}

function agent (t: Test): Agent {
  const agent = new Agent({ connections: 4, headersTimeout: 5000, bodyTimeout: 5000 })
  t.teardown(() => agent.close())
  return agent
}

const send = (a: Agent, url: URL) => post(a, url, { 'content-type': 'application/json' }, '{}')

// (undici may open a second connection for a request sent as the first
// one's answer ends; what matters is that none is closed.)
const closed = (server: Raw) => server.connections.filter((connection) => connection.closed).length

t.test('the status of an answer, its path and query sent as given; the connection kept for the next', async (t) => {
  const server = await raw(t, (_n, socket) => socket.write('HTTP/1.1 204 No Content\r\n\r\n'))
  const a = agent(t)
  for (let i = 0; i < 5; i++) t.equal(await send(a, server.url).status, 204)
  t.match(server.connections[0]!.received, /^POST \/hook\?x=1 HTTP\/1\.1\r\n/)
  t.ok(server.connections.length <= 2, `connections reused (${server.connections.length} for 5 requests)`)
  t.equal(closed(server), 0, 'none closed')
})

t.test('interim 1xx answers are passed over for the final one', async (t) => {
  const server = await raw(t, (_n, socket) => socket.write('HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\nHTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n'))
  t.equal(await send(agent(t), server.url).status, 202)
})

t.test('an answer of 64 KiB is read whole and the connection reused; one byte more cuts it, the status kept', async (t) => {
  const LIMIT = 64 * 1024
  const server = await raw(t, (n, socket) => {
    const length = n === 3 ? LIMIT + 1 : LIMIT
    socket.write(`HTTP/1.1 ${n === 3 ? 500 : 200} OK\r\ncontent-length: ${length}\r\n\r\n${'x'.repeat(length)}`)
  })
  const a = agent(t)
  t.equal(await send(a, server.url).status, 200)
  t.equal(await send(a, server.url).status, 200)
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(closed(server), 0, 'answers within the limit leave their connections open')
  t.equal(await send(a, server.url).status, 500, 'the status of the answer that was cut')
  await until(() => closed(server) === 1, 'the connection of the answer past the limit closed')
  t.pass('the connection of the answer past the limit was closed')
})

t.test('an endless answer is cut once past the limit', async (t) => {
  const server = await raw(t, (_n, socket) => {
    socket.write('HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n')
    const chunk = `${(16 * 1024).toString(16)}\r\n${'y'.repeat(16 * 1024)}\r\n`
    const timer = setInterval(() => socket.write(chunk), 1)
    socket.on('close', () => clearInterval(timer))
  })
  t.equal(await send(agent(t), server.url).status, 200)
  await once(server.connections[0]!.socket, 'close')
  t.pass('its connection was closed')
})

t.test('cut before the request starts: it rejects with the reason and nothing is sent', async (t) => {
  const server = await raw(t, (_n, socket) => socket.write('HTTP/1.1 204 No Content\r\n\r\n'))
  const attempt = send(agent(t), server.url)
  attempt.abort(new Error('stopping'))
  await t.rejects(attempt.status, { message: 'stopping' })
  t.notMatch(server.connections.map(({ received }) => received).join(''), /POST/, 'no request reached the server')
})

t.test('cut while waiting for the answer: it rejects with the reason; cut during the body, the status stands', async (t) => {
  const server = await raw(t, (n, socket) => {
    if (n === 2) socket.write('HTTP/1.1 201 Created\r\ncontent-length: 100\r\n\r\npartial')
  })
  const a = agent(t)
  const waiting = send(a, server.url)
  await new Promise((resolve) => setTimeout(resolve, 50))
  waiting.abort(new Error('out of time'))
  await t.rejects(waiting.status, { message: 'out of time' })
  const midBody = send(a, server.url)
  await new Promise((resolve) => setTimeout(resolve, 50))
  midBody.abort(new Error('out of time'))
  t.equal(await midBody.status, 201)
})

t.test('a connection refused or a malformed answer rejects with the reason', async (t) => {
  const closed = createServer()
  closed.listen(0, '127.0.0.1')
  await once(closed, 'listening')
  const port = (closed.address() as AddressInfo).port
  closed.close()
  await t.rejects(send(agent(t), new URL(`http://127.0.0.1:${port}/`)).status, { code: 'ECONNREFUSED' })
  const garbage = await raw(t, (_n, socket) => socket.end('NOT HTTP AT ALL\r\n\r\n'))
  await t.rejects(send(agent(t), garbage.url).status, { name: 'HTTPParserError' })
})

t.test('a status outside HTTP\'s range (under 100, or past 599) is passed on as it came, for the dispatcher to refuse', async (t) => {
  for (const status of ['099', '000', '999']) {
    const server = await raw(t, (_n, socket) => socket.write(`HTTP/1.1 ${status} Odd\r\ncontent-length: 0\r\n\r\n`))
    t.equal(await send(agent(t), server.url).status, Number(status), status)
  }
})

t.test('an invalid request (a header value with a newline) rejects, never throws', async (t) => {
  const server = await raw(t, (_n, socket) => socket.write('HTTP/1.1 204 No Content\r\n\r\n'))
  const attempt = post(agent(t), server.url, { 'x-bad': 'a\r\nb' }, '{}')
  await t.rejects(attempt.status)
})
