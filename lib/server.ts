// The standalone server: the one place that reads the environment, handles
// signals and listens. Everything else is the plugin's.
//
// Only what reading the configuration needs is imported up front. With
// SQLite, the store's writer thread then starts at once, and boots and
// migrates on another core while the rest (Fastify, the plugin) loads.
import cluster from 'node:cluster'
import { randomBytes } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { once } from 'node:events'
import { setTimeout } from 'node:timers/promises'
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'
import { ConfigError, loadConfig, usage } from './config.ts'
import type { ServerConfig } from './config.ts'
import { TokenFileError, generatedToken } from './generated-token.ts'
import { defaultMaxConnections, edgeServerOptions, guardEdge } from './http-edge.ts'
import { COLLECT, COLLECTED, STOP, clusterMetrics, runPrimary } from './primary.ts'
import type { ClusterMessage } from './primary.ts'
import { redactedUrl, sqlitePath } from './stores/open-store.ts'

function fail (message: string): never {
  process.stderr.write(`plant-store: ${message}\n`)
  process.exit(1)
}

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(usage())
  process.exit(0)
}
const unknown = process.argv.slice(2)
if (unknown.length > 0) fail(`unknown argument ${unknown[0]}: the server is configured through environment variables (see --help)`)

let config: ServerConfig
try {
  config = loadConfig(process.env)
} catch (err) {
  if (err instanceof ConfigError) fail(`configuration error: ${err.message}`)
  throw err
}
const { plugin: options, edge } = config
const databaseFile = sqlitePath(options.database)

// Under WORKERS the primary runs everything below up to the fork: the
// token it generates (if any) reaches every worker through the environment.
const primary = config.workers > 1 && cluster.isPrimary

if (options.tokens.length === 0) {
  // `npm start` works out of the box; the token goes to the terminal,
  // never to the log.
  let kept
  try {
    kept = generatedToken(databaseFile)
  } catch (err) {
    if (err instanceof TokenFileError) fail(`configuration error: ${err.message}`)
    throw err
  }
  options.tokens = [kept.token]
  const where = kept.file === undefined
    ? `this run accepts the generated token${kept.notKept ? ` (not kept: ${kept.notKept})` : ''}`
    : kept.created
      ? `generated a token and kept it in ${kept.file} (readable by its owner only); later runs accept it too`
      : `accepting the generated token kept in ${kept.file}${kept.exposed ? ' (WARNING: others than its owner may read that file: chmod 600 it)' : ''}`
  process.stderr.write(`plant-store: no PLANT_STORE_TOKENS set; ${where}\n\n    ${kept.token}\n\n` +
    'plant-store: set PLANT_STORE_TOKENS=token1,token2 to choose your own.\n')
}

// The configuration holds: with SQLite, the writer thread starts now. (The
// primary opens no store: each worker starts its own. Imported only here:
// neither node:sqlite nor the writer's module is loaded for another store,
// and a bundler splits the writer off this entry, as it must.)
if (databaseFile !== undefined && !primary) (await import('./stores/sqlite-writer.ts')).startWriterEarly(databaseFile)

// A client's request id is kept when it is short and plain; otherwise one
// is made: this process's random prefix and a count, unique across
// restarts and instances without a UUID's cost per request. Either way it
// is in every log line and answer.
const REQUEST_ID = /^[\w.:-]{1,128}$/
const REQUEST_ID_PREFIX = `${randomBytes(8).toString('hex')}-`
let requests = 0
function requestId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  // (Not one that looks like this process's own: a client could make a
  // made id, quoted in another client's 500, ambiguous in the log.)
  return typeof given === 'string' && REQUEST_ID.test(given) && !given.startsWith(REQUEST_ID_PREFIX)
    ? given
    : REQUEST_ID_PREFIX + (++requests).toString(36)
}

const PLUGIN_TIMEOUT_MS = 300_000

const limits = { ...edge, maxConnections: edge.maxConnections || defaultMaxConnections() }

const logger = {
  level: config.log.level,
  redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'], censor: '[redacted]' },
  ...(config.log.format === 'pretty' && { transport: { target: 'pino-pretty' } })
}

if (primary) {
  const { pino } = await import('pino')
  runPrimary({
    workers: config.workers,
    shutdownTimeout: config.shutdownTimeout,
    env: { PLANT_STORE_TOKENS: options.tokens.join(',') },
    log: pino(logger)
  })
} else {
  await serve()
}

async function serve (): Promise<void> {
  // A stop asked for while starting is kept until the server can stop
  // cleanly (a worker is told to stop as the primary is; SIGTERM arrives
  // while a slow database opens).
  let requested: string | undefined
  let stop = (reason: string) => { requested ??= reason }
  process.on('SIGTERM', () => stop('SIGTERM'))
  if (cluster.isWorker) {
    process.on('message', (message: ClusterMessage) => { if (message?.type === STOP) stop('stopped by the primary') })
    // The primary is gone (killed): a worker does not outlive it.
    process.on('disconnect', () => stop('the primary is gone'))
  }

  const [{ default: closeWithGrace }, { default: Fastify, LogController }, { Registry, collectDefaultMetrics }, { DRAIN_SERVER_OPTIONS, drain }, { default: plantStore, deferChildLoggers }, { createSerializerCompiler }, { createValidatorCompiler }] = await Promise.all([
    import('close-with-grace'), import('fastify'), import('prom-client'), import('./lifecycle.ts'), import('./plugin.ts'), import('./serialization.ts'), import('./validation.ts')
  ])
  // (Fastify types these factories as its compiler packages' own; the
  // compilers they make take what Fastify passes every compiler.)
  const compilers = {
    buildValidator: () => createValidatorCompiler(),
    buildSerializer: () => createSerializerCompiler()
  } as unknown as NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>

  // OpenTelemetry, when its endpoint is set (and only then loaded): the SDK
  // before the app, so that the app's every span goes out; log lines name
  // the span they were written in.
  const tracing = config.tracing && (await import('./tracing-sdk.ts')).startTracing(config.tracing)
  const traceIds = tracing && (await import('./tracing.ts')).traceIds

  const app = Fastify({
    ...edgeServerOptions(limits),
    // Start-up may migrate a large database (an index over every webhook
    // delivery): more than Fastify's default 10 s for a plugin to load.
    pluginTimeout: PLUGIN_TIMEOUT_MS,
    ...DRAIN_SERVER_OPTIONS,
    logger: traceIds ? { ...logger, mixin: traceIds } : logger,
    genReqId: requestId,
    // Whom X-Forwarded-For may name the client for (request.ip: the failure
    // limit's key and the log's client); by default nobody, so that a client
    // cannot pick the address it is counted under.
    trustProxy: config.trustProxy,
    // One line per request, written below once the answer is sent.
    logController: new LogController({ disableRequestLogging: true }),
    // The plugin's compilers outside it too (no route out there has a
    // schema now): Fastify then loads no compiler package of its own.
    schemaController: { compilersFactory: compilers }
  })

  // Each request's logger is made when it first writes at a kept level.
  deferChildLoggers(app.log)
  guardEdge(app, limits)

  // (Only when info lines are kept: the hook costs every request.)
  if ((app.log as FastifyBaseLogger & { isLevelEnabled: (level: string) => boolean }).isLevelEnabled('info')) {
    app.addHook('onResponse', (request, reply, done) => {
      request.log.info({
        method: request.method,
        client: request.ip,
        route: request.routeOptions.url ?? null,
        url: request.url,
        status: reply.statusCode,
        durationMs: Math.round(reply.elapsedTime * 100) / 100
      }, 'request')
      done()
    })
  }

  // REDIS_URL: the failed-authentication counts are shared with every
  // instance using it. A Redis that is away must cost a bad token little and
  // a good one nothing: commands fail at once while it is disconnected (no
  // queue) and after 500 ms when it does not answer; the limit then lets the
  // failure through uncounted, and the client reconnects on its own.
  if (config.redisUrl !== undefined) {
    // (socketTimeout: a connection that stops answering altogether, while
    // new ones would work, is dropped and made anew rather than kept.)
    // (Loaded only when asked for, as start-up time counts.)
    const { Redis } = await import('ioredis')
    const redis = new Redis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 500, socketTimeout: 1000, connectTimeout: 2000 })
    // (The auth hook logs when counting stops and starts again; each
    // reconnection attempt's error is not worth a line above debug.)
    redis.on('error', (err) => app.log.debug({ err }, 'Redis connection error'))
    app.addHook('onClose', (_instance, done) => { redis.disconnect(); done() })
    await Promise.race([once(redis, 'ready'), setTimeout(2000)]).catch(() => {})
    if (redis.status !== 'ready') app.log.warn({ redis: redactedUrl(config.redisUrl) }, 'Redis does not answer yet: failed authentications are not counted until it does')
    options.redis = redis
  }

  if (tracing) {
    await app.register(tracing.plugin)
    options.tracing = true
    // (After the store closed: the spans of the drain go out too.)
    app.addHook('onClose', () => tracing.shutdown())
  }

  // A worker's metrics are the primary's to gather: GET /metrics on any
  // worker answers for all of them (prom-client's cluster aggregation).
  if (cluster.isWorker && options.metrics !== false) {
    const registry = new Registry()
    collectDefaultMetrics({ register: registry })
    process.on('message', (message: ClusterMessage) => {
      if (message?.type !== COLLECT) return
      const answer = (reply: ClusterMessage) => { if (process.connected) process.send!(reply) }
      registry.getMetricsAsJSON().then(
        (metrics) => answer({ type: COLLECTED, id: message.id, metrics }),
        () => answer({ type: COLLECTED, id: message.id }))
    })
    options.metrics = { ...options.metrics, registry, text: clusterMetrics() }
  }

  // Where the data is, resolved: a relative file: path lands wherever the
  // process was started.
  app.log.info({ database: databaseFile ?? redactedUrl(options.database) }, 'opening the plant database')
  try {
    await app.register(plantStore, options)
    await app.ready()
  } catch (err) {
    // Errors about the database name the variable that chose it.
    const { code, message } = err as { code?: string, message: string }
    fail(`cannot start: ${code?.startsWith('PLANT_STORE_DATABASE') || code === 'PLANT_STORE_UNKNOWN_DATABASE' ? `DATABASE_URL: ${message}` : message}`)
  }

  // SIGTERM and SIGINT: stop accepting, finish what is in flight, let the
  // store commit what it holds and close, then exit 0; past the timeout, exit
  // 1. A stop asked for again (a second SIGTERM; under WORKERS, the primary's
  // word as well as the process group's signal) is the same stop; a second
  // SIGINT (Ctrl-C twice) forces the exit.
  const closer = closeWithGrace({ delay: config.shutdownTimeout, skip: ['SIGTERM'] }, async ({ signal, err, manual }) => {
    if (err) app.log.error({ err }, 'shutting down after an uncaught error')
    else app.log.info({ signal: signal ?? (manual && requested) }, 'shutting down')
    await drain(app, config.shutdownTimeout)
  })
  let stopping = false
  stop = (reason: string) => {
    // (close-with-grace marks itself closing once a signal it handles, such
    // as SIGINT, started the stop.)
    if (stopping || (closeWithGrace as unknown as { closing: boolean }).closing) return
    stopping = true
    requested ??= reason
    closer.close()
  }
  // Asked to stop while starting: it stops now, never having listened.
  if (requested !== undefined) return stop(requested)

  try {
    const address = await app.listen({ port: config.port, host: config.host })
    app.log.info(`Swagger UI at ${address}/docs`)
  } catch (err) {
    fail(`cannot listen on ${config.host}:${config.port}: ${(err as Error).message}`)
  }
}
