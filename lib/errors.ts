// Every error this package raises, in one place (@fastify/error style). The
// error handler (error-handler.ts) turns any of them, and Fastify's own, into
// the spec's `Error` body.
import createError from '@fastify/error'

/** Client text quoted in a message is cut to this many characters. */
const QUOTE_LIMIT = 100

/** Text cut to at most `limit` characters (an ellipsis ends a cut one), so that no answer grows with the request. */
export function clip (text: string, limit = QUOTE_LIMIT): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`
}

export const PlantConflictError = createError<[string]>(
  'PLANT_STORE_CONFLICT', 'A plant with id %s exists with other content; it was not changed', 409)

export const PlantNotFoundError = createError<[string]>(
  'PLANT_STORE_NOT_FOUND', 'No plant has id %s', 404)

/**
 * The database cannot take the request now (unreachable, full, shutting
 * down). Nothing was changed; the client may retry after `retryAfter` seconds.
 */
export const StoreUnavailableError = createError<[string]>(
  'PLANT_STORE_UNAVAILABLE', 'The plant database is unavailable (%s); nothing was changed, retry shortly', 503)

/** Seconds a client is asked to wait after a 503. */
export const RETRY_AFTER_SECONDS = 2

export const NotReadyError = createError<[string]>(
  'PLANT_STORE_NOT_READY', 'The service is not ready: %s', 503)

export const TooManyAuthFailuresError = createError<[number]>(
  'PLANT_STORE_TOO_MANY_AUTH_FAILURES', 'Too many failed authentications from this address; retry in %s seconds with a valid token', 429)

export const UnsupportedMediaTypeError = createError<[string]>(
  'PLANT_STORE_UNSUPPORTED_MEDIA_TYPE', 'Unsupported content type "%s": send the body as application/json', 415)

export const UnsupportedCharsetError = createError<[string]>(
  'PLANT_STORE_UNSUPPORTED_CHARSET', 'Unsupported charset "%s": send the body as UTF-8 (charset=utf-8, or no charset)', 415)

export const UnsupportedEncodingError = createError<[string]>(
  'PLANT_STORE_UNSUPPORTED_ENCODING', 'Unsupported Content-Encoding "%s": send the body unencoded', 415)

export const DuplicateHeaderError = createError<[string]>(
  'PLANT_STORE_DUPLICATE_HEADER', 'The request has more than one %s header', 400)

/**
 * The memory the service may hold for requests and answers in progress is
 * taken: bodies arriving or answers leaving slowly on many connections.
 */
export const BusyError = createError(
  'PLANT_STORE_BUSY', 'The service is holding all the memory it may for requests in progress; nothing was changed, retry shortly', 503)

export const PayloadTooLargeError = createError<[number]>(
  'PLANT_STORE_PAYLOAD_TOO_LARGE', 'The request body is larger than the limit of %s bytes', 413)

export const BodyIncompleteError = createError(
  'PLANT_STORE_BODY_INCOMPLETE', 'The request body ended before the length its Content-Length declared', 400)

export const InvalidUtf8Error = createError(
  'PLANT_STORE_INVALID_UTF8', 'The request body is not valid UTF-8', 400)

export const BodyNestedTooDeepError = createError<[number]>(
  'PLANT_STORE_BODY_TOO_DEEP', 'The request body nests arrays and objects deeper than %s levels', 400)

export const BodyRequiredError = createError(
  'PLANT_STORE_BODY_REQUIRED', 'A request body is required: send a JSON document with Content-Type: application/json', 400)

export const InvalidJsonError = createError<[string]>(
  'PLANT_STORE_INVALID_JSON', 'The request body is not valid JSON: %s', 400)

export const MethodNotAllowedError = createError<[string, string, string]>(
  'PLANT_STORE_METHOD_NOT_ALLOWED', 'Method %s is not allowed on %s; allowed: %s', 405)

export const RouteNotFoundError = createError<[string, string, string]>(
  'PLANT_STORE_ROUTE_NOT_FOUND', 'No route for %s %s%s', 404)

// Webhook subscriptions and deliveries.
export const SubscriptionNotFoundError = createError<[string]>(
  'PLANT_STORE_SUBSCRIPTION_NOT_FOUND', 'No webhook subscription has the id %s', 404)

export const DeliveryNotFoundError = createError<[string, string]>(
  'PLANT_STORE_DELIVERY_NOT_FOUND', 'The webhook subscription %s has no delivery %s', 404)

export const SubscriptionLimitError = createError<[number]>(
  'PLANT_STORE_SUBSCRIPTION_LIMIT', 'There are already %s webhook subscriptions, the most there may be: delete one first', 409)

export const WebhookUrlError = createError<[string]>(
  'PLANT_STORE_WEBHOOK_URL', '%s', 400)

export const WebhooksOffError = createError(
  'PLANT_STORE_WEBHOOKS_OFF', 'Webhooks are turned off on this server', 404)

export const MetricsOffError = createError(
  'PLANT_STORE_METRICS_OFF', 'Metrics are turned off on this server', 404)

// Configuration errors stop start-up; they are not HTTP answers.
export const UnknownDatabaseError = createError<[string, string]>(
  'PLANT_STORE_UNKNOWN_DATABASE', 'Unsupported database URL "%s": use one of %s')

export const DatabasePathError = createError<[string]>(
  'PLANT_STORE_DATABASE_PATH', 'The database path %s is a directory: name a file in it, such as file:<directory>/plants.db')

export const DatabaseOpenError = createError<[string, string]>(
  'PLANT_STORE_DATABASE_OPEN', 'Cannot open the database %s: %s')

export const MissingOperationError = createError<[string]>(
  'PLANT_STORE_MISSING_OPERATION', 'The spec names operation "%s" but the service has no method for it')

export const MemoryMaxRecordsError = createError<[string]>(
  'PLANT_STORE_MEMORY_MAX_RECORDS', 'The "memoryMaxRecords" option must be a whole number of at least 1 (got %s)')

export const NoTokensError = createError(
  'PLANT_STORE_NO_TOKENS', 'The "tokens" option needs at least one non-empty token')

// Refusals at the edge of the server, before any route: each is still an
// `Error` answer (http-edge.ts writes them).
export const RequestTimeoutError = createError<[number, number]>(
  'PLANT_STORE_REQUEST_TIMEOUT', 'The request was not received in time: its headers must arrive within %s seconds and all of it within %s seconds', 408)

export const HeadersTooLargeError = createError<[number]>(
  'PLANT_STORE_HEADERS_TOO_LARGE', 'The request line and headers are larger than %s bytes', 431)

export const BadHttpRequestError = createError<[string]>(
  'PLANT_STORE_BAD_HTTP_REQUEST', 'The request is not valid HTTP/1.1 (%s)', 400)

export const MissingHostError = createError(
  'PLANT_STORE_MISSING_HOST', 'An HTTP/1.1 request needs a Host header', 400)

export const InvalidHostError = createError<[string]>(
  'PLANT_STORE_INVALID_HOST', 'The Host header "%s" is no host name, address or port', 400)

export const BadUrlError = createError<[string]>(
  'PLANT_STORE_BAD_URL', 'The URL is not valid: %s', 400)

export const ExpectationFailedError = createError<[string]>(
  'PLANT_STORE_EXPECTATION_FAILED', 'Expect: %s is not supported; only 100-continue is', 417)

export const TooManyConnectionsError = createError<[number]>(
  'PLANT_STORE_TOO_MANY_CONNECTIONS', 'The server is at its limit of %s connections; retry shortly', 503)
