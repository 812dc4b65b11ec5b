// WORKERS=N: the primary of a node:cluster. It forks the workers (each a
// whole server sharing the port, with its own store connection), restarts
// one that dies, answers the workers' requests for the metrics of the whole
// process tree, and stops them all on SIGTERM or SIGINT. It serves nothing
// itself. The server (server.ts) decides whether this process is one.
import cluster from 'node:cluster'
import type { Worker } from 'node:cluster'
import { AggregatorRegistry } from 'prom-client'
import type { MetricObjectWithValues, MetricValue } from 'prom-client'
import type { FastifyBaseLogger } from 'fastify'

/** What a worker sends to ask for the metrics of every worker. */
export const METRICS_REQUEST = 'plant-store:metrics-request'
/** The primary's answer to it. */
export const METRICS_ANSWER = 'plant-store:metrics'
/** The primary asks each worker for its own metrics… */
export const COLLECT = 'plant-store:collect'
/** …which it answers with its registry's metrics as JSON. */
export const COLLECTED = 'plant-store:collected'
/** What the primary sends each worker to stop it (not a signal: a worker may have had one already). */
export const STOP = 'plant-store:stop'

export type ClusterMessage =
  | { type: typeof METRICS_REQUEST, id: number }
  | { type: typeof METRICS_ANSWER, id: number, text?: string, error?: string }
  | { type: typeof COLLECT, id: number }
  | { type: typeof COLLECTED, id: number, metrics?: MetricObjectWithValues<MetricValue<string>>[] }
  | { type: typeof STOP }

// How long the primary waits for one worker's metrics: a worker that is
// stuck is left out of the scrape (and counted), not waited for.
const WORKER_ANSWER_MS = 2000

// A worker that dies is restarted after this long, doubling while workers
// keep dying soon after they start (a crash loop costs little), at most
// MAX_RESTART_DELAY_MS; one that lived STABLE_MS resets it.
const RESTART_DELAY_MS = 500
const MAX_RESTART_DELAY_MS = 30_000
const STABLE_MS = 60_000

export interface PrimaryOptions {
  workers: number
  /** How long the workers may take to drain once stopped; then they are killed and the primary exits 1. */
  shutdownTimeout: number
  /** Variables every worker gets beyond the primary's own (a generated token). */
  env: NodeJS.ProcessEnv
  log: FastifyBaseLogger
}

/**
 * The metrics of every worker that answers within WORKER_ANSWER_MS, added
 * up (prom-client's aggregation), with how many did not answer. Scrapes
 * that arrive while one is gathered share it.
 */
/**
 * Requests over an IPC channel, answered by id: each waits `timeoutMs` at
 * most (then resolves undefined), and nothing is kept of it after.
 */
function answeredById<T> (timeoutMs: number) {
  let next = 0
  const waiting = new Map<number, (answer: T | undefined) => void>()
  return {
    answer (id: number, value: T | undefined): void {
      waiting.get(id)?.(value)
    },
    /** `send` sends the request with its id, and calls `failed` if it could not. */
    ask (send: (id: number, failed: () => void) => void): Promise<T | undefined> {
      return new Promise((resolve) => {
        const id = next++
        const done = (value: T | undefined) => {
          clearTimeout(timer)
          waiting.delete(id)
          resolve(value)
        }
        const timer = setTimeout(() => done(undefined), timeoutMs)
        waiting.set(id, done)
        send(id, () => done(undefined))
      })
    }
  }
}

type WorkerMetrics = MetricObjectWithValues<MetricValue<string>>[]

function metricsGatherer () {
  const requests = answeredById<WorkerMetrics>(WORKER_ANSWER_MS)
  cluster.on('message', (_worker, message: ClusterMessage) => {
    if (message?.type === COLLECTED) requests.answer(message.id, message.metrics)
  })
  const ask = (worker: Worker) => requests.ask((id, failed) => {
    worker.send({ type: COLLECT, id } satisfies ClusterMessage, (err) => { if (err) failed() })
  })
  let gathering: Promise<string> | undefined
  return (): Promise<string> => {
    gathering ??= (async () => {
      const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker?.isConnected() === true)
      const answers = await Promise.all(workers.map(ask))
      const answered = answers.filter((metrics) => metrics !== undefined)
      const text = answered.length === 0 ? '' : await AggregatorRegistry.aggregate(answered).metrics()
      return text + '# HELP plant_store_workers_unanswered Workers that did not give their metrics to this scrape in time (left out of it)\n' +
        `# TYPE plant_store_workers_unanswered gauge\nplant_store_workers_unanswered ${workers.length - answered.length}\n`
    })().finally(() => { gathering = undefined })
    return gathering
  }
}

export function runPrimary ({ workers, shutdownTimeout, env, log }: PrimaryOptions): void {
  const gather = metricsGatherer()
  const born = new Map<Worker, number>()
  let listened = false
  let stopping = false
  let failed = false
  let delay = RESTART_DELAY_MS

  const fork = () => {
    const worker = cluster.fork(env)
    born.set(worker, Date.now())
    worker.on('listening', () => { listened = true })
    worker.on('message', (message: ClusterMessage) => {
      if (message?.type !== METRICS_REQUEST) return
      gather().then(
        (text) => worker.send({ type: METRICS_ANSWER, id: message.id, text } satisfies ClusterMessage),
        (err: Error) => worker.send({ type: METRICS_ANSWER, id: message.id, error: err.message } satisfies ClusterMessage))
    })
  }

  const finish = () => {
    if (Object.keys(cluster.workers ?? {}).length > 0) return
    log.info({ failed }, 'every worker has stopped')
    process.exit(failed ? 1 : 0)
  }

  const stop = (reason: string) => {
    // Stopping already: a second SIGTERM (or one to the whole process
    // group as well as to the primary) is the same stop.
    if (stopping) return
    stopping = true
    log.info({ reason }, 'stopping the workers')
    for (const worker of Object.values(cluster.workers ?? {})) worker?.send({ type: STOP } satisfies ClusterMessage)
    setTimeout(() => {
      log.error({ timeoutMs: shutdownTimeout }, 'workers did not stop in time: killing them')
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL')
      process.exit(1)
    }, shutdownTimeout + 1000).unref()
    finish()
  }

  cluster.on('exit', (worker, code, signal) => {
    const lived = Date.now() - (born.get(worker) ?? Date.now())
    born.delete(worker)
    if (stopping) {
      if (code !== 0) failed = true
      return finish()
    }
    // One that never started is a configuration or database problem every
    // worker shares: restarting would only loop.
    if (!listened) {
      log.error({ pid: worker.process.pid, code, signal }, 'a worker could not start: stopping')
      failed = true
      return stop('a worker could not start')
    }
    delay = lived >= STABLE_MS ? RESTART_DELAY_MS : Math.min(delay * 2, MAX_RESTART_DELAY_MS)
    log.error({ pid: worker.process.pid, code, signal, restartInMs: delay }, 'a worker died: starting another')
    setTimeout(() => { if (!stopping) fork() }, delay)
  })

  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => stop(signal))
  log.info({ workers }, 'starting the workers')
  for (let i = 0; i < workers; i++) fork()
}

/**
 * In a worker: the metrics of every worker, from the primary (prom-client's
 * cluster aggregation), within `timeoutMs`.
 */
export function clusterMetrics (timeoutMs = 5000): () => Promise<string> {
  const requests = answeredById<{ text?: string, error?: string }>(timeoutMs)
  process.on('message', (message: ClusterMessage) => {
    if (message?.type === METRICS_ANSWER) requests.answer(message.id, message)
  })
  return async () => {
    const answer = await requests.ask((id, failed) => {
      if (process.connected) process.send!({ type: METRICS_REQUEST, id } satisfies ClusterMessage)
      else failed()
    })
    if (answer === undefined) throw new Error('the primary did not answer with the workers\' metrics in time')
    if (answer.text === undefined) throw new Error(`the primary could not gather the workers' metrics: ${answer.error}`)
    return answer.text
  }
}
