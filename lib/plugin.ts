// The plant store as a Fastify plugin: named and version-checked through
// fastify-plugin, and encapsulated all the same (`encapsulate: true`), so
// that its auth hook, error handler, body parser and validator apply to
// its own routes, never to the host app's.
import './node-version.ts'
import bearerAuth from '@fastify/bearer-auth'
import rateLimit from '@fastify/rate-limit'
import openapiGlue from 'fastify-openapi-glue'
import fp from 'fastify-plugin'
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { Redis } from 'ioredis'
import type { AnyRegistry } from './metric-series.ts'
import { PlantService } from '../service/plant-service.ts'
import { authObserver, createAuthHook, createBearerCheck, createTokenCheck, failureKey, failureStore } from './auth.ts'
import type { FailureLimit, RequestStep } from './auth.ts'
import { docs } from './docs.ts'
import { DEFAULT_AUTH_FAILURE_LIMIT, DEFAULT_BODY_LIMIT, DEFAULT_MAX_HELD_BYTES, DEFAULT_MAX_PIPELINED, DEFAULT_WEBHOOKS, DEFAULT_WRITE_TIMEOUT } from './defaults.ts'
import { createErrorHandler, createNotFoundHandler } from './error-handler.ts'
import { BusyError, NoTokensError, NotReadyError, RETRY_AFTER_SECONDS } from './errors.ts'
import { awaitingContinue } from './http-edge.ts'
import { createBodyParser } from './json-body.ts'
import { Lifecycle } from './lifecycle.ts'
import type { OverloadLimits } from './lifecycle.ts'
import { PlantStoreMetrics } from './metrics.ts'
import { createOperationResolver, specMediaTypes, specPaths } from './operations.ts'
import { RouteFacts } from './route-facts.ts'
import { MemoryBudget, closeInStages, createAnswerFlow, hasUnreadBody } from './socket-bounds.ts'
import { skipEmbeddedSpecCheck } from './spec-check.ts'
import { loadSpec } from './spec.ts'
import { DEFAULT_DATABASE_URL, startStore, storeKind } from './stores/open-store.ts'
import type { PlantStorage } from './stores/plant-storage.ts'
import { createSerializerCompiler } from './serialization.ts'
import { createValidatorCompiler } from './validation.ts'
import { WebhookDispatcher } from './webhooks/dispatcher.ts'
import type { WebhookOptions } from './webhooks/dispatcher.ts'

export interface PlantStoreOptions {
  /** Bearer tokens the API accepts; at least one. */
  tokens: readonly string[]
  /**
   * Where plants are kept: a database URL (`file:PATH` for SQLite,
   * `postgres://…`, `memory:`), or a store instance. A store the plugin opens
   * from a URL is closed with the app; an instance passed in stays the
   * caller's to close. Default `file:./data/plants.db`.
   */
  database?: string | PlantStorage
  /** Largest accepted request body in bytes. Default 1 MiB. */
  bodyLimit?: number
  /** Serve Swagger UI at `<prefix>/docs`. Default true. */
  docs?: boolean
  /** Require a bearer token for the docs too. Default false. */
  protectDocs?: boolean
  /** The realm named in `WWW-Authenticate`. Default `plant-store`. */
  realm?: string
  /**
   * Failed authentications a client address may make per window before it
   * gets 429 (valid tokens still pass). Default 10 a minute; false: no limit.
   */
  authFailureLimit?: FailureLimit | false
  /**
   * Thresholds past which the API answers 503 with Retry-After and /readyz
   * says not ready (@fastify/under-pressure). Default: event-loop delay over
   * 1000 ms. 0 turns a threshold off; false turns the check off.
   */
  overload?: OverloadLimits | false
  /** Origins allowed to call the API from a browser (@fastify/cors). Default none. */
  corsOrigins?: readonly string[]
  /**
   * Milliseconds an answer may take to reach a client that reads slowly,
   * once written; past it the connection is closed. Default 30 s.
   */
  writeTimeout?: number
  /**
   * Answer requests for paths the plugin does not have (404, in the spec's
   * Error shape). Under a prefix, the plugin always answers its own; at the
   * root, only when asked: the host's not-found handler stays the host's.
   * Methods a path of the plugin does not serve are answered 405 either
   * way. Default false.
   */
  notFound?: boolean
  /** Requests one connection may pipeline before it is closed. Default 32. */
  maxPipelined?: number
  /**
   * Bytes the plugin may hold in all for bodies being read and answers
   * being written slowly, whatever the number of connections; past it,
   * requests get 503. Default 256 MiB.
   */
  maxHeldBytes?: number
  /**
   * The newPlant webhook (README: Webhooks): how deliveries are attempted,
   * or false to turn subscriptions and deliveries off. A store passed in
   * that keeps no outbox has none either.
   */
  webhooks?: false | Partial<WebhookOptions>
  /**
   * Prometheus metrics at GET `<prefix>/metrics` (README: Operating at
   * scale). Default on, in a registry of the plugin's own with Node's
   * process metrics; `{ registry }` adds the plugin's to a host's
   * prom-client registry instead; false turns them off (404).
   */
  metrics?: false | MetricsPluginOptions
  /**
   * Traces (README: Operating at scale): a span per store operation and per
   * webhook attempt, the trace context kept with each delivery and sent to
   * its receiver. Needs an OpenTelemetry SDK registered by the host (and
   * @fastify/otel for the request spans). Default false: no tracing code runs.
   */
  tracing?: boolean
  /** PostgreSQL: connections in the pool the plugin opens. Default 10. */
  poolSize?: number
  /**
   * `memory:`: plants and webhook delivery records held at most; past it,
   * creates get 503 (the store is full). Default 100,000.
   */
  memoryMaxRecords?: number
  /**
   * A Redis client (ioredis) that keeps the failed-authentication counts,
   * so that every instance sharing it shares the limit. Redis that does not
   * answer lets failures through uncounted (401, not 429); valid tokens are
   * never counted. The client stays the caller's to close.
   */
  redis?: Redis
}

export interface MetricsPluginOptions {
  /** A prom-client registry to add the plugin's metrics to (not Node's default ones: the host's call). */
  registry?: AnyRegistry
  /** Serve them without a token. Default false: a bearer token, as the API. */
  public?: boolean
  /** What GET /metrics answers. Default this registry's metrics; the server gives the whole process tree's under WORKERS. */
  text?: () => Promise<string>
}

// Methods whose bodies Fastify never reads.
const BODYLESS: ReadonlySet<string> = new Set(['GET', 'HEAD'])
// The content type Fastify is shown for a body that will not be read.
const IGNORED_BODY_TYPE = 'application/octet-stream'

const plantStore: FastifyPluginAsync<PlantStoreOptions> = async function plantStore (fastify, options) {
  const tokens = (options.tokens ?? []).filter((token) => token.length > 0)
  if (tokens.length === 0) throw new NoTokensError()
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
  const spec = await loadSpec()

  const metrics = options.metrics === false ? undefined : new PlantStoreMetrics({ registry: options.metrics?.registry })
  if (metrics !== undefined) fastify.addHook('onClose', (_instance, done) => { metrics.close(); done() })

  let opened: PlantStorage
  let storeReady = Promise.resolve()
  if (typeof options.database === 'object') {
    opened = options.database
  } else {
    const url = options.database ?? DEFAULT_DATABASE_URL
    const started = await startStore(url, { log: fastify.log, observer: metrics?.commits, poolSize: options.poolSize, memoryMaxRecords: options.memoryMaxRecords })
    opened = started.store
    // (Awaited once the routes are compiled: a SQLite writer thread starts meanwhile.)
    storeReady = started.ready
    storeReady.catch(() => {})
    fastify.addHook('onClose', () => opened.close())
  }
  const storeName = typeof options.database === 'object' ? 'custom' : storeKind(options.database ?? DEFAULT_DATABASE_URL) ?? 'custom'
  // Loaded only when asked for: without traces no OpenTelemetry code runs.
  const tracing = options.tracing === true ? await import('./tracing.ts') : undefined
  const traced = tracing === undefined ? opened : tracing.tracedStore(opened, storeName)
  const store = metrics === undefined ? traced : metrics.instrument(traced, storeName)
  // Ready, overloaded or closing: /readyz, the hooks below and the answers'
  // Connection header read it.
  const lifecycle = new Lifecycle(options.overload ?? {})
  fastify.addHook('onReady', (done) => { lifecycle.start(); done() })
  fastify.addHook('preClose', (done) => { lifecycle.beginClosing(); done() })
  fastify.addHook('onClose', (_instance, done) => { lifecycle.stop(); done() })
  // Webhook deliveries go out from the moment the app is ready until it
  // begins to close (what is left stays pending for the next start).
  const webhookOptions = options.webhooks === false ? undefined : { ...DEFAULT_WEBHOOKS, ...options.webhooks }
  const dispatcher = webhookOptions && store.webhooks && new WebhookDispatcher(store.webhooks, webhookOptions, fastify.log, tracing?.traceAttempt, () => lifecycle.busy)
  if (dispatcher !== undefined) {
    fastify.addHook('onReady', (done) => { dispatcher.start(); done() })
    fastify.addHook('preClose', () => dispatcher.stop())
  }
  const service = new PlantService(store, () => lifecycle.notReadyReason(), dispatcher && {
    allowPrivateNetworks: webhookOptions!.allowPrivateNetworks,
    wake: () => dispatcher.wake(),
    subscribed: () => dispatcher.subscribed()
  }, metrics && ((options.metrics as MetricsPluginOptions | undefined)?.text ?? (() => metrics.text())))
  if (metrics !== undefined) {
    metrics.watch({ state: lifecycle, webhooks: dispatcher && opened.webhooks, pool: opened.poolCounts && (() => opened.poolCounts!()) })
  }
  // Each answer is counted as it is sent (onSend, below): an onResponse
  // hook of its own would cost every request Fastify's hook runner. One
  // whose client is gone is not: it will never be written.
  const count = metrics === undefined
    ? () => {}
    : (request: FastifyRequest, reply: FastifyReply) => {
        if (request.raw.socket?.destroyed === true) return
        metrics.request(RouteFacts.of(request).operationId ?? 'none', request.method, reply.statusCode, reply.elapsedTime / 1000)
      }

  const corsOn = (options.corsOrigins?.length ?? 0) > 0
  const routes = new RouteFacts(corsOn ? ['OPTIONS'] : [])
  fastify.addHook('onRoute', routes.onRoute)
  fastify.decorateRequest('plantStoreRoute', null)

  const memory = new MemoryBudget(options.maxHeldBytes ?? DEFAULT_MAX_HELD_BYTES)
  const answers = createAnswerFlow({
    maxPipelined: options.maxPipelined ?? DEFAULT_MAX_PIPELINED,
    writeTimeout: options.writeTimeout ?? DEFAULT_WRITE_TIMEOUT,
    memory
  })
  const bodies = createBodyParser({
    bodyLimit,
    memory
  })
  fastify.addHook('onSend', (request, reply, payload, done) => {
    // An answer sent before the body was read closes the connection, in
    // stages: Node would otherwise read and discard all of that body to get
    // to the next request. While closing, clients are told to go elsewhere:
    // a kept-alive connection would hold the shutdown open.
    if (hasUnreadBody(request.raw)) {
      reply.header('connection', 'close')
      closeInStages(request.raw.socket)
    } else if (lifecycle.closing) {
      reply.header('connection', 'close')
    }
    if (answers.limitWrite(request, reply, payload)) {
      count(request, reply)
      return done(null, payload)
    }
    const { statusCode = 503, message } = new BusyError()
    reply.code(statusCode).header('retry-after', String(RETRY_AFTER_SECONDS))
    count(request, reply)
    done(null, JSON.stringify({ error: statusCode, message }))
  })

  fastify.setValidatorCompiler(createValidatorCompiler())
  fastify.setSerializerCompiler(createSerializerCompiler())
  fastify.setErrorHandler(createErrorHandler({ realm: options.realm ?? 'plant-store' }))
  const notFound = createNotFoundHandler(routes, options.docs === false ? undefined : `${fastify.prefix}/docs`)
  if (fastify.prefix !== '' || options.notFound === true) fastify.setNotFoundHandler(notFound)

  // One parser for every content type: UTF-8 JSON, read within the limit,
  // for the operations that take a body; others get none.
  fastify.removeAllContentTypeParsers()
  // (Named for each media type of the spec too, which fastify-openapi-glue
  // looks for, its answers' included.)
  for (const type of specMediaTypes(spec)) fastify.addContentTypeParser(type, bodies.parse)
  fastify.addContentTypeParser('*', bodies.parse)

  // bearer-auth only decorates here; the hooks below decide what it guards.
  const tokenCheck = createTokenCheck(tokens)
  await fastify.register(bearerAuth, {
    keys: [],
    auth: tokenCheck,
    addHook: false,
    // Accept the scheme name in any case, as RFC 7235 says.
    specCompliance: 'rfc6749',
    verifyErrorLogLevel: 'info'
  })
  const verifyBearerAuth = fastify.verifyBearerAuth!

  const failureLimit = options.authFailureLimit ?? DEFAULT_AUTH_FAILURE_LIMIT
  if (failureLimit !== false) {
    await fastify.register(rateLimit, {
      global: false,
      ...(options.redis !== undefined && { store: failureStore(options.redis) })
    })
  }

  // The token is checked before the body is even read.
  const auth = createAuthHook(verifyBearerAuth, failureLimit === false
    ? undefined
    : fastify.createRateLimit({ ...failureLimit, keyGenerator: failureKey }), authObserver(metrics, fastify.log), createBearerCheck(tokenCheck))
  // Past authentication: a body that will not be read is refused before
  // the client sends it. A client that sent `Expect: 100-continue` sends
  // it only now (the server held the 100 back).
  const admitBody: RequestStep = (request, reply, done) => {
    const refusal = bodies.refusal(request)
    if (refusal !== undefined) return done(refusal)
    // (Only for a body that will be read: 404, 405 and operations that take
    // none answer without it, and a 100 must be followed by reading it.)
    if (request.headers.expect !== undefined && awaitingContinue.delete(request.raw) && !request.is404 && RouteFacts.takesBody(request)) reply.raw.writeContinue()
    done()
  }
  // What every request goes through before anything answers it, CORS's
  // preflights included.
  const admit = (request: FastifyRequest, reply: FastifyReply): void => {
    // Every answer names its request, so that a client can quote it and
    // the log can be searched for it.
    reply.header('x-request-id', request.id)
    lifecycle.requestArrived()
    // What takes no body (DELETE, a 405, a 404) ignores one, whatever its
    // content type: Fastify is shown a neutral type instead of the
    // client's, so that it neither judges theirs (a malformed one would be a
    // 415) nor refuses a QUERY for having none (400), and hands the body to
    // the parser below, which leaves it unread. (GET and HEAD bodies
    // Fastify never reads.)
    if ((request.headers['content-type'] !== undefined || request.method === 'QUERY') && RouteFacts.of(request).takesBody !== true && !BODYLESS.has(request.method)) {
      request.headers['content-type'] = IGNORED_BODY_TYPE
    }
  }
  // What a request for the API goes through after CORS has set its headers,
  // so that a page can read the refusal.
  const guard: RequestStep = (request, reply, done) => {
    // Overloaded: the API answers 503 at once; health checks and metrics
    // still answer, /readyz with the reason.
    if (lifecycle.overloaded !== undefined && !RouteFacts.of(request).operational) return done(new NotReadyError('overloaded'))
    if (auth.passes(request)) return admitBody(request, reply, done)
    auth.judge(request, reply, (err) => err === undefined ? admitBody(request, reply, done) : done(err))
  }
  if (corsOn) {
    fastify.addHook('onRequest', (request, reply, done) => {
      admit(request, reply)
      answers.awaitTurn(request, reply, done)
    })
    // Preflight requests carry no token: CORS answers them (in its own
    // onRequest hook, which ends there) before any auth, with the methods
    // the path serves.
    const origin = options.corsOrigins!.includes('*') ? '*' : [...options.corsOrigins!]
    // (Loaded only when asked for: most servers have no browser callers.)
    const { default: cors } = await import('@fastify/cors')
    await fastify.register(cors, {
      delegator: (request, callback) => {
        const methods = routes.allowedMethods(request.url.split('?', 1)[0] ?? '')
        callback(null, methods === undefined
          ? { origin: false }
          : { origin, methods, strictPreflight: false, exposedHeaders: ['x-request-id', 'retry-after', 'www-authenticate'] })
      }
    })
    fastify.addHook('onRequest', guard)
  } else {
    // (One hook stage, not two: each costs every request.)
    fastify.addHook('onRequest', (request, reply, done) => {
      admit(request, reply)
      // A connection's answers are made one at a time, while it reads them.
      // (In turn, the common case, the guard runs at once: a callback per
      // step would be a closure per request.)
      if (answers.inTurn(request, reply)) guard(request, reply, done)
      else answers.awaitTurn(request, reply, () => guard(request, reply, done))
    })
  }

  if (options.docs !== false) {
    await fastify.register(docs, { spec, guard: options.protectDocs ? verifyBearerAuth : undefined })
  }

  await skipEmbeddedSpecCheck()
  await fastify.register(openapiGlue, {
    specification: spec,
    operationResolver: createOperationResolver(spec, service, new Set(options.metrics && options.metrics.public ? ['getMetrics'] : []))
  })

  await storeReady

  // The methods each path of the spec does not serve (as its routes, now
  // registered, show) get a route that answers 405: the plugin answers
  // them under a prefix or not, without a not-found handler at the root.
  for (const url of specPaths(spec)) {
    const served = new Set(routes.methodsOf(fastify.prefix + url))
    const unserved = fastify.supportedMethods.filter((method) => !served.has(method))
    fastify.route({ method: unserved, url, config: { methodNotAllowed: true }, handler: notFound })
  }
}

export default fp(plantStore, { name: 'plant-store', fastify: '5.x', encapsulate: true })
export { PlantService }
export { MemoryStore } from './stores/memory-store.ts'
export { JsonText } from './json-text.ts'
export { deferChildLoggers } from './request-logger.ts'
export { DEFAULT_EDGE_LIMITS, defaultMaxConnections, edgeServerOptions, guardEdge } from './http-edge.ts'
export { DRAIN_SERVER_OPTIONS, drain } from './lifecycle.ts'
export type { EdgeLimits } from './http-edge.ts'
export type { CreateOutcome, ListOptions, PlantStorage, StoredPlant } from './stores/plant-storage.ts'
export type { WebhookOptions } from './webhooks/dispatcher.ts'
export type { WebhookStorage } from './stores/webhook-storage.ts'
