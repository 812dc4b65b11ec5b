// Instances that act as one: the failed-authentication limit shared through
// Redis (127.0.0.1:6379 here), failing open when Redis is away, and
// TRUST_PROXY deciding whether X-Forwarded-For names the client. Every test
// counts under client addresses of its own, so that test files sharing the
// Redis never share a count.
import { randomInt } from 'node:crypto'
import Fastify from 'fastify'
import { Redis } from 'ioredis'
import type { RedisOptions } from 'ioredis'
import t from 'tap'
import type { Test } from 'tap'
import { build, until } from './helper.ts'
import { failureKey } from '../lib/auth.ts'
import { start } from './server-process.ts'
import { tcpProxy } from './tcp-proxy.ts'

const REDIS = { host: '127.0.0.1', port: 6379 }

async function redisSkip (): Promise<string | false> {
  const probe = new Redis({ ...REDIS, lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 1000 })
  try {
    await probe.connect()
    await probe.ping()
    return false
  } catch (err) {
    const reason = `Redis is not reachable at 127.0.0.1:6379 (${(err as Error).message})`
    // CI starts one: there, a missing Redis is a failure, not a skip.
    if (process.env.PLANT_STORE_REQUIRE_REDIS === '1') throw new Error(reason)
    return reason
  } finally {
    probe.disconnect()
  }
}
const REDIS_SKIP = await redisSkip()

/** An address nobody else in this run counts under. */
const someAddress = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`

function client (t: Test, options: RedisOptions = {}): Redis {
  const redis = new Redis({ ...REDIS, enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 500, ...options })
  redis.on('error', () => {})
  t.teardown(() => redis.disconnect())
  return redis
}

async function ready (redis: Redis): Promise<void> {
  if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve))
}

t.test('plugin: two apps sharing a Redis share one failure count per client address', { skip: REDIS_SKIP }, async (t) => {
  const redis = client(t)
  await ready(redis)
  const limit = { max: 4, timeWindow: 60_000 }
  const a = await build(t, { redis, authFailureLimit: limit })
  const b = await build(t, { redis, authFailureLimit: limit })
  const remoteAddress = someAddress()
  const statuses = []
  for (let i = 0; i < 6; i++) {
    const app = i % 2 === 0 ? a : b
    statuses.push((await app.inject({ url: '/plants', remoteAddress, headers: { authorization: 'Bearer wrong' } })).statusCode)
  }
  t.same(statuses, [401, 401, 401, 401, 429, 429], 'the limit is 4 in all, not 4 per app')
  t.equal((await b.inject({ url: '/plants', remoteAddress, headers: { authorization: 'Bearer test-token-1' } })).statusCode, 200, 'a valid token still passes')
  t.equal((await a.inject({ url: '/plants', remoteAddress: someAddress(), headers: { authorization: 'Bearer wrong' } })).statusCode, 401, 'another address has its own count')
  t.ok(await redis.exists(`plant-store:auth-failures:${remoteAddress}`), 'the count is kept in Redis under the plugin\'s name space')
})

t.test('plugin: Redis going away lets failures through uncounted (401, at once), valid tokens pass, the metric and the log say so; back, it counts again', { skip: REDIS_SKIP }, async (t) => {
  const proxy = await tcpProxy(REDIS.host, REDIS.port)
  t.teardown(() => proxy.close())
  const redis = client(t, { port: proxy.port, retryStrategy: () => 50 })
  await ready(redis)
  const lines: string[] = []
  const app = Fastify({ logger: { level: 'info', stream: { write: (line: string) => { lines.push(line) } } } })
  await app.register((await import('../lib/plugin.ts')).default, { tokens: ['good'], database: 'memory:', overload: false, redis, authFailureLimit: { max: 2, timeWindow: 60_000 } })
  t.teardown(() => app.close())
  const remoteAddress = someAddress()
  const bad = async () => (await app.inject({ url: '/plants', remoteAddress, headers: { authorization: 'Bearer wrong' } })).statusCode

  await proxy.cut()
  const started = Date.now()
  const statuses = []
  for (let i = 0; i < 5; i++) statuses.push(await bad())
  t.same(statuses, [401, 401, 401, 401, 401], 'uncounted: never 429, never 500')
  t.ok(Date.now() - started < 5 * 600, `answered within the command timeout each (${Date.now() - started} ms for 5)`)
  t.equal((await app.inject({ url: '/plants', remoteAddress, headers: { authorization: 'Bearer good' } })).statusCode, 200)
  const metrics = (await app.inject({ url: '/metrics', headers: { authorization: 'Bearer good' } })).body
  t.match(metrics, /^plant_store_auth_limit_errors_total 5$/m)
  t.equal(lines.filter((line) => line.includes('cannot count')).length, 1, 'one warning, not one per request')

  await proxy.restore()
  await ready(redis)
  const after = []
  for (let i = 0; i < 3; i++) after.push(await bad())
  t.same(after, [401, 401, 429], 'counting again')
  t.equal(lines.filter((line) => line.includes('counts again')).length, 1)
})

t.test('server: REDIS_URL shares the limit between two instances', { skip: REDIS_SKIP }, async (t) => {
  const env = { PLANT_STORE_TOKENS: 'good', REDIS_URL: 'redis://127.0.0.1:6379', AUTH_FAILURE_LIMIT: '3', TRUST_PROXY: '127.0.0.1', LOG_LEVEL: 'warn' }
  const [one, two] = await Promise.all([start(t, env), start(t, env)])
  const forwarded = someAddress()
  const statuses = []
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`${(i % 2 === 0 ? one : two)!.url}/plants`, { headers: { authorization: 'Bearer wrong', 'x-forwarded-for': forwarded } })
    statuses.push(res.status)
  }
  t.same(statuses, [401, 401, 401, 429, 429])
})

t.test('server: Redis down at start: it starts, says so, and answers bad tokens 401', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: 'good', REDIS_URL: 'redis://127.0.0.1:1', AUTH_FAILURE_LIMIT: '1' })
  const statuses = []
  for (let i = 0; i < 3; i++) statuses.push((await fetch(`${server.url}/plants`, { headers: { authorization: 'Bearer wrong' } })).status)
  t.same(statuses, [401, 401, 401])
  t.equal((await fetch(`${server.url}/plants`, { headers: { authorization: 'Bearer good' } })).status, 200)
  t.match(server.stdout(), /Redis does not answer yet/)
})

t.test('TRUST_PROXY unset: X-Forwarded-For is ignored; a client cannot dodge the limit with invented addresses', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: 'good', AUTH_FAILURE_LIMIT: '2' })
  const statuses = []
  for (let i = 0; i < 4; i++) {
    statuses.push((await fetch(`${server.url}/plants`, { headers: { authorization: 'Bearer wrong', 'x-forwarded-for': someAddress() } })).status)
  }
  t.same(statuses, [401, 401, 429, 429])
  // (A request's line is written once its answer is sent: it may reach the pipe after the answer.)
  // (Readiness polls are logged too: only the lines of /plants are counted.)
  await until(() => server.stdout().split('\n').filter((line) => line.includes('"msg":"request"') && line.includes('"url":"/plants"')).length >= 4, 'the four request lines')
  t.match(server.stdout(), /"client":"127\.0\.0\.1"/, 'the log names the connection\'s address')
  t.notMatch(server.stdout(), /"client":"10\./)
})

t.test('TRUST_PROXY=127.0.0.1: the forwarded address is the client, for the limit and the log', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: 'good', AUTH_FAILURE_LIMIT: '2', TRUST_PROXY: '127.0.0.1' })
  const [first, second] = [someAddress(), someAddress()]
  const bad = async (address: string) => (await fetch(`${server.url}/plants`, { headers: { authorization: 'Bearer wrong', 'x-forwarded-for': address } })).status
  t.same([await bad(first), await bad(first), await bad(first)], [401, 401, 429])
  t.equal(await bad(second), 401, 'another client behind the same proxy is not throttled')
  // (The request's log line is written once its answer is sent: it may
  // reach the pipe after the client has the answer.)
  await until(() => server.stdout().includes(`"client":"${first}"`), `a log line naming ${first}`)
  // The proxy's own address is trusted; one a client adds before it is not.
  t.equal(await bad(`${first}, ${second}`), 401, 'the right-most untrusted address counts: here the second client, with one failure so far')
})

t.test('the failure key: an IPv6 client is counted by its /64; text that is no address counts under the connection\'s', async (t) => {
  const app = await build(t, { authFailureLimit: { max: 2, timeWindow: 60_000 } })
  const bad = async (remoteAddress: string) => (await app.inject({ url: '/plants', remoteAddress, headers: { authorization: 'Bearer wrong' } })).statusCode
  t.same([await bad('2001:db8:1:2::1'), await bad('2001:db8:1:2::ffff'), await bad('2001:db8:1:2:aaaa::9')], [401, 401, 429], 'one /64, one count')
  t.equal(await bad('2001:db8:1:3::1'), 401, 'the next /64 is another client')
  t.equal(failureKey({ ip: '::ffff:10.1.2.3', socket: {} } as never), '10.1.2.3', 'an IPv4-mapped address is the IPv4 client')
  t.equal(failureKey({ ip: 'x'.repeat(10_000), socket: { remoteAddress: '10.9.9.9' } } as never), '10.9.9.9', 'a made-up forwarded value is not a key')
})
