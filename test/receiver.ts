// A webhook receiver on 127.0.0.1 for tests: it records each request and
// answers as the test says (a status, or never).
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { IncomingHttpHeaders, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import { until } from './helper.ts'
import { setTimeout } from 'node:timers/promises'

export interface Received {
  headers: IncomingHttpHeaders
  body: string
  at: number
}

/** What to answer: a status, a status after a while, or 'hang' to answer never. */
export type Answer = number | 'hang' | { status: number, afterMs: number }

export interface Receiver {
  url: string
  received: Received[]
  /** The answers for the next requests, in order; then `otherwise`. */
  answers: Answer[]
  otherwise: Answer
  /** The most requests it was answering at once. */
  maxOpen: number
  /** Resolves once `count` requests have arrived. */
  waitFor: (count: number, timeoutMs?: number) => Promise<Received[]>
  /** Stops listening, cutting requests it holds (a receiver going down). */
  close: () => Promise<void>
}

/** Listens on `port` when given (a receiver that comes up where one was down), else on a free one. */
export async function receiver (t: Test, otherwise: Answer = 204, port = 0): Promise<Receiver> {
  const hanging = new Set<ServerResponse>()
  const self: Receiver = {
    url: '',
    received: [],
    answers: [],
    otherwise,
    maxOpen: 0,
    waitFor: async (count, timeoutMs = 10_000) => {
      await until(() => self.received.length >= count, `${count} webhook requests (${self.received.length} arrived)`, timeoutMs)
      return self.received.slice(0, count)
    },
    close: () => new Promise<void>((resolve) => {
      for (const response of hanging) response.destroy()
      server.closeAllConnections()
      server.close(() => resolve())
    })
  }
  let open = 0
  const server = createServer((request, response) => {
    self.maxOpen = Math.max(self.maxOpen, ++open)
    response.on('close', () => { open-- })
    let body = ''
    request.setEncoding('utf8').on('data', (chunk) => { body += chunk }).on('end', () => {
      self.received.push({ headers: request.headers, body, at: Date.now() })
      const answer = self.answers.shift() ?? self.otherwise
      if (answer === 'hang') hanging.add(response)
      else if (typeof answer === 'number') response.writeHead(answer).end()
      else setTimeout(answer.afterMs).then(() => response.writeHead(answer.status).end(), () => {})
    })
  })
  server.listen(port, '127.0.0.1')
  await once(server, 'listening')
  self.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`
  t.teardown(() => server.listening ? self.close() : undefined)
  return self
}
