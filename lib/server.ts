#!/usr/bin/env -S node --max-semi-space-size=4
// (A smaller young generation than V8's default keeps the resident memory
// of a busy server near its live data; throughput is unchanged.)
// The standalone server: the one place that reads the environment, handles
// signals and listens. Everything else is the plugin's.
import { randomBytes } from 'node:crypto'
import closeWithGrace from 'close-with-grace'
import Fastify from 'fastify'
import { ConfigError, loadConfig } from './config.ts'
import plantStore from './plugin.ts'

function fail (message: string): never {
  process.stderr.write(`plant-store: ${message}\n`)
  process.exit(1)
}

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

const app = Fastify({
  logger: {
    level: config.logLevel,
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie'], censor: '[redacted]' }
  }
})

try {
  await app.register(plantStore, { tokens, database: config.databaseUrl, bodyLimit: config.bodyLimit })
  await app.ready()
} catch (err) {
  fail(`cannot start: ${(err as Error).message}`)
}

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err) app.log.error({ err }, 'shutting down after an uncaught error')
  else app.log.info({ signal }, 'shutting down')
  await app.close()
})

try {
  const address = await app.listen({ port: config.port, host: config.host })
  app.log.info(`Swagger UI at ${address}/docs`)
} catch (err) {
  fail(`cannot listen on ${config.host}:${config.port}: ${(err as Error).message}`)
}
