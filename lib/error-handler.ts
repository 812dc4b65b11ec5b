// The one place where errors become answers: every error, whoever raised it,
// leaves as the spec's `Error` body, with `error` = the HTTP status code.
// (Errors raised before routing are shaped the same way in http-edge.ts.)
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { MethodNotAllowedError, RETRY_AFTER_SECONDS, RouteNotFoundError, UnsupportedMediaTypeError, clip } from './errors.ts'
import type { components } from './api-types.ts'
import type { RouteFacts } from './route-facts.ts'

type ErrorBody = components['schemas']['Error']

/** The spec's bound on `Error.message`: no answer grows with what the client sent. */
const MAX_MESSAGE = 1024

export interface ErrorHandlerOptions {
  realm: string
}

// Fastify's and bearer-auth's messages, rewritten so that a person knows what
// to change.
function friendlyMessage (error: FastifyError, request: FastifyRequest): string {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': // a Content-Type header that is no media type at all
      return new UnsupportedMediaTypeError(clip(request.headers['content-type'] ?? '')).message
    case 'FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER':
      return 'Missing bearer token: send the header "Authorization: Bearer <token>"'
    case 'FST_BEARER_AUTH_INVALID_AUTHORIZATION_HEADER':
      return 'The bearer token is not accepted: send "Authorization: Bearer <token>" with a valid token'
    default:
      return error.message
  }
}

function statusOf (error: FastifyError): number {
  if (error.validation) return 400
  const status = error.statusCode
  return typeof status === 'number' && status >= 400 && status < 600 ? status : 500
}

export function createErrorHandler (options: ErrorHandlerOptions) {
  const challenge = `Bearer realm="${options.realm}"`
  return function errorHandler (thrown: FastifyError, request: FastifyRequest, reply: FastifyReply): ErrorBody {
    // (A custom store or host hook may reject with anything, null included.)
    const error = typeof thrown === 'object' && thrown !== null ? thrown : new Error(`rejected with ${String(thrown)}`) as FastifyError
    const status = statusOf(error)
    reply.code(status)
    if (status === 503) {
      // Expected when the database is away or the process overloaded: one
      // line in the log (no stack), and when to come back in the answer.
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      const ours = error.code?.startsWith('PLANT_STORE_')
      const message = ours ? error.message : 'The service is overloaded; retry shortly'
      request.log.warn({ status, code: error.code }, message)
      return { error: status, message }
    }
    if (status >= 500) {
      // The details go to the log only: a 5xx message must not reveal internals.
      request.log.error({ err: error }, 'request failed')
      return { error: status, message: `Internal server error; the log has the details under request id ${request.id}` }
    }
    if (status === 401) {
      // RFC 6750 §3: name the error only when a token was actually presented.
      reply.header('www-authenticate', error.code === 'FST_BEARER_AUTH_MISSING_AUTHORIZATION_HEADER'
        ? challenge
        : `${challenge}, error="invalid_token"`)
    }
    const retryAfter = (error as { retryAfter?: number }).retryAfter
    if (retryAfter !== undefined) reply.header('retry-after', String(retryAfter))
    const message = clip(friendlyMessage(error, request), MAX_MESSAGE)
    request.log.info({ status, code: error.code }, message)
    return { error: status, message }
  }
}

/**
 * 405 with `Allow` for a method the plugin does not serve on one of its
 * paths, 404 for a path it does not have. `docsUrl`, when the docs are
 * served, is offered to whoever is lost.
 */
export function createNotFoundHandler (routes: RouteFacts, docsUrl?: string) {
  const hint = docsUrl ? `; the API is described at ${docsUrl}` : ''
  return function notFoundHandler (request: FastifyRequest, reply: FastifyReply): never {
    const path = request.url.split('?', 1)[0] ?? ''
    const allowed = routes.allowedMethods(path)
    if (allowed) {
      reply.header('allow', allowed.join(', '))
      throw new MethodNotAllowedError(clip(request.method), clip(path), allowed.join(', '))
    }
    throw new RouteNotFoundError(clip(request.method), clip(path), hint)
  }
}
