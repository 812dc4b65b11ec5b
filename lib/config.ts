// The standalone server's configuration. Each environment variable is
// declared once below (schema, default, meaning); its type, its validation,
// `--help` and the README's table all come from that declaration, and
// `loadConfig` maps it once to what the server and the plugin take. Only the
// server reads the environment; the plugin takes options.
import { availableParallelism } from 'node:os'
import ipaddr from 'ipaddr.js'
import type { ErrorObject } from 'ajv'
import type { FromSchema } from 'json-schema-to-ts'
import { validate as checkEnv } from './config-check.ts'
import { DEFAULT_AUTH_FAILURE_LIMIT, DEFAULT_BODY_LIMIT, DEFAULT_MAX_EVENT_LOOP_DELAY, DEFAULT_MAX_HELD_BYTES, DEFAULT_MEMORY_MAX_RECORDS, DEFAULT_POOL_SIZE, DEFAULT_WEBHOOKS, DEFAULT_WRITE_TIMEOUT } from './defaults.ts'
import { DEFAULT_EDGE_LIMITS } from './http-edge.ts'
import type { EdgeLimits } from './http-edge.ts'
import type { PlantStoreOptions } from './plugin.ts'
import { DEFAULT_DATABASE_URL, databaseUrlProblem } from './stores/open-store.ts'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
const MB = 1024 * 1024

/** Every variable the server reads: validation, types, `--help` and the README table read this. */
export const ENV_SCHEMA = {
  type: 'object',
  properties: {
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000, description: 'TCP port to listen on' },
    HOST: { type: 'string', minLength: 1, default: '127.0.0.1', description: 'Address to listen on (`0.0.0.0` for every interface)' },
    PLANT_STORE_TOKENS: { type: 'string', description: 'Comma-separated bearer tokens the API accepts. Unset: one is generated at the first start, kept beside the SQLite file (`<file>.token`, readable by its owner only) and printed; with another store, a new one is generated at each start' },
    DATABASE_URL: { type: 'string', minLength: 1, default: DEFAULT_DATABASE_URL, description: 'Where plants are kept: `file:PATH` (SQLite; a relative path is from the working directory), `postgres://user:password@host:port/db` (PostgreSQL), or `memory:` (in the process, gone on exit)' },
    DATABASE_POOL_SIZE: { type: 'integer', minimum: 1, maximum: 1000, default: DEFAULT_POOL_SIZE, description: 'PostgreSQL: connections in each process\'s pool (with `WORKERS`, per worker: keep workers × instances × this under the server\'s `max_connections`)' },
    MEMORY_MAX_RECORDS: { type: 'integer', minimum: 1, default: DEFAULT_MEMORY_MAX_RECORDS, description: 'With `DATABASE_URL=memory:`: plants and webhook delivery records kept at most (the largest take some 2.3 KB each); past it, creates get 503, as from a full disk, until deleted plants or removed subscriptions make room' },
    LOG_LEVEL: { type: 'string', enum: LOG_LEVELS, default: 'info', description: `Least severe log level written: ${LOG_LEVELS.map((level) => `\`${level}\``).join(', ')}` },
    LOG_FORMAT: { type: 'string', enum: ['json', 'pretty'], default: 'json', description: '`json` lines, or `pretty` for reading in a terminal' },
    BODY_LIMIT: { type: 'integer', minimum: 1, default: DEFAULT_BODY_LIMIT, description: 'Largest accepted request body, in bytes' },
    WORKERS: { type: 'string', pattern: '^(auto|[1-9][0-9]{0,2})$', default: '1', description: 'Worker processes sharing the port, each with its own store connection, under a primary that restarts one that dies; `auto`: one per available core' },
    TRUST_PROXY: { type: 'string', minLength: 1, default: 'false', description: 'Which proxies may name the client in `X-Forwarded-For` (for the failed-authentication limit and the log): `false` (none: the connection\'s address), comma-separated addresses or CIDR ranges of the proxies, or `true` (any peer: only when every connection comes through a proxy that overwrites the header)' },
    REDIS_URL: { type: 'string', pattern: '^rediss?://', description: 'Redis (`redis://` or `rediss://`) that keeps failed-authentication counts for every instance and worker sharing it. Unset: each process counts its own. Redis that does not answer lets failures through uncounted (401, not 429)' },
    OTEL_EXPORTER_OTLP_ENDPOINT: { type: 'string', pattern: '^https?://', description: 'OpenTelemetry: the OTLP/HTTP collector traces go to (`http://collector:4318`). Set (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), the server exports a span per request, its store operations and its webhook attempts, and log lines carry `trace_id` and `span_id`; unset, no tracing code runs. The SDK reads the other standard `OTEL_EXPORTER_OTLP_*` variables (headers, timeout) itself' },
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: { type: 'string', pattern: '^https?://', description: 'OpenTelemetry: the full URL traces are sent to (`http://collector:4318/v1/traces`), instead of the endpoint above' },
    OTEL_SERVICE_NAME: { type: 'string', minLength: 1, default: 'plant-store', description: 'OpenTelemetry: the `service.name` of the spans' },
    OTEL_SDK_DISABLED: { type: 'boolean', default: false, description: 'OpenTelemetry: `true` turns tracing off whatever else is set' },
    OTEL_BSP_SCHEDULE_DELAY: { type: 'integer', minimum: 1, maximum: 600_000, default: 5000, description: 'OpenTelemetry: milliseconds between two exports of the spans held' },
    SHUTDOWN_TIMEOUT: { type: 'integer', minimum: 1, default: 10_000, description: 'Milliseconds a graceful shutdown may take before the process exits anyway (code 1)' },
    CORS_ORIGINS: { type: 'string', description: 'Comma-separated origins allowed to call the API from a browser, or `*`. Unset: CORS off' },
    AUTH_FAILURE_LIMIT: { type: 'integer', minimum: 0, default: DEFAULT_AUTH_FAILURE_LIMIT.max, description: 'Failed authentications per client address and window before 429; `0` turns the limit off' },
    AUTH_FAILURE_WINDOW: { type: 'integer', minimum: 1, default: DEFAULT_AUTH_FAILURE_LIMIT.timeWindow, description: 'The window of `AUTH_FAILURE_LIMIT`, in milliseconds' },
    MAX_EVENT_LOOP_DELAY: { type: 'integer', minimum: 0, default: DEFAULT_MAX_EVENT_LOOP_DELAY, description: 'Event-loop delay (ms) past which requests get 503 and `/readyz` fails; `0` turns it off' },
    MAX_RSS_MB: { type: 'integer', minimum: 0, default: 0, description: 'Resident memory (MB) past which requests get 503 and `/readyz` fails, while at least half of it is in use (memory a burst freed but the allocator kept does not count); `0` turns it off' },
    MAX_CONNECTIONS: { type: 'integer', minimum: 0, default: 0, description: 'Connections open at once; more are answered 503 and closed. `0`: the file-descriptor limit (`ulimit -n`) less 192, at most 10,000' },
    HEADERS_TIMEOUT: { type: 'integer', minimum: 1, default: DEFAULT_EDGE_LIMITS.headersTimeout, description: 'Milliseconds a client has to send the request line and headers (408 after)' },
    REQUEST_TIMEOUT: { type: 'integer', minimum: 1, default: DEFAULT_EDGE_LIMITS.requestTimeout, description: 'Milliseconds a client has to send the whole request, body included (408 after); not less than `HEADERS_TIMEOUT`' },
    KEEP_ALIVE_TIMEOUT: { type: 'integer', minimum: 1, default: DEFAULT_EDGE_LIMITS.keepAliveTimeout, description: 'Milliseconds an idle kept-alive connection stays open' },
    WRITE_TIMEOUT: { type: 'integer', minimum: 1, default: DEFAULT_WRITE_TIMEOUT, description: 'Milliseconds a client has to read an answer once it is written; then the connection is closed' },
    MAX_HELD_MB: { type: 'integer', minimum: 1, default: DEFAULT_MAX_HELD_BYTES / MB, description: 'Memory (MB) the service may hold in all for request bodies being read and answers being written slowly; past it, requests get 503' },
    METRICS: { type: 'boolean', default: true, description: 'Serve Prometheus metrics at `/metrics`; `false`: it answers 404 and nothing is counted' },
    METRICS_PUBLIC: { type: 'boolean', default: false, description: 'Serve `/metrics` without a token (only where the port is not reachable from outside); `false`: a bearer token, as the API' },
    WEBHOOKS: { type: 'boolean', default: true, description: 'Serve the newPlant webhook: subscriptions and their deliveries; `false`: the webhook operations answer 404 and nothing is sent (deliveries for subscriptions made earlier are still recorded, and go out once it is on again)' },
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: { type: 'boolean', default: DEFAULT_WEBHOOKS.allowPrivateNetworks, description: 'Allow webhook receivers on loopback, private, link-local and other non-public addresses (tests, local setups); `false` refuses them when subscribing and at every connection' },
    WEBHOOK_MAX_ATTEMPTS: { type: 'integer', minimum: 1, maximum: 100, default: DEFAULT_WEBHOOKS.maxAttempts, description: 'Attempts of one webhook delivery, the first included, before it is `failed`' },
    WEBHOOK_RETRY_BASE_MS: { type: 'integer', minimum: 1, maximum: 3_600_000, default: DEFAULT_WEBHOOKS.retryBaseMs, description: 'Milliseconds to wait after a first failed webhook attempt; each next wait is 4 times longer (±25 % jitter, at most 6 hours)' },
    WEBHOOK_TIMEOUT_MS: { type: 'integer', minimum: 1, maximum: 600_000, default: DEFAULT_WEBHOOKS.timeoutMs, description: 'Milliseconds one webhook attempt may take, connecting included, before it counts as failed' },
    WEBHOOK_CONCURRENCY: { type: 'integer', minimum: 1, maximum: 1000, default: DEFAULT_WEBHOOKS.concurrency, description: 'Webhook attempts in flight at once; a quarter of them at most to one subscription' }
  }
} as const

/** The environment once validated: defaults applied, numbers parsed. */
export type Env = FromSchema<typeof ENV_SCHEMA>

/** What the server runs with: its own settings, its HTTP edge, and the plugin's options. */
export interface ServerConfig {
  port: number
  host: string
  log: { level: Env['LOG_LEVEL'], format: Env['LOG_FORMAT'] }
  shutdownTimeout: number
  /** `maxConnections` 0: derived from the file-descriptor limit when the server starts. */
  edge: EdgeLimits
  /** Worker processes (node:cluster); 1: the server runs alone, no primary. */
  workers: number
  /** Fastify's `trustProxy`. */
  trustProxy: boolean | string[]
  redisUrl?: string
  /** Set when traces are exported (the OTLP endpoint is set, the SDK not disabled). */
  tracing?: { serviceName: string, scheduleDelayMs: number }
  /** `tokens` is empty when none was configured: the server then provides one. */
  plugin: PlantStoreOptions & { tokens: string[], database: string }
}

/** TRUST_PROXY as Fastify takes it: a boolean, or addresses and ranges. */
function trustProxy (value: string): boolean | string[] {
  if (value === 'true' || value === 'false') return value === 'true'
  // (Fastify 5 trusts no hop count: a count cannot tell a proxy from a
  // client that sends as many forwarded addresses.)
  if (/^\d+$/.test(value)) throw new ConfigError(`TRUST_PROXY takes the proxies' addresses, not a hop count: a count cannot tell a proxy from a client (got "${value}")`)
  const addresses = list(value)
  for (const address of addresses) {
    if (!ipaddr.isValid(address) && !isCidr(address)) throw new ConfigError(`TRUST_PROXY must be false, true, or comma-separated IP addresses and CIDR ranges (got "${address}")`)
  }
  return addresses
}

function isCidr (text: string): boolean {
  try {
    ipaddr.parseCIDR(text)
    return true
  } catch {
    return false
  }
}

/** A configuration mistake; its message names the variable and the value. */
export class ConfigError extends Error {}

function describe (error: ErrorObject, data: Record<string, unknown>): string {
  const variable = error.instancePath.slice(1) || String(error.params.missingProperty ?? 'environment')
  const allowed = error.params.allowedValues as unknown[] | undefined
  const given = variable in data ? ` (got "${String(data[variable])}")` : ''
  return `${variable} ${error.message}${allowed ? ` (${allowed.join(', ')})` : ''}${given}`
}

function list (value: string | undefined): string[] {
  return value === undefined ? [] : value.split(',').map((item) => item.trim())
}

export function loadConfig (environment: NodeJS.ProcessEnv): ServerConfig {
  // An empty variable counts as unset, as shells and container files often
  // leave them; only declared variables are read.
  const data = Object.fromEntries(Object.keys(ENV_SCHEMA.properties)
    .filter((name) => environment[name] !== undefined && environment[name] !== '')
    .map((name) => [name, environment[name]]))
  // The check (compiled ahead from ENV_SCHEMA: config-check.ts) turns the
  // strings into the declared types and fills in defaults, in place.
  const env = { ...data } as unknown as Env
  if (!checkEnv(env)) {
    const errors = (checkEnv as unknown as { errors: ErrorObject[] }).errors
    throw new ConfigError(describe(errors[0]!, data))
  }

  const tokens = list(env.PLANT_STORE_TOKENS)
  if (tokens.some((token) => token === '' || /\s/.test(token))) {
    throw new ConfigError('PLANT_STORE_TOKENS must be a comma-separated list of tokens, none empty and none with white space')
  }
  const problem = databaseUrlProblem(env.DATABASE_URL)
  if (problem !== undefined) throw new ConfigError(`DATABASE_URL ${problem}`)
  if (env.HEADERS_TIMEOUT > env.REQUEST_TIMEOUT) {
    throw new ConfigError(`HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT (${env.HEADERS_TIMEOUT} > ${env.REQUEST_TIMEOUT})`)
  }
  const proxies = trustProxy(env.TRUST_PROXY)
  const workers = env.WORKERS === 'auto' ? availableParallelism() : Number(env.WORKERS)
  if (workers > 1 && env.DATABASE_URL === 'memory:') throw new ConfigError('WORKERS above 1 needs a shared database: with DATABASE_URL=memory: each worker would keep plants of its own')
  return {
    port: env.PORT,
    host: env.HOST,
    workers,
    trustProxy: proxies,
    ...(env.REDIS_URL !== undefined && { redisUrl: env.REDIS_URL }),
    ...((env.OTEL_EXPORTER_OTLP_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) !== undefined && !env.OTEL_SDK_DISABLED && {
      tracing: { serviceName: env.OTEL_SERVICE_NAME, scheduleDelayMs: env.OTEL_BSP_SCHEDULE_DELAY }
    }),
    log: { level: env.LOG_LEVEL, format: env.LOG_FORMAT },
    shutdownTimeout: env.SHUTDOWN_TIMEOUT,
    edge: {
      maxConnections: env.MAX_CONNECTIONS,
      headersTimeout: env.HEADERS_TIMEOUT,
      requestTimeout: env.REQUEST_TIMEOUT,
      keepAliveTimeout: env.KEEP_ALIVE_TIMEOUT
    },
    plugin: {
      // The standalone server owns the whole app, its 404s too.
      notFound: true,
      tokens,
      database: env.DATABASE_URL,
      bodyLimit: env.BODY_LIMIT,
      corsOrigins: list(env.CORS_ORIGINS).filter(Boolean),
      authFailureLimit: env.AUTH_FAILURE_LIMIT === 0 ? false : { max: env.AUTH_FAILURE_LIMIT, timeWindow: env.AUTH_FAILURE_WINDOW },
      overload: { maxEventLoopDelay: env.MAX_EVENT_LOOP_DELAY, maxRssBytes: env.MAX_RSS_MB * MB },
      writeTimeout: env.WRITE_TIMEOUT,
      maxHeldBytes: env.MAX_HELD_MB * MB,
      poolSize: env.DATABASE_POOL_SIZE,
      memoryMaxRecords: env.MEMORY_MAX_RECORDS,
      metrics: env.METRICS && { public: env.METRICS_PUBLIC },
      webhooks: env.WEBHOOKS && {
        allowPrivateNetworks: env.WEBHOOK_ALLOW_PRIVATE_NETWORKS,
        maxAttempts: env.WEBHOOK_MAX_ATTEMPTS,
        retryBaseMs: env.WEBHOOK_RETRY_BASE_MS,
        timeoutMs: env.WEBHOOK_TIMEOUT_MS,
        concurrency: env.WEBHOOK_CONCURRENCY
      }
    }
  }
}

type Variable = { description: string, default?: string | number | boolean }
const variables = (): Array<[string, Variable]> => Object.entries(ENV_SCHEMA.properties)

/** `plant-store --help`: the variables, their defaults and meanings. */
export function usage (): string {
  const plain = (text: string) => text.replaceAll('`', '')
  const rows = variables().map(([name, schema]) => {
    const fallback = schema.default === undefined ? '' : ` (default: ${schema.default})`
    return `  ${name.padEnd(22)} ${plain(schema.description)}${fallback}`
  })
  return [
    'Usage: plant-store [--help]',
    '',
    'Runs the plant store HTTP service: the API, Swagger UI at /docs, health at /healthz and /readyz.',
    'It is configured through environment variables (an empty one counts as unset):',
    '',
    ...rows,
    '',
    'Example: PORT=8080 PLANT_STORE_TOKENS=secret DATABASE_URL=file:./data/plants.db plant-store',
    ''
  ].join('\n')
}

/** The README's configuration table (`npm run generate` writes it; a test checks it). */
export function configurationTable (): string {
  const rows = variables().map(([name, schema]) =>
    `| \`${name}\` | ${schema.default === undefined ? 'unset' : `\`${schema.default}\``} | ${schema.description} |`)
  return ['| Variable | Default | Meaning |', '|---|---|---|', ...rows].join('\n')
}
