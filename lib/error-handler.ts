// The one place where errors become answers: every error, whoever raised it,
// leaves as the spec's `Error` body, with `error` = the HTTP status code.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify'
import { MethodNotAllowedError, RETRY_AFTER_SECONDS, RouteNotFoundError, UnsupportedMediaTypeError } from './errors.ts'
import type { components } from './api-types.ts'

type ErrorBody = components['schemas']['Error']

export interface ErrorHandlerOptions {
  bodyLimit: number
  realm: string
}

/** Methods allowed on each path of the spec, to tell 405 from 404. */
export interface KnownPath {
  pattern: RegExp
  methods: string[]
}

// Fastify's and bearer-auth's messages, rewritten so that a person knows what
// to change.
function friendlyMessage (error: FastifyError, request: FastifyRequest, { bodyLimit }: ErrorHandlerOptions): string {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE': // a Content-Type header that is no media type at all
      return new UnsupportedMediaTypeError(request.headers['content-type'] ?? '').message
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return `The request body is larger than the limit of ${bodyLimit} bytes`
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
  return function errorHandler (error: FastifyError, request: FastifyRequest, reply: FastifyReply): ErrorBody {
    const status = statusOf(error)
    reply.code(status)
    if (status === 503) {
      // Expected when the database is away or the process overloaded: say
      // so, and when to come back.
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      request.log.warn({ err: error }, 'service unavailable')
      const ours = error.code === 'PLANT_STORE_UNAVAILABLE' || error.code === 'PLANT_STORE_NOT_READY'
      return { error: status, message: ours ? error.message : 'The service is overloaded; retry shortly' }
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
    const message = friendlyMessage(error, request, options)
    request.log.info({ status, code: error.code }, message)
    return { error: status, message }
  }
}

/** `docsUrl`, when the docs are served, is offered to whoever is lost. */
export function createNotFoundHandler (paths: KnownPath[], docsUrl?: string) {
  const hint = docsUrl ? `; the API is described at ${docsUrl}` : ''
  return function notFoundHandler (request: FastifyRequest, reply: FastifyReply): never {
    const path = request.url.split('?', 1)[0] ?? ''
    const known = paths.find(({ pattern }) => pattern.test(path))
    if (known) {
      const allowed = known.methods.join(', ')
      reply.header('allow', allowed)
      throw new MethodNotAllowedError(request.method, path, allowed)
    }
    throw new RouteNotFoundError(request.method, path, hint)
  }
}
