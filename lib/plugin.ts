// The plant store as a Fastify plugin. It is encapsulated on purpose (no
// fastify-plugin): its auth hook, error handler, body parser and validator
// apply to its own routes, never to the host app's.
import bearerAuth from '@fastify/bearer-auth'
import openapiGlue from 'fastify-openapi-glue'
import type { FastifyPluginAsync } from 'fastify'
import { PlantService } from '../service/plant-service.ts'
import { createTokenCheck } from './auth.ts'
import { docs } from './docs.ts'
import { createErrorHandler, createNotFoundHandler } from './error-handler.ts'
import { NoTokensError } from './errors.ts'
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
}

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
  const service = new PlantService(store)

  fastify.setValidatorCompiler(createValidatorCompiler())
  fastify.setErrorHandler(createErrorHandler({ bodyLimit, realm: options.realm ?? 'plant-store' }))
  fastify.setNotFoundHandler(createNotFoundHandler(knownPaths(spec, fastify.prefix),
    options.docs === false ? undefined : `${fastify.prefix}/docs`))

  // JSON only, parsed without losing int64 digits; any other content type
  // is refused with 415 by Fastify itself.
  fastify.removeAllContentTypeParsers()
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

  if (options.docs !== false) {
    await fastify.register(docs, { spec, guard: options.protectDocs ? verifyBearerAuth : undefined })
  }

  await fastify.register(async function api (api) {
    // onRequest: the token is checked before the body is even read.
    api.addHook('onRequest', verifyBearerAuth)
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
