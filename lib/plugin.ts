// The plant store as a Fastify plugin. It is encapsulated on purpose (no
// fastify-plugin): its auth hook, error handler, body parser and validator
// apply to its own routes, never to the host app's.
import bearerAuth from '@fastify/bearer-auth'
import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import underPressure from '@fastify/under-pressure'
import openapiGlue from 'fastify-openapi-glue'
import type { FastifyPluginAsync } from 'fastify'
import { PlantService } from '../service/plant-service.ts'
import { createAuthHook, createTokenCheck } from './auth.ts'
import type { FailureLimit } from './auth.ts'
import { docs } from './docs.ts'
import { createErrorHandler, createNotFoundHandler } from './error-handler.ts'
import { NoTokensError, NotReadyError, UnsupportedMediaTypeError } from './errors.ts'
import { parseJsonBody } from './json-body.ts'
import { createOperationResolver, knownPaths } from './operations.ts'
import { loadSpec } from './spec.ts'
import { DEFAULT_DATABASE_URL, openStore } from './stores/open-store.ts'
import type { PlantStore } from './stores/plant-store.ts'
import { createValidatorCompiler } from './validation.ts'

export interface PlantStoreOptions {
  /** Bearer tokens the API accepts; at least one. */
  tokens: readonly string[]
  /**
   * Where plants are kept: a database URL (`file:PATH` for SQLite,
   * `postgres://…`, `memory:`), or a store instance. A store the plugin opens
   * from a URL is closed with the app; an instance passed in stays the
   * caller's to close. Default `file:./data/plants.db`.
   */
  database?: string | PlantStore
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
  overload?: { maxEventLoopDelay?: number, maxRssBytes?: number, maxHeapUsedBytes?: number, sampleInterval?: number } | false
  /** Origins allowed to call the API from a browser (@fastify/cors). Default none. */
  corsOrigins?: readonly string[]
}

export const DEFAULT_AUTH_FAILURE_LIMIT: FailureLimit = { max: 10, timeWindow: 60_000 }

export const DEFAULT_BODY_LIMIT = 1024 * 1024

const plantStore: FastifyPluginAsync<PlantStoreOptions> = async function plantStore (fastify, options) {
  const tokens = (options.tokens ?? []).filter((token) => token.length > 0)
  if (tokens.length === 0) throw new NoTokensError()
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT
  const spec = await loadSpec()

  let store: PlantStore
  if (typeof options.database === 'object') {
    store = options.database
  } else {
    store = await openStore(options.database ?? DEFAULT_DATABASE_URL, { log: fastify.log })
    fastify.addHook('onClose', () => store.close())
  }
  // Not ready while closing (so that load balancers stop sending traffic)
  // or overloaded.
  let closing = false
  fastify.addHook('preClose', (done) => { closing = true; done() })
  const service = new PlantService(store, () => {
    if (closing) return 'shutting down'
    if (options.overload !== false && fastify.isUnderPressure()) return 'overloaded'
    return undefined
  })

  // Every answer names its request, so that a client can quote it and the
  // log can be searched for it.
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id)
    done()
  })
  // While closing, clients are told to go elsewhere for their next request:
  // a kept-alive connection would otherwise hold the shutdown open.
  fastify.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close')
    done(null, payload)
  })

  fastify.setValidatorCompiler(createValidatorCompiler())
  fastify.setErrorHandler(createErrorHandler({ bodyLimit, realm: options.realm ?? 'plant-store' }))
  fastify.setNotFoundHandler(createNotFoundHandler(knownPaths(spec, fastify.prefix),
    options.docs === false ? undefined : `${fastify.prefix}/docs`))

  // JSON only, parsed without losing int64 digits. Another content type is
  // refused (415) where the operation takes a body, and its body ignored
  // where the operation takes none (a DELETE sent with a stray body).
  fastify.removeAllContentTypeParsers()
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (request, _body, done) => {
    if (request.routeOptions.schema?.body === undefined) done(null, undefined)
    else done(new UnsupportedMediaTypeError(request.headers['content-type'] ?? ''), undefined)
  })
  fastify.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (request, body, done) => {
    // Clients often send the JSON content type on every request: an empty
    // body is no error for an operation that takes none (a DELETE).
    if (body === '' && request.routeOptions.schema?.body === undefined) {
      done(null, undefined)
      return
    }
    let parsed: unknown
    try {
      parsed = parseJsonBody(body as string)
    } catch (err) {
      done(err as Error, undefined)
      return
    }
    done(null, parsed)
  })

  // bearer-auth only decorates here; the hooks below decide what it guards.
  await fastify.register(bearerAuth, {
    keys: [],
    auth: createTokenCheck(tokens),
    addHook: false,
    // Accept the scheme name in any case, as RFC 7235 says.
    specCompliance: 'rfc6749',
    verifyErrorLogLevel: 'info'
  })
  const verifyBearerAuth = fastify.verifyBearerAuth!

  const failureLimit = options.authFailureLimit ?? DEFAULT_AUTH_FAILURE_LIMIT
  if (failureLimit !== false) await fastify.register(rateLimit, { global: false })

  if (options.overload !== false) {
    await fastify.register(underPressure, {
      maxEventLoopDelay: 1000,
      ...options.overload,
      // Health checks always answer: /readyz reports the overload itself.
      pressureHandler: async (request) => {
        if (!request.routeOptions.config.public) throw new NotReadyError('overloaded')
      }
    })
  }

  // Preflight requests carry no token: CORS answers them before any auth.
  if (options.corsOrigins?.length) {
    await fastify.register(cors, {
      origin: options.corsOrigins.includes('*') ? '*' : [...options.corsOrigins],
      exposedHeaders: ['x-request-id', 'retry-after', 'www-authenticate']
    })
  }

  if (options.docs !== false) {
    await fastify.register(docs, { spec, guard: options.protectDocs ? verifyBearerAuth : undefined })
  }

  await fastify.register(async function api (api) {
    // onRequest: the token is checked before the body is even read.
    api.addHook('onRequest', createAuthHook(verifyBearerAuth, failureLimit === false
      ? undefined
      : fastify.createRateLimit({ ...failureLimit })))
    await api.register(openapiGlue, {
      specification: spec,
      operationResolver: createOperationResolver(spec, service)
    })
  })
}

export default plantStore
export { PlantService }
export { MemoryStore } from './stores/memory-store.ts'
export type { CreateOutcome, ListOptions, PlantStore, StoredPlant } from './stores/plant-store.ts'
