// The standalone server's configuration, read from the environment and
// validated before anything starts. Only the server reads the environment;
// the plugin takes options.
import { envSchema } from 'env-schema'
import type { ErrorObject } from 'ajv'
import { DATABASE_URL_FORMS, DEFAULT_DATABASE_URL, isDatabaseUrl } from './stores/open-store.ts'
import { DEFAULT_BODY_LIMIT } from './plugin.ts'

export interface Config {
  port: number
  host: string
  /** Accepted bearer tokens; empty when none was configured. */
  tokens: string[]
  databaseUrl: string
  logLevel: string
  logFormat: 'json' | 'pretty'
  bodyLimit: number
  shutdownTimeout: number
  corsOrigins: string[]
  authFailureLimit: number
  authFailureWindow: number
  maxEventLoopDelay: number
  maxRssMb: number
  /** 0: derived from the file-descriptor limit. */
  maxConnections: number
  headersTimeout: number
  requestTimeout: number
  keepAliveTimeout: number
  writeTimeout: number
  maxHeldMb: number
}

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

/** Each variable, its schema and meaning: validation and `--help` alike read it. */
export const ENV_SCHEMA = {
  type: 'object',
  properties: {
    PORT: { type: 'integer', minimum: 0, maximum: 65535, default: 3000, description: 'TCP port to listen on' },
    HOST: { type: 'string', minLength: 1, default: '127.0.0.1', description: 'Address to listen on (0.0.0.0 for every interface)' },
    PLANT_STORE_TOKENS: { type: 'string', description: 'Comma-separated bearer tokens the API accepts; when unset, one is generated and printed at start' },
    DATABASE_URL: { type: 'string', minLength: 1, default: DEFAULT_DATABASE_URL, description: `Where plants are kept: ${DATABASE_URL_FORMS.join(', ')}` },
    LOG_LEVEL: { type: 'string', enum: LOG_LEVELS, default: 'info', description: 'Least severe log level written' },
    LOG_FORMAT: { type: 'string', enum: ['json', 'pretty'], default: 'json', description: '`json` lines, or `pretty` for reading in a terminal' },
    BODY_LIMIT: { type: 'integer', minimum: 1, default: DEFAULT_BODY_LIMIT, description: 'Largest accepted request body, in bytes' },
    SHUTDOWN_TIMEOUT: { type: 'integer', minimum: 1, default: 10_000, description: 'Milliseconds a shutdown may take before the process exits anyway (code 1)' },
    CORS_ORIGINS: { type: 'string', description: 'Comma-separated origins allowed to call the API from a browser, or `*`; unset: CORS off' },
    AUTH_FAILURE_LIMIT: { type: 'integer', minimum: 0, default: 10, description: 'Failed authentications per client address and window before 429; 0 turns the limit off' },
    AUTH_FAILURE_WINDOW: { type: 'integer', minimum: 1, default: 60_000, description: 'The window of AUTH_FAILURE_LIMIT, in milliseconds' },
    MAX_EVENT_LOOP_DELAY: { type: 'integer', minimum: 0, default: 1000, description: 'Event-loop delay (ms) past which requests get 503 and /readyz fails; 0 turns it off' },
    MAX_RSS_MB: { type: 'integer', minimum: 0, default: 0, description: 'Resident memory (MB) past which requests get 503 and /readyz fails; 0 turns it off' },
    MAX_CONNECTIONS: { type: 'integer', minimum: 0, default: 0, description: 'Connections open at once; more are answered 503 and closed. 0: the file-descriptor limit (ulimit -n) less 192, at most 10000' },
    HEADERS_TIMEOUT: { type: 'integer', minimum: 1, default: 10_000, description: 'Milliseconds a client has to send the request line and headers (408 after)' },
    REQUEST_TIMEOUT: { type: 'integer', minimum: 1, default: 30_000, description: 'Milliseconds a client has to send the whole request, body included (408 after)' },
    KEEP_ALIVE_TIMEOUT: { type: 'integer', minimum: 1, default: 72_000, description: 'Milliseconds an idle kept-alive connection stays open' },
    WRITE_TIMEOUT: { type: 'integer', minimum: 1, default: 30_000, description: 'Milliseconds a client has to read an answer once it is written; then the connection is closed' },
    MAX_HELD_MB: { type: 'integer', minimum: 1, default: 256, description: 'Memory (MB) the service may hold in all for request bodies being read and answers being written slowly; past it, requests get 503' }
  }
} as const

/** A configuration mistake; its message names the variable. */
export class ConfigError extends Error {}

function describe (error: ErrorObject): string {
  const variable = error.instancePath.slice(1) || String(error.params.missingProperty ?? 'environment')
  const allowed = error.params.allowedValues as unknown[] | undefined
  return `${variable} ${error.message}${allowed ? ` (${allowed.join(', ')})` : ''}`
}

interface RawEnv {
  PORT: number
  HOST: string
  PLANT_STORE_TOKENS?: string
  DATABASE_URL: string
  LOG_LEVEL: string
  LOG_FORMAT: 'json' | 'pretty'
  BODY_LIMIT: number
  SHUTDOWN_TIMEOUT: number
  CORS_ORIGINS?: string
  AUTH_FAILURE_LIMIT: number
  AUTH_FAILURE_WINDOW: number
  MAX_EVENT_LOOP_DELAY: number
  MAX_RSS_MB: number
  MAX_CONNECTIONS: number
  HEADERS_TIMEOUT: number
  REQUEST_TIMEOUT: number
  KEEP_ALIVE_TIMEOUT: number
  WRITE_TIMEOUT: number
  MAX_HELD_MB: number
}

export function loadConfig (env: NodeJS.ProcessEnv): Config {
  // An empty variable counts as unset, as shells and container files often
  // leave them.
  const data = Object.fromEntries(Object.entries(env).filter(([, value]) => value !== ''))
  let raw: RawEnv
  try {
    raw = envSchema<RawEnv>({ schema: structuredClone(ENV_SCHEMA) as never, data, env: false })
  } catch (err) {
    const errors = (err as { errors?: ErrorObject[] }).errors
    throw new ConfigError(errors?.[0] ? describe(errors[0]) : (err as Error).message)
  }

  const tokens = raw.PLANT_STORE_TOKENS === undefined ? [] : raw.PLANT_STORE_TOKENS.split(',').map((token) => token.trim())
  if (raw.PLANT_STORE_TOKENS !== undefined && tokens.some((token) => token === '' || /\s/.test(token))) {
    throw new ConfigError('PLANT_STORE_TOKENS must be a comma-separated list of tokens, none empty and none with white space')
  }
  if (!isDatabaseUrl(raw.DATABASE_URL)) {
    throw new ConfigError(`DATABASE_URL must be one of ${DATABASE_URL_FORMS.join(', ')} (got "${raw.DATABASE_URL}")`)
  }
  if (raw.HEADERS_TIMEOUT > raw.REQUEST_TIMEOUT) {
    throw new ConfigError(`HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT (${raw.HEADERS_TIMEOUT} > ${raw.REQUEST_TIMEOUT})`)
  }
  return {
    port: raw.PORT,
    host: raw.HOST,
    tokens,
    databaseUrl: raw.DATABASE_URL,
    logLevel: raw.LOG_LEVEL,
    logFormat: raw.LOG_FORMAT,
    bodyLimit: raw.BODY_LIMIT,
    shutdownTimeout: raw.SHUTDOWN_TIMEOUT,
    corsOrigins: raw.CORS_ORIGINS?.split(',').map((origin) => origin.trim()).filter(Boolean) ?? [],
    authFailureLimit: raw.AUTH_FAILURE_LIMIT,
    authFailureWindow: raw.AUTH_FAILURE_WINDOW,
    maxEventLoopDelay: raw.MAX_EVENT_LOOP_DELAY,
    maxRssMb: raw.MAX_RSS_MB,
    maxConnections: raw.MAX_CONNECTIONS,
    headersTimeout: raw.HEADERS_TIMEOUT,
    requestTimeout: raw.REQUEST_TIMEOUT,
    keepAliveTimeout: raw.KEEP_ALIVE_TIMEOUT,
    writeTimeout: raw.WRITE_TIMEOUT,
    maxHeldMb: raw.MAX_HELD_MB
  }
}

/** `plant-store --help`: the variables, their defaults and meanings, from ENV_SCHEMA. */
export function usage (): string {
  const rows = Object.entries(ENV_SCHEMA.properties).map(([name, schema]) => {
    const fallback = 'default' in schema ? ` (default: ${schema.default})` : ''
    return `  ${name.padEnd(22)} ${schema.description}${fallback}`
  })
  return [
    'Usage: plant-store [--help]',
    '',
    'Runs the plant store HTTP service: the API, Swagger UI at /docs, health at /healthz and /readyz.',
    'It is configured through environment variables:',
    '',
    ...rows,
    '',
    'Example: PORT=8080 PLANT_STORE_TOKENS=secret DATABASE_URL=file:./data/plants.db plant-store',
    ''
  ].join('\n')
}
