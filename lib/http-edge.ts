// The standalone server's HTTP edge: what happens before a request reaches
// any route. Every phase of a connection has a time limit, the number of
// connections has a ceiling below the file-descriptor limit, and everything
// Node or Fastify refuses on their own (timeouts, oversized headers, bad
// URLs, unknown Expect values, a missing Host) is answered with the spec's
// `Error` body and an x-request-id, then closed in stages. An app that
// embeds the plugin may use these for its own server (README: Embedding).
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { IncomingMessage, Server, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyError, FastifyHttpOptions, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  BadHttpRequestError, BadUrlError, ExpectationFailedError, HeadersTooLargeError, InvalidHostError, MissingHostError,
  RETRY_AFTER_SECONDS, RequestTimeoutError, TooManyConnectionsError, clip
} from './errors.ts'
import { duplicateHeader } from './raw-headers.ts'
import { LINGER_MS, closeInStages, hasUnreadBody } from './socket-bounds.ts'

// (Not `import … from 'node:http'`: the ESM facade of node:http reads every
// export, its lazy WebSocket among them, which loads undici at start-up.)
const { STATUS_CODES } = process.getBuiltinModule('node:http')

export interface EdgeLimits {
  /** Connections open at once; more are answered 503 and closed. */
  maxConnections: number
  /** Milliseconds for the request line and headers to arrive. */
  headersTimeout: number
  /** Milliseconds for the whole request, body included, to arrive. */
  requestTimeout: number
  /** Milliseconds an idle kept-alive connection stays open. */
  keepAliveTimeout: number
}

export const DEFAULT_EDGE_LIMITS = { headersTimeout: 10_000, requestTimeout: 30_000, keepAliveTimeout: 72_000 }

// A connection with a request in progress and no traffic either way for
// this long is dropped: the backstop for an answer a client stopped
// reading (the plugin's write deadline covers the common cases), well past
// any bounded request handling.
const IDLE_TIMEOUT = 60_000
// How often per idle timeout the connections are looked at: a stalled one
// goes within the timeout and two looks (a third of it).
const IDLE_LOOKS = 6

/** Node's default; the request line and headers together may not exceed it. */
const MAX_HEADER_SIZE = 16 * 1024
// How often Node looks for connections past their header or request
// deadline: a stuck request is gone within its timeout plus this.
const CONNECTIONS_CHECK_INTERVAL = 1000
// Descriptors kept for everything but client connections (database files
// and connections, workers, logs) and for refusing connections politely.
const RESERVED_DESCRIPTORS = 192
const MAX_REFUSING = 64
const DEFAULT_DESCRIPTOR_LIMIT = 1024
const MAX_DEFAULT_CONNECTIONS = 10_000

/** The soft limit on open file descriptors (`ulimit -n`), where the system says. */
function descriptorLimit (): number | undefined {
  try {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    return line ? Number(line[1]) : undefined
  } catch {
    return undefined
  }
}

/** A connection ceiling that leaves descriptors for everything else the process opens. */
export function defaultMaxConnections (limit = descriptorLimit() ?? DEFAULT_DESCRIPTOR_LIMIT): number {
  return Math.max(1, Math.min(MAX_DEFAULT_CONNECTIONS, limit - RESERVED_DESCRIPTORS))
}

interface EdgeError { statusCode?: number, message: string }

// An answer written straight to a socket, for refusals no route sees.
function rawAnswer ({ statusCode = 500, message }: EdgeError, headers: Record<string, string> = {}): string {
  const body = JSON.stringify({ error: statusCode, message })
  const lines = Object.entries({
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close',
    'x-request-id': randomUUID(),
    ...headers
  }).map(([name, value]) => `${name}: ${value}\r\n`)
  return `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}\r\n${lines.join('')}\r\n${body}`
}

// Sends a last answer and closes in stages: FIN, drop what still arrives,
// destroy after LINGER_MS.
function answerAndClose (socket: Socket, answer: string): void {
  socket.end(answer)
  socket.resume()
  const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref()
  socket.once('close', () => clearTimeout(timer))
}

const refusing = new WeakSet<Socket>()

// Node's own record of the answer it is writing on a connection (those of
// requests pipelined behind it wait in a queue): none between requests.
function answerUnderWay (socket: Socket): ServerResponse | null | undefined {
  return (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage
}

// Calls `then` once the answers to the complete requests before the bad
// one are written (or never, if the connection closes first); at once
// when the answer under way is the bad request's own.
function afterAnswersInFlight (socket: Socket, then: () => void): void {
  const current = answerUnderWay(socket)
  if (current === null || current === undefined || !current.req.complete) return then()
  current.once('close', () => {
    if (!socket.destroyed) afterAnswersInFlight(socket, then)
  })
}

function clientErrorAnswer (error: NodeJS.ErrnoException & { reason?: string }, limits: EdgeLimits): EdgeError | undefined {
  switch (error.code) {
    case 'ECONNRESET':
    case 'EPIPE':
      return undefined
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new RequestTimeoutError(limits.headersTimeout / 1000, limits.requestTimeout / 1000)
    case 'HPE_HEADER_OVERFLOW':
      return new HeadersTooLargeError(MAX_HEADER_SIZE)
    default:
      return new BadHttpRequestError(clip(error.reason ?? error.message))
  }
}

/**
 * Fastify options for the edge: the time limits, and the handlers of the
 * errors Node and Fastify raise before routing.
 */
export function edgeServerOptions (limits: EdgeLimits): FastifyHttpOptions<Server> {
  return {
    requestTimeout: limits.requestTimeout,
    keepAliveTimeout: limits.keepAliveTimeout,
    // (Node's own idle timeout is replaced by dropStalledConnections.)
    connectionTimeout: 0,
    http: {
      headersTimeout: limits.headersTimeout,
      connectionsCheckingInterval: CONNECTIONS_CHECK_INTERVAL,
      maxHeaderSize: MAX_HEADER_SIZE,
      // Answered by the hook in guardEdge, as an Error.
      requireHostHeader: false
    },
    // Path parameters are checked by the spec's schemas, which name the
    // parameter; a URL cannot be longer than the headers anyway.
    routerOptions: { maxParamLength: MAX_HEADER_SIZE },
    clientErrorHandler (this: FastifyInstance, error: Error, socket: Socket) {
      const answer = clientErrorAnswer(error as NodeJS.ErrnoException, limits)
      if (answer === undefined || !socket.writable) {
        socket.destroy()
        return
      }
      // (Node reports every later parse error of the connection too.)
      if (refusing.has(socket)) return
      refusing.add(socket)
      this.log.info({ code: (error as NodeJS.ErrnoException).code, status: answer.statusCode }, answer.message)
      // Requests before the bad one, pipelined on this connection, get
      // their own answers first: a client matches answers to requests in
      // order, and must not take this one for theirs (a create it was
      // refused, yet stored). Node stops reading the connection meanwhile.
      afterAnswersInFlight(socket, () => {
        // An answer already begun must not be corrupted by another one:
        // then the connection just ends (Node's own rule).
        const begun = answerUnderWay(socket)?.headersSent
        if (socket.writable && !begun) answerAndClose(socket, rawAnswer(answer))
        else socket.destroy()
      })
    },
    frameworkErrors (error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
      const answer = error.code === 'FST_ERR_BAD_URL'
        ? new BadUrlError('a percent-encoded part of the path does not decode to UTF-8')
        : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
          ? new BadUrlError(`a path segment is longer than ${MAX_HEADER_SIZE} characters`)
          : undefined
      if (answer === undefined) request.log.error({ err: error }, 'request failed before routing')
      if (hasUnreadBody(request.raw)) {
        reply.header('connection', 'close')
        closeInStages(request.raw.socket)
      }
      reply.header('x-request-id', request.id).code(answer?.statusCode ?? 500).send({
        error: answer?.statusCode ?? 500,
        message: answer?.message ?? `Internal server error; the log has the details under request id ${request.id}`
      })
    }
  }
}

// RFC 9112 §3.2 / RFC 3986 §3.2.2: uri-host [ ":" port ], where uri-host
// is an IP literal in brackets or a reg-name (IPv4 addresses are one).
const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[\w\-.~!$&'()*+,;=%]*)(?::\d*)?$/

/** Requests whose `Expect: 100-continue` waits until their body is wanted (the plugin sends it). */
export const awaitingContinue = new WeakSet<IncomingMessage>()

/**
 * Guards a Fastify app's server: the connection ceiling, Expect handling,
 * the Host rule, and a server that never dies of an accept() error.
 */
export function guardEdge (app: FastifyInstance, limits: EdgeLimits): void {
  const server = app.server as Server
  guardConnections(app, server, limits.maxConnections)
  dropStalledConnections(server, Math.max(IDLE_TIMEOUT, limits.requestTimeout))

  // 100 Continue is sent once the request passed authentication and its
  // body is about to be read, so that a refused client never sends it.
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    awaitingContinue.add(request)
    server.emit('request', request, response)
  })
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const { statusCode = 417, message } = new ExpectationFailedError(clip(String(request.headers.expect)))
    const body = JSON.stringify({ error: statusCode, message })
    if (hasUnreadBody(request)) closeInStages(request.socket)
    response.writeHead(statusCode, {
      'content-type': 'application/json; charset=utf-8',
      'content-length': Buffer.byteLength(body),
      connection: 'close',
      'x-request-id': randomUUID()
    }).end(body)
  })

  // A CONNECT request (a tunnel through a proxy) has no route here.
  server.on('connect', (_request: IncomingMessage, socket: Socket) => {
    socket.on('error', () => {})
    answerAndClose(socket, rawAnswer(new BadHttpRequestError('CONNECT is not served: this server is no proxy')))
  })

  // The last Host found valid: clients send the same one again and again.
  let validHost = ''
  app.addHook('onRequest', (request, reply, done) => {
    // RFC 9112 §3.2: an HTTP/1.1 request without Host, or with more than
    // one, is a 400. (This hook runs before the plugin's, which would
    // otherwise name the request.)
    const host = request.headers.host
    let error = request.raw.httpVersion === '1.1' && host === undefined ? new MissingHostError() : duplicateHeader(request.raw, 'Host')
    if (error === undefined && host !== undefined && host !== validHost) {
      if (HOST.test(host)) validHost = host
      else error = new InvalidHostError(clip(host))
    }
    if (error === undefined) return done()
    reply.header('x-request-id', request.id)
    done(error)
  })
}

/**
 * Drops each connection whose answer has been under way with no traffic
 * either way for `idleMs`. Node's way, a socket timeout (`server.timeout`,
 * which Fastify's connectionTimeout sets), arms a timer for every request
 * and rearms it on every read and write, work paid by every request.
 * Looking at every connection IDLE_LOOKS times per
 * `idleMs` costs requests nothing. A connection with no answer under way
 * is reading a request, which its header and request timeouts bound, or
 * kept alive, which the keep-alive timeout bounds; but once the server is
 * closing, Node checks those timeouts no more (its close stops the check),
 * and every connection is watched, as Node's socket timeout did. Time is
 * the monotonic clock's: a step of the wall clock drops nothing.
 */
export function dropStalledConnections (server: Server, idleMs: number): void {
  // Per connection: its bytes either way when last seen to move, and when.
  const watched = new Map<Socket, { moved: number, since: number }>()
  server.on('connection', (socket: Socket) => {
    watched.set(socket, { moved: -1, since: 0 })
    socket.once('close', () => watched.delete(socket))
  })
  const look = setInterval(() => {
    const now = performance.now()
    const closing = !server.listening
    for (const [socket, seen] of watched) {
      const watching = closing || answerUnderWay(socket) != null
      const moved = watching ? socket.bytesRead + socket.bytesWritten : -1
      if (moved !== seen.moved || !watching) {
        seen.moved = moved
        seen.since = now
      } else if (now - seen.since >= idleMs) {
        socket.destroy()
      }
    }
  }, Math.ceil(idleMs / IDLE_LOOKS)).unref()
  server.once('close', () => clearInterval(look))
}

// Connections past the ceiling get a 503 and are closed. The connections
// already open, idle kept-alive ones included, keep being served: they are
// the clients that were there first.
function guardConnections (app: FastifyInstance, server: Server, maxConnections: number): void {
  const httpListeners = server.listeners('connection') as Array<(socket: Socket) => void>
  server.removeAllListeners('connection')
  const tooMany = new TooManyConnectionsError(maxConnections)
  const retryAfter = { 'retry-after': String(RETRY_AFTER_SECONDS) }
  let open = 0
  let refusing = 0
  let refused = 0
  let lastWarning = 0

  server.on('connection', (socket: Socket) => {
    if (open < maxConnections) {
      open++
      socket.once('close', () => { open-- })
      for (const listener of httpListeners) listener.call(server, socket)
      return
    }
    socket.on('error', () => {})
    refused++
    const now = Date.now()
    if (now - lastWarning >= 1000) {
      lastWarning = now
      app.log.warn({ maxConnections, refused }, 'at the connection limit: refusing connections')
      refused = 0
    }
    if (refusing >= MAX_REFUSING) {
      socket.destroy()
      return
    }
    refusing++
    socket.once('close', () => { refusing-- })
    // (Each refusal names a request of its own.)
    answerAndClose(socket, rawAnswer(tooMany, retryAfter))
  })

  // accept() itself failing (EMFILE past the emergency descriptor libuv
  // keeps) is an 'error' event: without a listener it would end the process.
  let lastError = 0
  server.on('error', (err: NodeJS.ErrnoException) => {
    if (!server.listening) return // listen() reports its own errors
    const now = Date.now()
    if (now - lastError < 1000) return
    lastError = now
    app.log.error({ code: err.code, syscall: err.syscall }, 'the server cannot accept connections')
  })
}
