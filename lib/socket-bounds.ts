// What one connection may hold of the plugin: its answers are computed one
// at a time and only once the previous one has left the socket buffer, a
// client that does not read its answer loses the connection after a
// deadline, and a connection whose request body goes unread is closed in
// stages instead of reading (or resetting) whatever it still sends.
import type { IncomingMessage } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyReply, FastifyRequest } from 'fastify'

/** How long a closing connection's late bytes are read and dropped before it is destroyed. */
export const LINGER_MS = 2000
/** How many of them, at most: a client that keeps sending is not listening. */
const LINGER_BYTES = 1024 * 1024

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
 * dropped for at most LINGER_MS and LINGER_BYTES, and only then is it
 * destroyed (RFC 9112 §9.6). Destroying it at once would reset it while the
 * client is still sending, and the client would often never read the
 * answer.
 */
export function closeInStages (socket: Socket | null | undefined): void {
  // Node calls destroySoon() for the last answer of a connection; the
  // sockets of Fastify's inject() have none and need none of this.
  if (!socket || typeof socket.destroySoon !== 'function' || staged.has(socket)) return
  staged.add(socket)
  socket.destroySoon = function lingeringClose (this: Socket) {
    this.end()
    const started = Date.now()
    const read = this.bytesRead
    // (Node's HTTP parser reads this socket itself: no 'data' events to count.)
    const check = setInterval(() => {
      if (Date.now() - started >= LINGER_MS || this.bytesRead - read > LINGER_BYTES) this.destroy()
    }, 50).unref()
    this.once('close', () => clearInterval(check))
  }
}

/**
 * Bytes held for clients in all: bodies being read, and answers being
 * written to clients that take them slowly. Each connection is bounded
 * alone (one body, one answer); this bounds them all together, whatever
 * the number of connections.
 */
export class MemoryBudget {
  readonly #limit: number
  #held = 0

  constructor (limit: number) {
    this.#limit = limit
  }

  /** Whether `bytes` more may be held; they are, when it answers true. */
  reserve (bytes: number): boolean {
    if (this.#held + bytes > this.#limit) return false
    this.#held += bytes
    return true
  }

  release (bytes: number): void {
    this.#held -= bytes
  }
}

export interface AnswerFlowOptions {
  /** Requests one connection may have waiting behind its current answer; past it, the connection is dropped. */
  maxPipelined: number
  /** Milliseconds a client may take to read an answer that does not fit the socket buffer; past it, the connection is dropped. */
  writeTimeout: number
  memory: MemoryBudget
}

// Requests of each connection waiting behind its current answer.
const waiting = new WeakMap<Socket, number>()

// The connection of a request, or null for the sockets of Fastify's
// inject(), which carry no connection to bound.
function connectionOf (request: FastifyRequest): Socket | null {
  const socket = request.raw.socket as Socket | null
  return socket && typeof socket.destroySoon === 'function' ? socket : null
}

// What the socket holds unwritten fits its buffer: the client is reading.
const drained = (socket: Socket): boolean => socket.writableLength <= socket.writableHighWaterMark

function whenDrained (socket: Socket, go: () => void): void {
  if (drained(socket)) go()
  else socket.once('drain', go)
}

/**
 * What one connection may hold: a request pipelined behind an answer that
 * is not yet written waits its turn (Node queues its answer until then,
 * and the answers before it must have left the socket buffer), so that at
 * most one answer per connection is in memory; more than `maxPipelined`
 * waiting drop the connection; and an answer larger than the socket buffer
 * that is not read within `writeTimeout` drops it too. The common case, a
 * request with nothing before it, costs two property reads.
 */
export function createAnswerFlow ({ maxPipelined, writeTimeout, memory }: AnswerFlowOptions) {
  return {
    /** Whether it is the request's turn now: nothing before it is unwritten (the common case). */
    inTurn (request: FastifyRequest, reply: FastifyReply): boolean {
      const socket = connectionOf(request)
      return socket === null || (reply.raw.socket !== null && drained(socket))
    },

    /** In onRequest: continues (`go`) when it is this request's turn. */
    awaitTurn (request: FastifyRequest, reply: FastifyReply, go: () => void): void {
      const socket = connectionOf(request)
      const response = reply.raw
      if (socket === null) return go()
      // Node hands the socket to an answer once those before it are written.
      if (response.socket !== null) return whenDrained(socket, go)
      const count = (waiting.get(socket) ?? 0) + 1
      if (count > maxPipelined) {
        request.log.info({ waiting: count }, 'too many pipelined requests: connection dropped')
        socket.destroy()
        return
      }
      waiting.set(socket, count)
      response.once('socket', () => {
        waiting.set(socket, (waiting.get(socket) ?? 1) - 1)
        whenDrained(socket, go)
      })
    },

    /**
     * In onSend: an answer that will not fit at once (larger than the socket
     * buffer, or behind data the client has not read) must be taken by the
     * client within `writeTimeout`, or the connection is dropped. (Node's
     * 'finish' comes only once the last byte went to the kernel.) Such an
     * answer is held against the memory budget until then; false when the
     * budget cannot hold it.
     */
    limitWrite (request: FastifyRequest, reply: FastifyReply, payload: unknown): boolean {
      const socket = connectionOf(request)
      if (socket === null) return true
      const size = typeof payload === 'string' || Buffer.isBuffer(payload) ? payload.length : 0
      if (size <= socket.writableHighWaterMark && socket.writableLength === 0) return true
      // Held until written: over the budget, the caller answers 503 instead.
      if (!memory.reserve(size)) return false
      const deadline = setTimeout(() => {
        request.log.info({ writeTimeout }, 'the client did not read its answer in time: connection dropped')
        socket.destroy()
      }, writeTimeout).unref()
      reply.raw.once('close', () => {
        clearTimeout(deadline)
        memory.release(size)
      })
      return true
    }
  }
}
