// A hostile HTTP/1.1 client on a raw socket (node:net): it sends exactly
// the bytes a test writes, reads (or does not read) what comes back, and
// tells how and when the server ended the connection.
import { connect } from 'node:net'
import type { Socket } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Test } from 'tap'
import { contractProblems } from './contract.ts'

export interface Answer {
  status: number
  /** The status line, e.g. `HTTP/1.1 408 Request Timeout`. */
  statusLine: string
  /** Header names in lower case. */
  headers: Record<string, string>
  body: string
}

export interface Parsed {
  /** The complete answers, in order (1xx answers included). */
  answers: Answer[]
  /** An answer whose head came but whose body is short: how much of it. */
  partial?: { head: Answer, expected: number, received: number }
}

// Statuses that never carry a body (RFC 9110 §6.4.1).
const bodiless = (status: number) => status < 200 || status === 204 || status === 304

/** The answers of an HTTP/1.1 exchange, framed by Content-Length. */
export function parseAnswers (raw: string): Parsed {
  const answers: Answer[] = []
  let at = 0
  while (raw.startsWith('HTTP/', at)) {
    const end = raw.indexOf('\r\n\r\n', at)
    if (end === -1) break
    const [statusLine = '', ...lines] = raw.slice(at, end).split('\r\n')
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    const status = Number(statusLine.split(' ')[1])
    const length = bodiless(status) ? 0 : Number(headers['content-length'] ?? 0)
    const head = { status, statusLine, headers, body: '' }
    const available = raw.length - (end + 4)
    if (available < length) return { answers, partial: { head, expected: length, received: available } }
    // The text is kept one character per byte (latin1); bodies are UTF-8.
    head.body = Buffer.from(raw.slice(end + 4, end + 4 + length), 'latin1').toString('utf8')
    answers.push(head)
    at = end + 4 + length
  }
  return { answers }
}

export interface Closing {
  /** Milliseconds from the connect to the end (FIN) or the close, whichever came first. */
  after: number
  /** The server half-closed (FIN) before the socket closed: no reset. */
  fin: boolean
  /** The socket error, if it ended in one (a reset: ECONNRESET, EPIPE). */
  error?: string
}

export interface RawClient {
  socket: Socket
  /** When the socket was created. */
  started: number
  /** Everything received so far, one character per byte. */
  received: () => string
  /** Bytes received so far. */
  bytes: () => number
  parsed: () => Parsed
  /** Milliseconds from the connect to the FIN, once it came. */
  finAfter: () => number | undefined
  /** Resolves when the server ended the connection (FIN) or it closed. */
  ended: Promise<Closing>
  /** Resolves when the socket is closed for good. */
  closed: Promise<Closing>
  /** Waits until `count` complete answers (1xx not counted) came, or `ms` passed: the answers. */
  answersWithin: (count: number, ms: number) => Promise<Answer[]>
  write: (data: string | Buffer) => boolean
}

export interface OpenOptions {
  allowHalfOpen?: boolean
  /** Never reads: nothing is taken from the kernel until `socket.resume()`. */
  paused?: boolean
}

/** A raw connection to the server at `url`, destroyed when the test ends. */
export function open (t: Test, url: string, { allowHalfOpen = false, paused = false }: OpenOptions = {}): RawClient {
  const socket = connect({ port: Number(new URL(url).port), host: '127.0.0.1', allowHalfOpen })
  // Paused before it connects, the socket does not even start reading.
  if (paused) socket.pause()
  const started = Date.now()
  const chunks: string[] = []
  let size = 0
  let text: string | undefined
  let finAfter: number | undefined
  let error: string | undefined
  socket.setEncoding('latin1')
  socket.on('data', (chunk: string) => {
    chunks.push(chunk)
    size += chunk.length
    text = undefined
  })
  socket.on('error', (err: NodeJS.ErrnoException) => { error ??= err.code ?? err.message })
  const received = () => (text ??= chunks.join(''))
  const ended = new Promise<Closing>((resolve) => {
    socket.once('end', () => {
      finAfter = Date.now() - started
      resolve({ after: finAfter, fin: true })
    })
    socket.once('close', () => resolve({ after: Date.now() - started, fin: finAfter !== undefined, error }))
  })
  const closed = new Promise<Closing>((resolve) => {
    socket.once('close', () => resolve({ after: Date.now() - started, fin: finAfter !== undefined, error }))
  })
  t.teardown(() => { socket.destroy() })
  const final = (answers: Answer[]) => answers.filter((answer) => answer.status >= 200)
  return {
    socket,
    started,
    received,
    bytes: () => size,
    parsed: () => parseAnswers(received()),
    finAfter: () => finAfter,
    ended,
    closed,
    async answersWithin (count, ms) {
      const deadline = Date.now() + ms
      while (final(parseAnswers(received()).answers).length < count && Date.now() < deadline && !socket.destroyed) await sleep(10)
      return final(parseAnswers(received()).answers)
    },
    write: (data) => socket.destroyed ? false : socket.write(data)
  }
}

/** Checks an answer is the spec's `Error` with the status, and a request id. */
export function assertError (t: Test, answer: Answer | undefined, status: number, message?: RegExp): void {
  t.ok(answer, `an answer ${status} came`)
  if (!answer) return
  t.equal(answer.status, status, `status ${status} (${answer.statusLine})`)
  t.match(answer.headers['x-request-id'], /^[\w.:-]{1,128}$/, 'an x-request-id header')
  t.match(answer.headers['content-type'], /^application\/json/, 'a JSON body')
  t.same(contractProblems(undefined, status, answer.body), [], `the body is the spec's Error: ${answer.body.slice(0, 200)}`)
  if (message) {
    let parsed: { message?: string } = {}
    try { parsed = JSON.parse(answer.body) } catch {}
    t.match(parsed.message, message, 'the message says what is wrong')
  }
}

/** Log lines of the server at level error (50) or above. */
export function errorLines (stdout: string): string[] {
  return stdout.split('\n').filter((line) => {
    try { return (JSON.parse(line) as { level?: number }).level! >= 50 } catch { return false }
  })
}
