// One attempt's HTTP exchange: a POST through undici's dispatch API, with
// a handler that keeps only the answer's status. undici's request() would
// make an async resource, an abort listener and a body stream per attempt,
// and reading the body to drop it cost as much again: together about as
// much of the main thread as serving the create that made the delivery.
//
// Bounds: RESPONSE_BYTES of an answer's body are read, the rest cut with
// its connection; `abort` (the attempt's deadline, or a stop) cuts the
// exchange once it has a connection. Before that, undici cannot drop a
// request that waits for one: the cut takes effect when the connection is
// made (nothing is sent) or fails, so the agent's connect timeout bounds it.
import type { Dispatcher } from 'undici'

const RESPONSE_BYTES = 64 * 1024

class AnswerTooLongError extends Error {
  override name = 'AnswerTooLongError'
  constructor () {
    super(`the answer was longer than ${RESPONSE_BYTES} bytes`)
  }
}

/** An attempt in flight: its status once answered, and a way to cut it. */
export class Attempt implements Dispatcher.DispatchHandler {
  /**
   * The answer's status once its headers came: a body cut short after
   * them (too long, out of time, stopped) does not change it. Rejects with
   * why, when no status came.
   */
  readonly status: Promise<number>
  #resolve!: (status: number) => void
  #reject!: (err: Error) => void
  #controller: Dispatcher.DispatchController | undefined
  #reason: Error | undefined
  #statusCode: number | undefined
  #read = 0

  constructor () {
    this.status = new Promise((resolve, reject) => {
      this.#resolve = resolve
      this.#reject = reject
    })
  }

  /** Cuts the exchange; before it started, as soon as it starts (nothing is sent). */
  abort (reason: Error): void {
    this.#reason ??= reason
    this.#controller?.abort(reason)
  }

  onRequestStart (controller: Dispatcher.DispatchController): void {
    this.#controller = controller
    if (this.#reason !== undefined) controller.abort(this.#reason)
  }

  onResponseStart (_controller: Dispatcher.DispatchController, statusCode: number): void {
    // (1xx answers are interim: the final one follows.)
    if (statusCode >= 200 || statusCode < 100) this.#statusCode ??= statusCode
  }

  onResponseData (controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#read += chunk.length
    if (this.#read > RESPONSE_BYTES) controller.abort(new AnswerTooLongError())
  }

  onResponseEnd (): void {
    // (undici ends only an answer whose final status came.)
    this.#resolve(this.#statusCode!)
  }

  // (No controller when the request was refused before it was queued.)
  onResponseError (_controller: Dispatcher.DispatchController | null, err: Error): void {
    if (this.#statusCode !== undefined) this.#resolve(this.#statusCode)
    else this.#reject(err)
  }
}

/**
 * POSTs `body` to `url` through `agent`; the attempt settles once, whatever
 * happens. (dispatch() hands what it refuses to the handler's
 * onResponseError rather than throwing.)
 */
export function post (agent: Dispatcher, url: URL, headers: Record<string, string>, body: string): Attempt {
  const attempt = new Attempt()
  agent.dispatch({ origin: url.origin, path: url.pathname + url.search, method: 'POST', headers, body }, attempt)
  return attempt
}
