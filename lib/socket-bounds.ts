// What one connection may hold of the plugin: its answers are computed one
// at a time and only once the previous one has left the socket buffer, a
// client that does not read its answer loses the connection after a
// deadline, and a connection whose request body goes unread is closed in
// stages instead of reading (or resetting) whatever it still sends.
import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { onRequestHookHandler } from 'fastify'

/** How long a closing connection's late bytes are read and dropped before it is destroyed. */
export const LINGER_MS = 2000

/** Whether the request has body bytes that nobody has read (yet). */
export function hasUnreadBody (request: IncomingMessage): boolean {
  if (request.complete) return false
  const length = request.headers['content-length']
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
}

const staged = new WeakSet<Socket>()

/**
 * Once Node ends the socket after an answer marked `Connection: close`, it
 * is half-closed (the answer, then FIN), what still arrives is read and
 * dropped for at most LINGER_MS, and only then is it destroyed (RFC 9112
 * §9.6). Destroying it at once would reset it while the client is still
 * sending, and the client would often never read the answer.
 */
export function closeInStages (socket: Socket | null | undefined): void {
  // Node calls destroySoon() for the last answer of a connection; the
  // sockets of Fastify's inject() have none and need none of this.
  if (!socket || typeof socket.destroySoon !== 'function' || staged.has(socket)) return
  staged.add(socket)
  socket.destroySoon = function lingeringClose (this: Socket) {
    this.end()
    const timer = setTimeout(() => this.destroy(), LINGER_MS).unref()
    this.once('close', () => clearTimeout(timer))
  }
}

export interface AnswerFlowOptions {
  /** Requests one connection may have waiting for answers; past it, the connection is dropped. */
  maxPipelined: number
  /** Milliseconds an answer may take to leave the socket once written; past it, the connection is dropped. */
  writeTimeout: number
}

interface Flow {
  inFlight: number
  waiting: Array<() => void>
  draining: boolean
}

const flows = new WeakMap<Socket, Flow>()

function next (socket: Socket, flow: Flow): void {
  if (flow.waiting.length === 0 || flow.draining) return
  if (socket.writableLength > socket.writableHighWaterMark) {
    flow.draining = true
    socket.once('drain', () => {
      flow.draining = false
      next(socket, flow)
    })
    return
  }
  flow.waiting.shift()!()
}

function armWriteDeadline (socket: Socket, writeTimeout: number): void {
  if (socket.writableLength === 0 || socket.destroyed) return
  const timer = setTimeout(() => socket.destroy(), writeTimeout).unref()
  const clear = () => {
    clearTimeout(timer)
    socket.off('drain', clear)
    socket.off('close', clear)
  }
  socket.once('drain', clear)
  socket.once('close', clear)
}

/**
 * The onRequest hook that bounds what one connection holds: pipelined
 * requests wait their turn (so at most one answer per connection is in
 * memory beyond the socket's buffer), more than `maxPipelined` of them drop
 * the connection, and an answer not read within `writeTimeout` too.
 */
export function createAnswerFlow ({ maxPipelined, writeTimeout }: AnswerFlowOptions): onRequestHookHandler {
  return function answerFlow (request, reply, done) {
    const socket = request.raw.socket as Socket | null
    if (!socket || typeof socket.destroySoon !== 'function') return done()
    let flow = flows.get(socket)
    if (flow === undefined) flows.set(socket, flow = { inFlight: 0, waiting: [], draining: false })
    const current = flow
    if (++current.inFlight > maxPipelined) {
      request.log.info({ inFlight: current.inFlight }, 'too many pipelined requests: connection dropped')
      socket.destroy()
      return
    }
    reply.raw.once('close', () => {
      current.inFlight--
      armWriteDeadline(socket, writeTimeout)
      next(socket, current)
    })
    if (current.inFlight === 1 && socket.writableLength <= socket.writableHighWaterMark) return done()
    current.waiting.push(done)
    if (current.inFlight === current.waiting.length) next(socket, current)
  }
}
