// The HTTP edge of a real server process as a hostile client meets it, over
// raw sockets: each phase of a connection has a time limit, whatever is
// refused before a route is still the spec's `Error` with a request id,
// and a client cannot make the server read, hold or answer more than the
// limits say. Times are generous upper bounds (and lower bounds where the
// server must not act early), never performance targets.
import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { Test } from 'tap'
import { contractProblems } from './contract.ts'
import { alive } from './processes.ts'
import { assertError, errorLines, open } from './raw-http.ts'
import type { RawClient } from './raw-http.ts'
import { start } from './server-process.ts'

const TOKEN = 'hostile-token'
const AUTH = `Authorization: Bearer ${TOKEN}\r\n`
const HEADERS_TIMEOUT = 1500
const REQUEST_TIMEOUT = 3000
const WRITE_TIMEOUT = 2000
// Long enough that no connection in these tests is closed for idling
// unless a test asks for it (the keep-alive test runs its own server).
const KEEP_ALIVE_TIMEOUT = 60_000
/** lib/socket-bounds.ts: how long a closing connection lingers. */
const LINGER_MS = 2000
// Node looks for connections past their deadlines once a second; the rest
// is room for a loaded machine.
const SLACK = 2500
const MiB = 1024 * 1024

const ENV = {
  PLANT_STORE_TOKENS: TOKEN,
  LOG_LEVEL: 'warn',
  HEADERS_TIMEOUT: String(HEADERS_TIMEOUT),
  REQUEST_TIMEOUT: String(REQUEST_TIMEOUT),
  KEEP_ALIVE_TIMEOUT: String(KEEP_ALIVE_TIMEOUT),
  WRITE_TIMEOUT: String(WRITE_TIMEOUT),
  MAX_CONNECTIONS: '200',
  // A stalled test machine must not turn answers under test into 503s.
  MAX_EVENT_LOOP_DELAY: '0'
}

const json = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }

async function create (t: Test, url: string, plant: object): Promise<void> {
  const res = await fetch(`${url}/plants`, { method: 'POST', headers: json, body: JSON.stringify(plant) })
  const body = await res.text()
  if (res.status !== 200) t.fail(`creating ${JSON.stringify(plant).slice(0, 60)} answered ${res.status}: ${body}`)
}

// The bytes of a page of 1000 plants, read by a client that reads.
async function pageSize (url: string): Promise<number> {
  const res = await fetch(`${url}/plants?limit=1000`, { headers: json })
  return (await res.arrayBuffer()).byteLength
}

// The most the kernel may hold of one connection's answers: the server's
// send buffer at its largest (Linux grows it up to tcp_wmem's maximum), and
// the receive buffer of a client that never reads (it stays at its default,
// tcp_rmem's middle value: Linux grows it only as the application reads).
function kernelBuffers (): number {
  const sizes = (file: string, fallback: number[]) => {
    try {
      return readFileSync(`/proc/sys/net/ipv4/${file}`, 'utf8').trim().split(/\s+/).map(Number)
    } catch {
      return fallback
    }
  }
  return sizes('tcp_wmem', [4096, 16384, 4 * MiB])[2]! + sizes('tcp_rmem', [4096, 128 * 1024, 6 * MiB])[1]!
}

// The one answer a connection got, and that it got nothing else.
function onlyAnswer (t: Test, client: RawClient) {
  const { answers, partial } = client.parsed()
  t.equal(answers.length, 1, 'exactly one answer')
  t.notOk(partial, 'and nothing half-sent')
  return answers[0]
}

const server = await start(t, ENV)

// The rules are independent: they run side by side, so that the file takes
// about as long as its slowest rule rather than the sum of their waits.
t.test('the edge of a real server, as a hostile client meets it', { jobs: 8 }, async (t) => {
  t.test('a connection that sends nothing: 408, then closed within the header timeout', async (t) => {
    const silent = open(t, server.url)
    const end = await silent.ended
    t.ok(end.fin, 'closed with a FIN after the answer, not a reset')
    t.ok(end.after >= HEADERS_TIMEOUT - 50, `not before the header timeout (${end.after} ms)`)
    t.ok(end.after <= HEADERS_TIMEOUT + SLACK, `closed ${end.after} ms after connecting (limit ${HEADERS_TIMEOUT} ms)`)
    const answer = onlyAnswer(t, silent)
    assertError(t, answer, 408, /headers must arrive within 1\.5 seconds/)
    t.equal(answer?.headers.connection, 'close')
  })

  t.test('headers trickled a byte every 300 ms never finish: 408 within the header timeout', async (t) => {
    const slow = open(t, server.url)
    const request = `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(1000)}`
    let sent = 0
    const trickle = setInterval(() => { if (slow.write(request[sent]!)) sent++ }, 300)
    const end = await slow.ended
    clearInterval(trickle)
    t.ok(end.fin, 'closed with a FIN after the answer')
    t.ok(end.after >= HEADERS_TIMEOUT - 50 && end.after <= HEADERS_TIMEOUT + SLACK, `closed after ${end.after} ms, ${sent} bytes sent`)
    assertError(t, onlyAnswer(t, slow), 408)
  })

  t.test('an authenticated POST /plants whose body never finishes: 408 within the request timeout', async (t) => {
    const stuck = open(t, server.url)
    stuck.write(`POST /plants HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`)
    const end = await stuck.ended
    t.ok(end.fin, 'closed with a FIN after the answer')
    t.ok(end.after >= REQUEST_TIMEOUT - 50, `not before the request timeout (${end.after} ms)`)
    t.ok(end.after <= REQUEST_TIMEOUT + SLACK, `closed ${end.after} ms after connecting (limit ${REQUEST_TIMEOUT} ms)`)
    const answer = onlyAnswer(t, stuck)
    assertError(t, answer, 408, /all of it within 3 seconds/)
    t.equal(answer?.headers.connection, 'close')
  })

  t.test('an idle kept-alive connection is closed after the keep-alive timeout', async (t) => {
    const KEEP_ALIVE = 1000
    // Node keeps a connection this much longer than the timeout it announces.
    const NODE_BUFFER = 1000
    const quick = await start(t, { ...ENV, KEEP_ALIVE_TIMEOUT: String(KEEP_ALIVE) })
    const idle = open(t, quick.url)
    idle.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
    t.equal((await idle.answersWithin(1, 5000))[0]?.status, 200, 'a first answer')
    // Half the timeout later the connection is still there, and serves.
    await sleep(KEEP_ALIVE / 2)
    idle.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
    const answers = await idle.answersWithin(2, 5000)
    const lastAnswer = Date.now() - idle.started
    t.same(answers.map((answer) => answer.status), [200, 200], 'the same connection served a second request')
    t.match(answers[1]?.headers['keep-alive'], /timeout=1\b/, 'announcing the timeout')
    const end = await idle.ended
    const idled = end.after - lastAnswer
    t.ok(idled >= KEEP_ALIVE - 50, `not closed before the timeout (${idled} ms idle)`)
    t.ok(idled <= KEEP_ALIVE + NODE_BUFFER + SLACK, `closed after ${idled} ms idle (limit ${KEEP_ALIVE} + ${NODE_BUFFER} ms)`)
    t.equal(idle.parsed().answers.length, 2, 'silently: no answer nobody asked for')
  })

  t.test('a kept-alive connection idle past the header timeout gets no 408; its next request has a header timeout of its own', async (t) => {
    const client = open(t, server.url)
    client.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
    t.equal((await client.answersWithin(1, 5000))[0]?.status, 200)
    // Idle for longer than the header timeout, and one more check of Node's.
    await sleep(HEADERS_TIMEOUT + 1500)
    t.equal(client.finAfter(), undefined, 'still open')
    t.equal(client.parsed().answers.length, 1, 'and nothing was sent meanwhile')
    client.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n')
    t.same((await client.answersWithin(2, 5000)).map((answer) => answer.status), [200, 200], 'the next request is served')
    // A third request trickled: the header timeout counts from its start.
    const began = Date.now()
    const request = `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(1000)}`
    let sent = 0
    const trickle = setInterval(() => { if (client.write(request[sent]!)) sent++ }, 300)
    await client.ended
    clearInterval(trickle)
    const took = Date.now() - began
    t.ok(took >= HEADERS_TIMEOUT - 50 && took <= HEADERS_TIMEOUT + SLACK, `408 ${took} ms after its first byte`)
    const answers = client.parsed().answers
    t.equal(answers.length, 3)
    assertError(t, answers[2], 408)
  })

  t.test('HTTP/1.1 without Host: 400 Error with a request id', async (t) => {
    const client = open(t, server.url)
    client.write('GET /healthz HTTP/1.1\r\n\r\n')
    assertError(t, (await client.answersWithin(1, 5000))[0], 400, /needs a Host header/)
    // HTTP/1.0 had no Host: it is served.
    const old = open(t, server.url)
    old.write('GET /healthz HTTP/1.0\r\n\r\n')
    t.equal((await old.answersWithin(1, 5000))[0]?.status, 200, 'HTTP/1.0 without Host is served')
  })

  // RFC 9112 §3.2, the same sentence as for a missing Host: "any request
  // message that contains more than one Host header field line or a Host
  // header field with an invalid field value" MUST be answered 400.
  t.test('two Host header lines, or a Host that is not a host: 400', async (t) => {
    const cases: Array<[string, string]> = [
      ['two Host lines', 'Host: x\r\nHost: y\r\n'],
      ['two Host lines, named in other cases', 'hOST: x\r\nHOST: x\r\n'],
      ['a Host with a space', 'Host: a b\r\n'],
      ['a valid Host with more after it', 'Host: x y\r\n'],
      ['a Host with a path and user info', 'Host: a/b@c\r\n']
    ]
    for (const [what, host] of cases) {
      const client = open(t, server.url)
      client.write(`GET /healthz HTTP/1.1\r\n${host}\r\n`)
      const answer = (await client.answersWithin(1, 5000))[0]
      t.equal(answer?.status, 400, `${what}: 400 (got ${answer?.status})`)
      if (answer?.status === 400) assertError(t, answer, 400)
    }
  })

  t.test('Expect: an unknown one is a 417; 100-continue only once the token passed', async (t) => {
    const bogus = open(t, server.url)
    bogus.write('GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\n\r\n')
    assertError(t, (await bogus.answersWithin(1, 5000))[0], 417, /Expect: bogus is not supported/)

    const body = '{"id":100,"name":"Fern"}'
    const head = (auth: string) => `POST /plants HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length}\r\nExpect: 100-continue\r\n\r\n`

    const stranger = open(t, server.url)
    stranger.write(head(''))
    const refused = (await stranger.answersWithin(1, 5000))[0]
    assertError(t, refused, 401)
    t.match(refused?.headers['www-authenticate'], /^Bearer realm="plant-store"/)
    t.equal(refused?.headers.connection, 'close', 'the connection closes: the body will not be read')
    const end = await stranger.ended
    t.ok(end.fin, `then FIN (${end.after} ms)`)
    t.notMatch(stranger.received(), /100 Continue/, 'a client without a token is never asked for its body')
    t.equal(stranger.parsed().answers.length, 1, 'nothing but the 401')

    const member = open(t, server.url)
    member.write(head(AUTH))
    const deadline = Date.now() + 5000
    while (!member.received().includes('\r\n\r\n') && Date.now() < deadline) await sleep(10)
    await sleep(100) // anything else that would come before the body
    t.equal(member.received(), 'HTTP/1.1 100 Continue\r\n\r\n', 'an authenticated client is asked for its body, and nothing else yet')
    member.write(body)
    const answer = (await member.answersWithin(1, 5000))[0]
    t.equal(answer?.status, 200, 'then the answer once the body came')
    t.same(contractProblems('createPlant', 200, answer?.body ?? ''), [], 'a Plant')
    t.same(JSON.parse(answer?.body ?? '{}'), { name: 'Fern' })
    t.match(answer?.headers['x-request-id'], /^[\w.:-]{1,128}$/)
  })

  // RFC 9110 §10.1.1: a server that sends 100 (Continue) must go on to read
  // the content; lib/http-edge.ts means "a refused client never sends it".
  t.test('Expect: 100-continue is not answered 100 when the request is refused before its body is read', async (t) => {
    const expect = 'Expect: 100-continue\r\n'
    const cases: Array<[string, string, number]> = [
      ['a declared length over the limit', `POST /plants HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nContent-Length: ${500 * MiB}\r\n${expect}\r\n`, 413],
      ['a content type other than JSON', `POST /plants HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: text/plain\r\nContent-Length: 20\r\n${expect}\r\n`, 415],
      ['an unknown route', `POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n${expect}\r\n`, 404],
      ['a method the path does not serve', `PUT /plants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n${expect}\r\n`, 405],
      ['a body to an operation that takes none', `DELETE /plants/424242 HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nContent-Length: 20\r\n${expect}\r\n`, 404]
    ]
    for (const [what, request, status] of cases) {
      const client = open(t, server.url)
      client.write(request)
      const answer = (await client.answersWithin(1, 5000))[0]
      t.notMatch(client.received(), /^HTTP\/1\.1 100 Continue/, `${what}: no 100 Continue before the answer`)
      assertError(t, answer, status)
      t.equal(answer?.headers.connection, 'close', 'and the connection closes: the body will not be read')
    }
  })

  // (Node destroys a CONNECT it has no 'connect' listener for, without a byte.)
  t.test('CONNECT, on a server that is no proxy: an Error answer, not a silent close', async (t) => {
    const client = open(t, server.url)
    client.write('CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')
    await Promise.race([client.ended, sleep(5000)])
    const answer = client.parsed().answers[0]
    t.ok(answer && answer.status >= 400 && answer.status < 500, `a 4xx answer (got ${JSON.stringify(client.received().slice(0, 80))})`)
    if (answer) assertError(t, answer, answer.status)
  })

  t.test('a path that is not UTF-8, and a 101-digit id: 400 naming what is wrong', async (t) => {
    const bad = open(t, server.url)
    bad.write(`GET /plants/%ff HTTP/1.1\r\nHost: x\r\n${AUTH}\r\n`)
    assertError(t, (await bad.answersWithin(1, 5000))[0], 400, /URL is not valid/)

    const long = open(t, server.url)
    long.write(`GET /plants/${'1'.repeat(101)} HTTP/1.1\r\nHost: x\r\n${AUTH}\r\n`)
    const answer = (await long.answersWithin(1, 5000))[0]
    t.not(answer?.status, 414, 'not a 414: the URL is short')
    assertError(t, answer, 400, /^params\/id must be an integer/)
  })

  t.test('a garbage request line: 400; 20 KB of headers: 431', async (t) => {
    const garbage = open(t, server.url)
    garbage.write('HELLO THERE\r\n\r\n')
    await garbage.ended
    assertError(t, onlyAnswer(t, garbage), 400, /not valid HTTP/)

    const big = open(t, server.url)
    big.write(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)
    const end = await big.ended
    t.ok(end.fin, 'answered, then FIN')
    assertError(t, onlyAnswer(t, big), 431, /larger than 16384 bytes/)
  })

  t.test('more malformed HTTP: each an Error with a request id, then closed', async (t) => {
    const cases: Array<[string, string, number]> = [
      ['a Content-Length that is not a number', 'POST /plants HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n', 400],
      ['both Content-Length and Transfer-Encoding', `POST /plants HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400],
      ['two different Content-Lengths', `POST /plants HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{}`, 400],
      ['a header without a colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n', 400],
      ['a control character in a header value', 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n', 400],
      ['an unknown HTTP version', 'GET /healthz HTTP/7.1\r\nHost: x\r\n\r\n', 400],
      ['bad chunked framing', `POST /plants HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`, 400],
      ['a gzip body (no content coding is served)', `POST /plants HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 20\r\n\r\n`, 415],
      ['two Content-Type header lines', `POST /plants HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: 20\r\n\r\n`, 400],
      ['two Content-Type header lines, named in other cases', `POST /plants HTTP/1.1\r\nHost: x\r\n${AUTH}content-type: application/json\r\nCONTENT-TYPE: application/json\r\nContent-Length: 20\r\n\r\n`, 400]
    ]
    for (const [what, request, status] of cases) {
      const client = open(t, server.url)
      client.write(request)
      const end = await Promise.race([client.ended, sleep(5000).then(() => undefined)])
      t.test(what, async (t) => {
        t.ok(end, 'the server closed the connection')
        assertError(t, onlyAnswer(t, client), status)
      })
    }
  })

  // A client that declares 500 MiB, is refused before a byte of it is
  // read, and goes on sending after its answer, as a careless one does.
  async function upload (t: Test, pace: number | undefined, { headers = 'Content-Type: application/json\r\n', status = 401 } = {}) {
    const uploader = open(t, server.url, { allowHalfOpen: true })
    uploader.write(`POST /plants HTTP/1.1\r\nHost: x\r\n${headers}Content-Length: ${500 * MiB}\r\n\r\n`)
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    let written = 0
    let afterAnswer = 0
    const send = () => {
      written += chunk.length
      if (uploader.parsed().answers.length > 0) afterAnswer += chunk.length
      return uploader.socket.write(chunk)
    }
    // As fast as the socket takes it, or one chunk every `pace` ms. At full
    // speed a chunk a turn of the event loop, not a loop of writes: a write
    // that meets the server's reset fails (EPIPE) and Node destroys the
    // socket at once, with what the server answered still unread in the
    // kernel. Between turns the client reads what has come, as any client
    // that polls its socket does.
    const pump = () => {
      if (uploader.socket.destroyed || written >= 500 * MiB) return
      if (send()) setImmediate(pump)
      else uploader.socket.once('drain', pump)
    }
    const paced = pace === undefined ? undefined : setInterval(() => { if (!uploader.socket.destroyed) send() }, pace)
    if (pace === undefined) pump()
    const fin = await uploader.ended
    const closed = await uploader.closed
    clearInterval(paced)
    const { answers, partial } = uploader.parsed()
    assertError(t, answers[0], status)
    t.ok(answers.length === 1 && !partial, 'the complete answer, and only it')
    if (status === 401) t.match(answers[0]?.headers['www-authenticate'], /^Bearer realm="plant-store"/)
    t.equal(answers[0]?.headers.connection, 'close')
    t.comment(`the client wrote ${(written / MiB).toFixed(1)} MiB of the 500 MiB it declared, ${(afterAnswer / MiB).toFixed(1)} MiB of it after the answer; ${fin.fin ? `FIN after ${fin.after} ms` : 'no FIN seen'}, closed after ${closed.after} ms (${closed.error ?? 'no error'})`)
    t.ok(written < 200 * MiB, 'far less than it declared')
    return { fin, closed, afterAnswer }
  }

  t.test('a token-less upload of 500 MiB: the 401 is read, FIN, then destroyed without reading the rest', async (t) => {
    // Sent at a pace, so that the client is sure to see the FIN: the server
    // then reads and drops for LINGER_MS or 1 MiB, whichever comes first.
    const paced = await upload(t, 20)
    t.ok(paced.fin.fin, 'the server half-closed first: FIN after the answer')
    t.ok(paced.afterAnswer > 0, 'while the client still sent')
    const lingered = paced.closed.after - paced.fin.after
    t.ok(lingered <= LINGER_MS + SLACK, `then destroyed ${lingered} ms after the FIN`)
    // At full speed, megabytes wait in the kernel's buffers: the server may
    // read its 1 MiB of them and reset at once, before this client (on a
    // busy machine) has read the FIN. The answer must be read all the same.
    const flooded = await upload(t, undefined)
    t.ok(flooded.closed.after <= LINGER_MS + SLACK, `at full speed: closed ${flooded.closed.after} ms after connecting`)
  })

  t.test('uploads of 500 MiB refused with 415 or 413 are closed the same way', async (t) => {
    for (const [status, headers] of [[415, `${AUTH}Content-Type: text/plain\r\n`], [413, `${AUTH}Content-Type: application/json\r\n`]] as const) {
      const { closed } = await upload(t, undefined, { headers, status })
      t.ok(closed.after <= LINGER_MS + SLACK, `${status}: closed ${closed.after} ms after connecting`)
    }
  })

  // A client matches answers to requests in order: the refusal of a bad
  // request must not arrive in the place of the answer to the one before.
  t.test('a malformed request pipelined behind a create: the create gets its own answer first', async (t) => {
    for (const [tail, status] of [['GARBAGE\r\n\r\n', 400], [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431]] as const) {
      const body = `{"id":${status},"name":"piped"}`
      const client = open(t, server.url)
      client.write(`POST /plants HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}${tail}`)
      const [created, refused] = await client.answersWithin(2, 5000)
      t.equal(created?.status, 200, `${status}: the create is answered 200 (it was stored)`)
      t.equal(created?.body, '{"name":"piped"}')
      assertError(t, refused, status)
    }
  })

  t.test('DELETE ignores a body of any type or size: 204, not 415 or 413, and the connection closes', async (t) => {
    await create(t, server.url, { id: 1, name: 'one' })
    await create(t, server.url, { id: 2, name: 'two' })
    const cases: Array<[string, number, string, number]> = [
      ['text/plain', 1, 'not 415', 5],
      ['application/json', 2, 'not 413', 2_000_000]
    ]
    for (const [type, id, not, size] of cases) {
      const client = open(t, server.url, { allowHalfOpen: true })
      client.write(`DELETE /plants/${id} HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: ${type}\r\nContent-Length: ${size}\r\n\r\n`)
      client.write(Buffer.alloc(size, 0x20))
      const answer = (await client.answersWithin(1, 5000))[0]
      t.equal(answer?.status, 204, `${type}, ${size} bytes: 204, ${not}`)
      t.same(contractProblems('deletePlant', 204, answer?.body ?? 'none'), [], 'no body')
      t.match(answer?.headers['x-request-id'], /^[\w.:-]{1,128}$/)
      t.equal(answer?.headers.connection, 'close', 'the answer says the connection closes')
      const end = await Promise.race([client.ended, sleep(LINGER_MS + SLACK).then(() => undefined)])
      t.ok(end?.fin, `and it does (FIN ${end?.after} ms after connecting), long before the keep-alive timeout`)
      t.equal((await fetch(`${server.url}/plants/${id}`, { headers: json })).status, 404, `plant ${id} is gone`)
    }
  })

  t.test('a client that never reads a large answer loses the connection after the write timeout', async (t) => {
    // The largest page the spec allows: the longest name and tag, in the
    // characters JSON writes longest (\u0001 takes six bytes): about 2 MB.
    const name = '\u0001'.repeat(256)
    const tag = '\u0001'.repeat(64)
    // (Ten at a time: the suite's subtests run in parallel against one
    // server whose connection limit is 200, and others use it too.)
    for (let i = 0; i < 1000; i += 10) {
      await Promise.all(Array.from({ length: 10 }, (_, j) => create(t, server.url, { id: 1_000_000 + i + j, name, tag })))
    }
    const request = `GET /plants?limit=1000 HTTP/1.1\r\nHost: x\r\n${AUTH}\r\n`
    const size = await pageSize(server.url)
    // One such page fits the kernel's socket buffers: Node has then written
    // it all, and the connection is merely idle (until the keep-alive
    // timeout). So the client asks for more pages than those buffers hold,
    // with room to spare, and reads none of them.
    const pages = Math.min(30, Math.ceil(2 * kernelBuffers() / size) + 1)
    t.comment(`a page is ${size} bytes; the kernel may hold ${kernelBuffers()} bytes of a connection: ${pages} pages asked for`)
    const reader = open(t, server.url, { paused: true })
    reader.write(request.repeat(pages))
    // Not a byte read: a paused socket does not even see the FIN. Then it
    // reads what the kernel kept for it.
    await sleep(WRITE_TIMEOUT + 3000)
    t.equal(reader.bytes(), 0, 'nothing was read while waiting')
    reader.socket.resume()
    const end = await Promise.race([reader.ended, sleep(5000).then(() => undefined)])
    t.ok(end, 'the server had closed the connection')
    const { answers } = reader.parsed()
    t.ok(answers.length < pages, `${answers.length} of the ${pages} pages came whole (${reader.bytes()} bytes)`)
    for (const answer of answers) t.equal(answer.status, 200)
    t.ok(alive(server.pid))
  })

  t.test('pipelining: 100 requests in one write drop the connection; 10 are answered in order', async (t) => {
    const flood = open(t, server.url, { paused: true })
    flood.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(100))
    await sleep(1000)
    flood.socket.resume()
    const end = await Promise.race([flood.ended, sleep(5000).then(() => undefined)])
    t.ok(end, 'the connection was dropped')
    const got = flood.parsed().answers.length
    t.ok(got <= 33, `after ${got} of the 100 answers (32 may wait behind one)`)

    const polite = open(t, server.url)
    polite.write(Array.from({ length: 10 }, (_, i) => `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Request-Id: r${i}\r\n\r\n`).join(''))
    const answers = await polite.answersWithin(10, 5000)
    t.same(answers.map((answer) => answer.headers['x-request-id']), Array.from({ length: 10 }, (_, i) => `r${i}`), 'all 10, in order')
    for (const answer of answers) t.same(contractProblems('getHealth', answer.status, answer.body), [], `${answer.status} ${answer.body}`)
    t.same(answers.map((answer) => answer.status), Array(10).fill(200))
  })

  t.test('a 404 for a 10 KB path keeps its message within the spec\'s 1024 characters', async (t) => {
    const client = open(t, server.url)
    client.write(`GET /${'x'.repeat(10_000)} HTTP/1.1\r\nHost: x\r\n${AUTH}\r\n`)
    const answer = (await client.answersWithin(1, 5000))[0]
    assertError(t, answer, 404, /^No route for GET \/x+…/)
    const message = JSON.parse(answer?.body ?? '{}').message as string
    t.ok(message.length <= 1024, `${message.length} characters`)
  })
})

t.test('CORS preflights are bounded like any request: 100 pipelined drop the connection', async (t) => {
  const cors = await start(t, { ...ENV, CORS_ORIGINS: 'https://app.example' })
  const preflight = 'OPTIONS /plants HTTP/1.1\r\nHost: x\r\nOrigin: https://app.example\r\nAccess-Control-Request-Method: POST\r\n\r\n'
  const flood = open(t, cors.url, { paused: true })
  flood.write(preflight.repeat(100))
  await sleep(1000)
  flood.socket.resume()
  const end = await Promise.race([flood.ended, sleep(5000).then(() => undefined)])
  t.ok(end, 'the connection was dropped')
  const answers = flood.parsed().answers
  t.ok(answers.length <= 33, `after ${answers.length} of the 100 answers (32 may wait behind one)`)
  t.ok(answers.length > 0, 'the first were answered')
  for (const answer of answers) {
    t.equal(answer.status, 204)
    t.ok(answer.headers['x-request-id'], 'names its request')
  }
})

t.test('the server lived through it all, logging no error', async (t) => {
  t.ok(alive(server.pid))
  t.equal((await fetch(`${server.url}/healthz`)).status, 200)
  t.same(errorLines(server.stdout()), [], 'no log line at level error or above')
})
