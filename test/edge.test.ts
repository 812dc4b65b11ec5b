// The server's edge as a hostile client meets it, on a real listening
// server over raw sockets: every phase of a connection has a time limit,
// and everything refused before any route is still an `Error` answer with
// a request id. Times are generous upper bounds, never performance targets.
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { setTimeout } from 'node:timers/promises'
import t from 'tap'
import type { Test } from 'tap'
import { contractProblems } from './contract.ts'
import { start } from './server-process.ts'

const TOKEN = 'edge-token'
const LIMITS = { HEADERS_TIMEOUT: '1500', REQUEST_TIMEOUT: '3000', KEEP_ALIVE_TIMEOUT: '1000', WRITE_TIMEOUT: '2000' }

interface Exchange {
  /** Everything the server sent. */
  received: () => string
  /** Resolves when the server closed the connection, with the milliseconds it took. */
  closed: Promise<number>
  socket: Socket
}

function open (t: Test, url: string, { allowHalfOpen = false } = {}): Exchange {
  const socket = connect({ port: Number(new URL(url).port), host: '127.0.0.1', allowHalfOpen })
  const started = Date.now()
  let received = ''
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => { received += chunk })
  socket.on('error', () => {})
  const closed = new Promise<number>((resolve) => {
    socket.on('end', () => resolve(Date.now() - started))
    socket.on('close', () => resolve(Date.now() - started))
  })
  t.teardown(() => { socket.destroy() })
  return { received: () => received, closed, socket }
}

interface Answer { status: number, headers: Record<string, string>, body: string }

// The answers of an HTTP/1.1 exchange, in order (Content-Length framed).
function answers (text: string): Answer[] {
  const found: Answer[] = []
  let rest = text
  while (rest.startsWith('HTTP/1.1 ')) {
    const end = rest.indexOf('\r\n\r\n')
    if (end === -1) break
    const [statusLine, ...lines] = rest.slice(0, end).split('\r\n')
    const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
    const length = Number(headers['content-length'] ?? 0)
    found.push({ status: Number(statusLine!.split(' ')[1]), headers, body: Buffer.from(rest.slice(end + 4), 'latin1').subarray(0, length).toString('utf8') })
    rest = rest.slice(end + 4 + Buffer.from(rest.slice(end + 4), 'latin1').subarray(0, length).toString('latin1').length)
  }
  return found
}

// An Error answer as the spec declares it, with a request id.
function assertError (t: Test, answer: Answer | undefined, status: number, message?: RegExp): void {
  t.ok(answer, `an answer ${status} came`)
  if (!answer) return
  t.equal(answer.status, status)
  t.match(answer.headers['x-request-id'], /^[\w.:-]{1,128}$/, 'with a request id')
  t.match(answer.headers['content-type'], /^application\/json/)
  t.same(contractProblems(undefined, status, answer.body), [], 'an Error body')
  if (message) t.match(JSON.parse(answer.body).message, message)
}

t.test('the edge of a real server', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: TOKEN, LOG_LEVEL: 'warn', ...LIMITS })
  const auth = `Authorization: Bearer ${TOKEN}\r\n`

  t.test('a connection that sends nothing: 408 and closed within the header timeout', async (t) => {
    const silent = open(t, server.url)
    const after = await silent.closed
    t.ok(after < 1500 + 2500, `closed after ${after} ms`)
    assertError(t, answers(silent.received())[0], 408, /headers must arrive within 1.5 seconds/)
  })

  t.test('headers trickled a byte at a time never finish: 408', async (t) => {
    const slow = open(t, server.url)
    const request = 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'a'.repeat(100)
    let sent = 0
    const trickle = setInterval(() => { if (!slow.socket.destroyed) slow.socket.write(request[sent++ % request.length]!) }, 100)
    const after = await slow.closed
    clearInterval(trickle)
    t.ok(after < 1500 + 2500, `closed after ${after} ms, ${sent} bytes sent`)
    assertError(t, answers(slow.received())[0], 408)
  })

  t.test('a body that never finishes: 408 within the request timeout', async (t) => {
    const stuck = open(t, server.url)
    stuck.socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`)
    const after = await stuck.closed
    t.ok(after >= 1500 && after < 3000 + 2500, `closed after ${after} ms`)
    assertError(t, answers(stuck.received())[0], 408)
  })

  t.test('an idle kept-alive connection is closed', async (t) => {
    const idle = open(t, server.url)
    idle.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
    const after = await idle.closed
    t.equal(answers(idle.received())[0]?.status, 200)
    t.ok(after < 1000 + 1000 + 2500, `closed after ${after} ms of keep-alive`)
  })

  t.test('what is refused before any route is an Error with a request id', async (t) => {
    const cases: Array<[string, string, number, RegExp]> = [
      ['no Host', 'GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n', 400, /needs a Host header/],
      ['an unknown Expect', 'GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\n\r\n', 417, /Expect: bogus is not supported/],
      ['a path that is not UTF-8', `GET /plants/%ff HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`, 400, /URL is not valid/],
      ['a 101-digit id', `GET /plants/${'1'.repeat(101)} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`, 400, /^params\/id must be an integer/],
      ['garbage', 'HELLO THERE\r\n\r\n', 400, /not valid HTTP/],
      ['a bad Content-Length', 'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400, /not valid HTTP/],
      ['20 KB of headers', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, /larger than 16384 bytes/],
      ['a 10 KB path', `GET /${'x'.repeat(10_000)} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`, 404, /^No route for GET \/x+…/],
      ['two Host headers', 'GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n', 400, /more than one Host header/],
      ['CONNECT', 'CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n', 400, /CONNECT is not served/],
      ['a gzip body', `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`, 415, /Content-Encoding "gzip"/],
      ['two Content-Type headers', `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`, 400, /more than one Content-Type header/]
    ]
    for (const [what, request, status, message] of cases) {
      const client = open(t, server.url)
      client.socket.write(request)
      await client.closed
      t.test(what, async (t) => assertError(t, answers(client.received())[0], status, message))
    }
  })

  t.test('a bad request pipelined behind a create: the create gets its own answer first', async (t) => {
    for (const [tail, status] of [['GARBAGE\r\n\r\n', 400], [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431]] as const) {
      const body = `{"id":${status},"name":"piped"}`
      const client = open(t, server.url)
      client.socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}${tail}`)
      await client.closed
      const [created, refused] = answers(client.received())
      t.equal(created?.status, 200, 'the create is answered 200: it was stored')
      t.equal(created?.body, '{"name":"piped"}')
      assertError(t, refused, status)
    }
  })

  t.test('Expect: 100-continue: no 100 before authentication, then 100 and the answer', async (t) => {
    const refused = open(t, server.url)
    refused.socket.write('POST /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 25\r\nExpect: 100-continue\r\n\r\n')
    await refused.closed
    t.notMatch(refused.received(), /100 Continue/, 'a client without a token is never asked for its body')
    assertError(t, answers(refused.received())[0], 401)
    for (const [status, headers] of [[415, 'Content-Type: text/plain\r\nContent-Length: 25'], [413, 'Content-Type: application/json\r\nContent-Length: 500000000']] as const) {
      const unwanted = open(t, server.url)
      unwanted.socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\n${auth}${headers}\r\nExpect: 100-continue\r\n\r\n`)
      await unwanted.closed
      t.notMatch(unwanted.received(), /100 Continue/, `nor a body that would be refused with ${status}`)
      assertError(t, answers(unwanted.received())[0], status)
    }

    const welcome = open(t, server.url)
    const body = '{"id":100,"name":"Fern"}'
    welcome.socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n`)
    while (!welcome.received().includes('\r\n\r\n')) await setTimeout(10)
    t.match(welcome.received(), /^HTTP\/1.1 100 Continue\r\n\r\n$/, 'asked for the body once authenticated')
    welcome.socket.write(body)
    await welcome.closed
    t.match(welcome.received(), /HTTP\/1.1 200 OK[\s\S]*\{"name":"Fern"\}$/)
  })

  // Refused before a byte of the body is read: no token, the wrong type,
  // a declared length past the limit.
  for (const [status, headers] of [
    [401, 'Content-Type: application/json\r\n'],
    [415, `${auth}Content-Type: text/plain\r\n`],
    [413, `${auth}Content-Type: application/json\r\n`]
  ] as const) {
    t.test(`an upload of 500 MiB refused with ${status}: the answer is read, the connection closed in stages`, async (t) => {
      const uploader = open(t, server.url, { allowHalfOpen: true })
      uploader.socket.write(`POST /plants HTTP/1.1\r\nHost: x\r\n${headers}Content-Length: 524288000\r\n\r\n`)
      const chunk = Buffer.alloc(64 * 1024, 0x20)
      let written = 0
      let finReceived = false
      uploader.socket.on('end', () => { finReceived = true })
      // It keeps sending whatever comes back, as a careless client would.
      const pump = () => {
        while (!uploader.socket.destroyed && written < 500 * 1024 * 1024) {
          written += chunk.length
          if (!uploader.socket.write(chunk)) return uploader.socket.once('drain', pump)
        }
      }
      pump()
      // The server is gone when a write fails (it destroyed the connection).
      const closedAfter = await new Promise<number>((resolve) => {
        const started = Date.now()
        uploader.socket.on('close', () => resolve(Date.now() - started))
      })
      t.ok(finReceived, 'the server half-closed first (FIN after the answer)')
      const answer = answers(uploader.received())[0]
      assertError(t, answer, status)
      t.equal(answer?.headers.connection, 'close')
      t.ok(closedAfter < 2000 + 2500, `destroyed ${closedAfter} ms later (2 s of lingering)`)
      t.comment(`the client wrote ${(written / 1024 / 1024).toFixed(1)} MiB before the connection was gone`)
      t.ok(written < 200 * 1024 * 1024, 'far less than it declared')
    })
  }

  t.test('DELETE ignores a body of any type or size without reading it', async (t) => {
    for (const [type, size] of [['text/plain', 5], ['application/json', 2_000_000]] as const) {
      await fetch(`${server.url}/plants`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{"id":7,"name":"x"}' })
      const client = open(t, server.url)
      client.socket.write(`DELETE /plants/7 HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: ${type}\r\nContent-Length: ${size}\r\nConnection: close\r\n\r\n${'x'.repeat(Math.min(size, 1000))}`)
      await client.closed
      const answer = answers(client.received())[0]
      t.equal(answer?.status, 204, `${type}, ${size} bytes: 204`)
      t.equal(answer?.headers.connection, 'close')
    }
  })

  t.test('pipelining: 10 requests answered in order; 100 at once drop the connection', async (t) => {
    const polite = open(t, server.url)
    polite.socket.write(Array.from({ length: 10 }, (_, i) => `GET /healthz?n=${i} HTTP/1.1\r\nHost: x\r\nx-request-id: r${i}\r\n\r\n`).join('') + 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
    await polite.closed
    const got = answers(polite.received())
    t.same(got.slice(0, 10).map((answer) => answer.headers['x-request-id']), Array.from({ length: 10 }, (_, i) => `r${i}`))
    const flood = open(t, server.url)
    flood.socket.write(Array.from({ length: 100 }, () => 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n').join(''))
    const after = await Promise.race([flood.closed, setTimeout(5000, -1)])
    t.ok(after >= 0, 'the connection was dropped')
    t.ok(answers(flood.received()).length < 100, `after ${answers(flood.received()).length} of 100 answers`)
  })

  t.test('a client that never reads a large answer loses the connection after the write timeout', async (t) => {
    // Pages of about 2 MB: JSON writes \u0001 in six bytes.
    const name = '\u0001'.repeat(256)
    for (let i = 0; i < 1000; i += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, j) => fetch(`${server.url}/plants`, {
        method: 'POST', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify({ id: 10_000 + i + j, name, tag: name.slice(0, 64) })
      }).then((res) => res.arrayBuffer())))
    }
    const reader = open(t, server.url)
    reader.socket.pause()
    // Several pages, so that the answers outgrow the kernel's buffers.
    reader.socket.write(`GET /plants?limit=1000 HTTP/1.1\r\nHost: x\r\n${auth}\r\n`.repeat(20))
    // A paused socket notices nothing: it reads again once the timeout passed.
    await setTimeout(2000 + 3000)
    reader.socket.resume()
    const after = await Promise.race([reader.closed, setTimeout(5000, -1)])
    t.ok(after > 0, 'the server had closed the connection')
    const got = answers(reader.received()).length
    t.ok(got < 20, `after ${got} of the 20 answers`)
  })
})
