// The standalone server: the one place that reads the environment, handles
// signals and listens. Everything else is the plugin's.
import { randomBytes, randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import closeWithGrace from 'close-with-grace'
import Fastify, { LogController } from 'fastify'
import { ConfigError, loadConfig, usage } from './config.ts'
import { defaultMaxConnections, edgeServerOptions, guardEdge } from './http-edge.ts'
import plantStore from './plugin.ts'

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

let config
try {
  config = loadConfig(process.env)
} catch (err) {
  if (err instanceof ConfigError) fail(`configuration error: ${err.message}`)
  throw err
}

let tokens = config.tokens
if (tokens.length === 0) {
  // `npm start` works out of the box; the token goes to the terminal once,
  // never to the log.
  tokens = [randomBytes(24).toString('base64url')]
  process.stderr.write(
    `plant-store: no PLANT_STORE_TOKENS set; this run accepts the generated token\n\n    ${tokens[0]}\n\n` +
    'plant-store: set PLANT_STORE_TOKENS=token1,token2 to choose your own.\n')
}

// A client's request id is kept when it is short and plain; otherwise one
// is made. Either way it is in every log line and answer.
const REQUEST_ID = /^[\w.:-]{1,128}$/
function requestId (request: IncomingMessage): string {
  const given = request.headers['x-request-id']
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
}

const limits = {
  maxConnections: config.maxConnections || defaultMaxConnections(),
  headersTimeout: config.headersTimeout,
  requestTimeout: config.requestTimeout,
  keepAliveTimeout: config.keepAliveTimeout
}

const app = Fastify({
  ...edgeServerOptions(limits),
  logger: {
    level: config.logLevel,
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'], censor: '[redacted]' },
    ...(config.logFormat === 'pretty' && { transport: { target: 'pino-pretty' } })
  },
  genReqId: requestId,
  // One line per request, written below once the answer is sent.
  logController: new LogController({ disableRequestLogging: true }),
  // While closing, requests on open connections are still answered rather
  // than refused with 503: a drain must not turn into errors.
  return503OnClosing: false
})

guardEdge(app, limits)

app.addHook('onResponse', (request, reply, done) => {
  request.log.info({
    method: request.method,
    route: request.routeOptions.url ?? null,
    url: request.url,
    status: reply.statusCode,
    durationMs: Math.round(reply.elapsedTime * 100) / 100
  }, 'request')
  done()
})

try {
  await app.register(plantStore, {
    // The whole app is the plant store's: its 404s too.
    notFound: true,
    tokens,
    database: config.databaseUrl,
    bodyLimit: config.bodyLimit,
    corsOrigins: config.corsOrigins,
    authFailureLimit: config.authFailureLimit === 0 ? false : { max: config.authFailureLimit, timeWindow: config.authFailureWindow },
    overload: { maxEventLoopDelay: config.maxEventLoopDelay, maxRssBytes: config.maxRssMb * 1024 * 1024 },
    writeTimeout: config.writeTimeout,
    maxHeldBytes: config.maxHeldMb * 1024 * 1024
  })
  await app.ready()
} catch (err) {
  fail(`cannot start: ${(err as Error).message}`)
}

// SIGTERM and SIGINT: stop accepting, finish what is in flight, let the
// store commit what it holds and close, then exit 0; past the timeout, exit 1.
closeWithGrace({ delay: config.shutdownTimeout }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'shutting down after an uncaught error')
  else app.log.info({ signal }, 'shutting down')
  // Connections that finish their last request after close() began would
  // stay open, idle, for the keep-alive timeout: close them as they idle.
  const sweep = setInterval(() => app.server.closeIdleConnections(), 100)
  // Halfway to the deadline, connections still sending a request (a slow
  // body) are cut, so that they cannot turn a clean exit into a timeout.
  const cut = setTimeout(() => app.server.closeAllConnections(), config.shutdownTimeout / 2)
  await app.close()
  clearInterval(sweep)
  clearTimeout(cut)
})

try {
  const address = await app.listen({ port: config.port, host: config.host })
  app.log.info(`Swagger UI at ${address}/docs`)
} catch (err) {
  fail(`cannot listen on ${config.host}:${config.port}: ${(err as Error).message}`)
}
