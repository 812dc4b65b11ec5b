// The newPlant webhook through the plugin: subscriptions, signed
// deliveries, retries, failures and isolation, against receivers on
// 127.0.0.1 (so private networks are allowed here, and refused in the test
// that says so). Signatures are verified with the standardwebhooks package,
// as a receiver would.
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { ServerResponse } from 'node:http'
import { createServer as createNetServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { setTimeout } from 'node:timers/promises'
import Fastify from 'fastify'
import t from 'tap'
import type { Test } from 'tap'
import { Webhook } from 'standardwebhooks'
import type { FastifyInstance } from 'fastify'
import { AUTH, build, until } from './helper.ts'
import { receiver } from './receiver.ts'
import type { Receiver } from './receiver.ts'
import { MemoryStore } from '../lib/stores/memory-store.ts'
import { MemoryWebhooks } from '../lib/stores/memory-webhooks.ts'
import { WebhookDispatcher } from '../lib/webhooks/dispatcher.ts'
import type { WebhookOptions } from '../lib/webhooks/dispatcher.ts'
import { deliveryId } from '../lib/stores/webhook-storage.ts'

const FAST = { allowPrivateNetworks: true, retryBaseMs: 20, timeoutMs: 1000, maxAttempts: 3 }

async function subscribe (t: Test, app: FastifyInstance, url: string, description?: string) {
  const res = await app.inject({ method: 'POST', url: '/webhooks', headers: AUTH, payload: { url, ...(description !== undefined && { description }) } })
  t.equal(res.statusCode, 201, `subscribed ${url}`)
  return res.json() as { id: string, url: string, secret: string, createdAt: string, description?: string }
}

const create = (app: FastifyInstance, body: string) =>
  app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, 'content-type': 'application/json' }, payload: body })

async function deliveries (app: FastifyInstance, id: string, query = '') {
  const res = await app.inject({ url: `/webhooks/${id}/deliveries${query}`, headers: AUTH })
  return res.json() as Array<{ id: string, plantId: number, status: string, attempts: number, lastStatus?: number, lastError?: string, nextAttemptAt?: string, deliveredAt?: string }>
}

t.test('subscriptions: create, list, get, delete; 404 for what is not there', async (t) => {
  const app = await build(t, { webhooks: FAST })
  const hook = await receiver(t)
  const first = await subscribe(t, app, hook.url, 'inventory sync')
  t.match(first, { id: /^sub_[0-9a-f]{32}$/, url: hook.url, description: 'inventory sync', secret: /^whsec_[A-Za-z0-9+/]{32}$/ })
  t.ok(Math.abs(Date.parse(first.createdAt) - Date.now()) < 60_000, 'createdAt is now')
  const second = await subscribe(t, app, hook.url)
  t.notOk('description' in second)
  t.not(first.secret, second.secret, 'each its own secret')
  t.same((await app.inject({ url: '/webhooks', headers: AUTH })).json(), [first, second], 'oldest first')
  t.same((await app.inject({ url: `/webhooks/${first.id}`, headers: AUTH })).json(), first)
  t.equal((await app.inject({ method: 'DELETE', url: `/webhooks/${first.id}`, headers: AUTH })).statusCode, 204)
  const gone = await app.inject({ url: `/webhooks/${first.id}`, headers: AUTH })
  t.equal(gone.statusCode, 404)
  t.same(gone.json(), { error: 404, message: `No webhook subscription has the id ${first.id}` })
  t.equal((await app.inject({ method: 'DELETE', url: `/webhooks/${first.id}`, headers: AUTH })).statusCode, 404)
  t.equal((await app.inject({ url: `/webhooks/${first.id}/deliveries`, headers: AUTH })).statusCode, 404)
  t.equal((await app.inject({ method: 'POST', url: `/webhooks/${second.id}/deliveries/msg_999/retry`, headers: AUTH })).json().message, `The webhook subscription ${second.id} has no delivery msg_999`)
  t.same((await app.inject({ url: '/webhooks', headers: AUTH })).json(), [second])
})

t.test('bad subscriptions get 400 naming the field; no token, 401', async (t) => {
  const app = await build(t, { webhooks: FAST })
  const cases: Array<[unknown, RegExp]> = [
    [{}, /body must have required property 'url'/],
    [{ url: 'ftp://example.com/x' }, /body\/url must match pattern/],
    [{ url: 'not a url' }, /body\/url/],
    [{ url: `https://example.com/${'a'.repeat(2048)}` }, /body\/url must NOT have more than 2048 characters/],
    [{ url: 'https://example.com/', description: 'd'.repeat(257) }, /body\/description must NOT have more than 256 characters/],
    [{ url: 'https://user:pw@example.com/' }, /body\/url must not hold credentials/],
    [{ url: 'https://example.com/\u0000' }, /body\/url/],
    [{ url: 'https://example.com/', description: '\ud800' }, /body\/description/]
  ]
  for (const [body, message] of cases) {
    const res = await app.inject({ method: 'POST', url: '/webhooks', headers: { ...AUTH, 'content-type': 'application/json' }, payload: JSON.stringify(body) })
    t.equal(res.statusCode, 400, JSON.stringify(body).slice(0, 60))
    t.match(res.json().message, message)
  }
  t.equal((await app.inject({ method: 'POST', url: '/webhooks', headers: { ...AUTH, 'content-type': 'text/plain' }, payload: '{}' })).statusCode, 415)
  const huge = await app.inject({ method: 'POST', url: '/webhooks', headers: { ...AUTH, 'content-type': 'application/json' }, payload: JSON.stringify({ url: 'https://example.com/', description: 'd'.repeat(2 * 1024 * 1024) }) })
  t.equal(huge.statusCode, 413)
  t.equal((await app.inject({ method: 'POST', url: '/webhooks', payload: { url: 'https://example.com/' } })).statusCode, 401)
  t.equal((await app.inject({ url: '/webhooks' })).statusCode, 401)
  t.equal((await app.inject({ url: '/webhooks/sub_nope', headers: AUTH })).statusCode, 400, 'an id of the wrong form')
  const { id } = await subscribe(t, app, 'http://127.0.0.1:9/')
  for (const [url, method] of [[`/webhooks/${id}/deliveries?after=msg_9223372036854775808`, 'GET'], [`/webhooks/${id}/deliveries/msg_9999999999999999999/retry`, 'POST'],
    [`/webhooks/${id}/deliveries?after=msg_0`, 'GET'], [`/webhooks/${id}/deliveries?limit=100000`, 'GET'], [`/webhooks/${id}/deliveries/msg_01/retry`, 'POST']] as const) {
    const res = await app.inject({ method, url, headers: AUTH })
    t.equal(res.statusCode, 400, `${method} ${url}`)
  }
  t.same((await app.inject({ url: `/webhooks/${id}/deliveries?after=msg_999999999999999999`, headers: AUTH })).json(), [], 'the largest id form pages to nothing')
})

t.test('private, loopback and link-local receivers are refused unless allowed', async (t) => {
  const app = await build(t)
  const forms = ['http://127.0.0.1:9/x', 'http://localhost/x', 'http://10.0.0.1/', 'http://[::1]/', 'http://169.254.169.254/latest/meta-data',
    'http://[::ffff:127.0.0.1]/', 'http://0.0.0.0/', 'http://192.168.1.1/', 'http://2130706433/', 'http://0x7f.1/', 'http://017700000001/',
    'http://127.1./', 'http://[::a9fe:a9fe]/', 'http://[::127.0.0.1]/', 'http://[fe80::1]/', 'http://[fd00::1]/', 'http://100.64.0.1/']
  for (const url of forms) {
    const res = await app.inject({ method: 'POST', url: '/webhooks', headers: AUTH, payload: { url } })
    t.equal(res.statusCode, 400, url)
    t.equal(res.json().message, 'body/url must reach a public address: its host is or resolves to a loopback, private or otherwise non-public address (set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it)', `${url}: no address named`)
  }
  const unknown = await app.inject({ method: 'POST', url: '/webhooks', headers: AUTH, payload: { url: 'https://no-such-host.invalid/' } })
  t.equal(unknown.statusCode, 400)
  t.match(unknown.json().message, /^body\/url: its host does not resolve \(ENOTFOUND\)$/)
})

t.test('at most 100 subscriptions: the 101st is a 409', async (t) => {
  const app = await build(t, { webhooks: FAST })
  for (let i = 0; i < 100; i++) {
    t.equal((await app.inject({ method: 'POST', url: '/webhooks', headers: AUTH, payload: { url: `http://127.0.0.1:9/${i}` } })).statusCode, 201)
  }
  const refused = await app.inject({ method: 'POST', url: '/webhooks', headers: AUTH, payload: { url: 'http://127.0.0.1:9/x' } })
  t.equal(refused.statusCode, 409)
  t.match(refused.json().message, /already 100 webhook subscriptions/)
})

t.test('a created plant reaches its subscriber signed, every digit exact; replays and conflicts send nothing', async (t) => {
  const app = await build(t, { webhooks: FAST })
  const hook = await receiver(t)
  const { id, secret } = await subscribe(t, app, hook.url)
  t.equal((await create(app, '{"id":9223372036854775807,"name":"Fern","tag":"green","extra":1}')).statusCode, 200)
  t.equal((await create(app, '{"id":-9223372036854775808,"name":"Ivy"}')).statusCode, 200)
  t.equal((await create(app, '{"id":9223372036854775807,"name":"Fern","tag":"green"}')).statusCode, 200, 'a replay')
  t.equal((await create(app, '{"id":9223372036854775807,"name":"Rose"}')).statusCode, 409, 'a conflict')
  const received = await hook.waitFor(2)
  const bodies = received.map(({ body }) => body).sort()
  t.same(bodies, ['{"id":-9223372036854775808,"name":"Ivy"}', '{"id":9223372036854775807,"name":"Fern","tag":"green"}'])
  for (const { headers, body } of received) {
    t.equal(headers['content-type'], 'application/json')
    t.match(headers['webhook-id'], /^msg_\d+$/)
    t.ok(Math.abs(Number(headers['webhook-timestamp']) - Date.now() / 1000) < 60)
    t.doesNotThrow(() => new Webhook(secret).verify(body, headers as Record<string, string>), 'the signature verifies with standardwebhooks')
    t.throws(() => new Webhook(secret).verify(body.replace('Fern', 'Fern ').replace('Ivy', 'Ivy '), headers as Record<string, string>), 'and not for another body')
  }
  await setTimeout(200)
  t.equal(hook.received.length, 2, 'nothing for the replay and the conflict')
  await until(async () => (await deliveries(app, id)).every(({ status }) => status === 'delivered'), 'both recorded delivered')
  const listed = await deliveries(app, id)
  t.match(listed, [{ status: 'delivered', attempts: 1, lastStatus: 204, deliveredAt: String }, { status: 'delivered', attempts: 1 }])
  t.same(listed.map(({ id }) => id).sort(), received.map(({ headers }) => headers['webhook-id']).sort(), 'the id is the webhook-id the receiver saw')
  const raw = (await app.inject({ url: `/webhooks/${id}/deliveries`, headers: AUTH })).body
  t.match(raw, /"plantId":9223372036854775807/, 'plantId every digit')
  t.same((await deliveries(app, id, `?limit=1&after=${listed[0]!.id}`)).map(({ id }) => id), [listed[1]!.id], 'pages')
})

t.test('a receiver that fails twice gets the same webhook-id three times, then it is delivered', async (t) => {
  const app = await build(t, { webhooks: FAST })
  const hook = await receiver(t)
  hook.answers.push(500, 503)
  const { id, secret } = await subscribe(t, app, hook.url)
  await create(app, '{"id":1,"name":"Fern"}')
  const received = await hook.waitFor(3)
  t.same(new Set(received.map(({ headers }) => headers['webhook-id'])).size, 1, 'one webhook-id on every attempt')
  for (const { body, headers } of received) new Webhook(secret).verify(body, headers as Record<string, string>)
  t.ok(received[2]!.at - received[1]!.at >= received[1]!.at - received[0]!.at - 15, 'the waits grow')
  await until(async () => (await deliveries(app, id))[0]?.status === 'delivered', 'delivered')
  t.match((await deliveries(app, id))[0], { status: 'delivered', attempts: 3, lastStatus: 204 })
  t.notOk('lastError' in (await deliveries(app, id))[0]!)
})

t.test('one that always fails is failed after the last attempt; retry delivers it once it recovers', async (t) => {
  const app = await build(t, { webhooks: FAST })
  const hook = await receiver(t, 500)
  const { id } = await subscribe(t, app, hook.url)
  await create(app, '{"id":1,"name":"Fern"}')
  await until(async () => (await deliveries(app, id))[0]?.status === 'failed', 'failed')
  const [failed] = await deliveries(app, id)
  t.match(failed, { status: 'failed', attempts: 3, lastStatus: 500, lastError: 'the receiver answered 500' })
  t.notOk('nextAttemptAt' in failed!)
  await setTimeout(200)
  t.equal(hook.received.length, 3, 'three attempts in all, no more')
  hook.otherwise = 200
  const retried = await app.inject({ method: 'POST', url: `/webhooks/${id}/deliveries/${failed!.id}/retry`, headers: AUTH })
  t.equal(retried.statusCode, 202)
  t.match(retried.json(), { id: failed!.id, status: 'pending', attempts: 3, nextAttemptAt: String })
  await until(async () => (await deliveries(app, id))[0]?.status === 'delivered', 'delivered after the retry')
  t.equal(hook.received.length, 4, 'one more attempt')
  t.equal(hook.received[3]!.headers['webhook-id'], failed!.id)
})

t.test('a receiver that is down (connection refused) fails with the reason', async (t) => {
  const app = await build(t, { webhooks: { ...FAST, maxAttempts: 1 } })
  const { id } = await subscribe(t, app, 'http://127.0.0.1:9/nothing-listens')
  await create(app, '{"id":1,"name":"Fern"}')
  await until(async () => (await deliveries(app, id))[0]?.status === 'failed', 'failed')
  t.match((await deliveries(app, id))[0], { attempts: 1, lastError: /ECONNREFUSED/ })
})

t.test('a hanging receiver delays neither another subscriber nor creates', async (t) => {
  const app = await build(t, { webhooks: { ...FAST, timeoutMs: 5000 } })
  const hanging = await receiver(t, 'hang')
  const healthy = await receiver(t)
  await subscribe(t, app, hanging.url)
  await subscribe(t, app, healthy.url)
  const started = Date.now()
  for (let i = 1; i <= 20; i++) t.equal((await create(app, `{"id":${i},"name":"p${i}"}`)).statusCode, 200)
  const createsTook = Date.now() - started
  await healthy.waitFor(20, 4000)
  t.ok(Date.now() - started < 4000, `the healthy receiver had all 20 in ${Date.now() - started} ms, before the hanging one's 5 s timeout`)
  t.ok(createsTook < 3000, `20 creates took ${createsTook} ms`)
  t.ok(hanging.received.length <= 16, `at most a quarter of the 64 attempts in flight to the hanging receiver (${hanging.received.length})`)
})

t.test('deleting a subscription stops its pending deliveries', async (t) => {
  const app = await build(t, { webhooks: { ...FAST, retryBaseMs: 200, maxAttempts: 10 } })
  const hook = await receiver(t, 500)
  const { id } = await subscribe(t, app, hook.url)
  await create(app, '{"id":1,"name":"Fern"}')
  await hook.waitFor(1)
  t.equal((await app.inject({ method: 'DELETE', url: `/webhooks/${id}`, headers: AUTH })).statusCode, 204)
  const seen = hook.received.length
  await setTimeout(800)
  t.ok(hook.received.length <= seen + 1, `no more attempts after the delete (${seen} → ${hook.received.length})`)
})

t.test('webhooks: false turns the feature off', async (t) => {
  const app = await build(t, { webhooks: false })
  const res = await app.inject({ url: '/webhooks', headers: AUTH })
  t.equal(res.statusCode, 404)
  t.same(res.json(), { error: 404, message: 'Webhooks are turned off on this server' })
  t.equal((await create(app, '{"id":1,"name":"Fern"}')).statusCode, 200, 'plants still work')
})

t.test('Swagger UI\'s document declares the newPlant webhook', async (t) => {
  const app = await build(t)
  const spec = (await app.inject('/docs/json')).json()
  t.match(spec.webhooks.newPlant.post, { operationId: 'newPlant', requestBody: { content: { 'application/json': { schema: { $ref: '#/components/schemas/NewPlant' } } } } })
  t.same(spec.webhooks.newPlant.post.parameters.map(({ name }: { name: string }) => name), ['webhook-id', 'webhook-timestamp', 'webhook-signature'])
})

t.test('hostile receivers: a redirect is not followed, an endless answer is cut, a non-public address is refused at connection time', async (t) => {
  const target = await receiver(t)
  const hostile = createServer((request, response) => {
    request.resume()
    if (request.url === '/redirect') return response.writeHead(307, { location: target.url }).end()
    // 200, then a body that never ends.
    response.writeHead(200)
    const chunk = Buffer.alloc(64 * 1024, 'x')
    const timer = setInterval(() => response.write(chunk), 1)
    response.on('close', () => clearInterval(timer))
  })
  hostile.listen(0, '127.0.0.1')
  await once(hostile, 'listening')
  t.teardown(() => { hostile.closeAllConnections(); hostile.close() })
  const port = (hostile.address() as AddressInfo).port

  const outcomes = async (allowPrivateNetworks: boolean, urls: string[]) => {
    const storage = new MemoryWebhooks()
    for (const [i, url] of urls.entries()) {
      await storage.subscribe({ id: `sub_${String(i).padStart(32, '0')}`, url, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 100)
    }
    storage.enqueue(1n, '{"id":1,"name":"Fern"}', Date.now())
    const dispatcher = new WebhookDispatcher(storage, { allowPrivateNetworks, maxAttempts: 1, retryBaseMs: 10, timeoutMs: 2000, concurrency: 4 }, Fastify().log)
    dispatcher.start()
    t.teardown(() => dispatcher.stop())
    const all = async () => Promise.all(urls.map(async (_, i) => (await storage.deliveries(`sub_${String(i).padStart(32, '0')}`, { limit: 10 }))![0]!))
    await until(async () => (await all()).every(({ status }) => status !== 'pending'), 'every attempt recorded')
    return all()
  }

  const [redirected, endless] = await outcomes(true, [`http://127.0.0.1:${port}/redirect`, `http://127.0.0.1:${port}/endless`])
  t.match(redirected, { status: 'failed', lastStatus: 307, lastError: 'the receiver answered 307' }, 'a redirect is a failure')
  t.equal(target.received.length, 0, 'and its target is never called')
  t.match(endless, { status: 'delivered', lastStatus: 200 }, 'a 2xx with an endless body is delivered, its body cut')

  const [literal, named] = await outcomes(false, [`http://127.0.0.1:${port}/endless`, `http://localhost:${port}/endless`])
  t.match(literal, { status: 'failed', lastError: 'the host is not a public address' })
  t.match(named, { status: 'failed', lastError: /the host resolves to an address that is not public/ })
})

t.test('a status outside HTTP\'s range is a failed attempt, not a delivery', async (t) => {
  const odd = createNetServer((socket) => {
    socket.on('error', () => {})
    socket.once('data', () => socket.write('HTTP/1.1 099 Odd\r\ncontent-length: 0\r\n\r\n'))
  })
  odd.listen(0, '127.0.0.1')
  await once(odd, 'listening')
  t.teardown(() => odd.close())
  const storage = new MemoryWebhooks()
  const id = `sub_${'0'.repeat(32)}`
  await storage.subscribe({ id, url: `http://127.0.0.1:${(odd.address() as AddressInfo).port}/`, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 100)
  storage.enqueue(1n, '{"id":1,"name":"Fern"}', Date.now())
  const dispatcher = new WebhookDispatcher(storage, { allowPrivateNetworks: true, maxAttempts: 1, retryBaseMs: 10, timeoutMs: 2000, concurrency: 4 }, Fastify().log)
  dispatcher.start()
  t.teardown(() => dispatcher.stop())
  await until(async () => (await storage.deliveries(id, { limit: 1 }))![0]!.status !== 'pending', 'the attempt recorded')
  t.match((await storage.deliveries(id, { limit: 1 }))![0], { status: 'failed', lastError: 'the receiver answered an invalid status (99)' })
})

t.test('at most a quarter of the attempts in flight to one subscription, those in flight counted', async (t) => {
  for (const [concurrency, share] of [[16, 4], [undefined, 16]] as const) {
    t.test(`concurrency ${concurrency ?? 'by default (64)'}: ${share} to one subscription`, async (t) => {
      const app = await build(t, { webhooks: { ...FAST, timeoutMs: 5000, ...(concurrency !== undefined && { concurrency }) } })
      const hook = await receiver(t, 'hang')
      // The first is answered, so that one attempt ends while others are claimed.
      hook.answers.push(204)
      await subscribe(t, app, hook.url)
      for (let i = 1; i <= share * 3; i++) await create(app, `{"id":${i},"name":"p${i}"}`)
      await setTimeout(1000)
      t.ok(hook.received.length <= share + 1, `${hook.received.length} requests: one answered and at most ${share} hanging`)
      t.ok(hook.received.length >= share, 'and the allowance is used')
    })
  }
})

t.test('while requests keep the process busy, a subscription gets a quarter of its share', async (t) => {
  for (const [busy, share] of [[false, 4], [true, 1]] as const) {
    t.test(busy ? 'busy: 1 of a share of 4' : 'not busy: all 4', async (t) => {
      const storage = new MemoryWebhooks()
      const id = `sub_${'2'.repeat(32)}`
      const hook = await receiver(t, 'hang')
      await storage.subscribe({ id, url: hook.url, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 100)
      for (let i = 1; i <= 8; i++) storage.enqueue(BigInt(i), `{"id":${i},"name":"p"}`, Date.now())
      const dispatcher = new WebhookDispatcher(storage, { ...FAST, timeoutMs: 5000, concurrency: 16 }, Fastify().log, undefined, () => busy)
      dispatcher.start()
      t.teardown(() => dispatcher.stop())
      await setTimeout(1000)
      t.equal(hook.received.length, share, `${hook.received.length} attempts in flight`)
    })
  }
})

t.test('while every subscription is at its share, wake-ups make no claim', async (t) => {
  const storage = new MemoryWebhooks()
  const id = `sub_${'3'.repeat(32)}`
  const hook = await receiver(t, 'hang')
  await storage.subscribe({ id, url: hook.url, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 100)
  for (let i = 1; i <= 8; i++) storage.enqueue(BigInt(i), `{"id":${i},"name":"p"}`, Date.now())
  let claims = 0
  const claim = storage.claim.bind(storage)
  storage.claim = async (options) => {
    claims++
    return claim(options)
  }
  // (A base delay of a minute: the poll runs once a second.)
  const dispatcher = new WebhookDispatcher(storage, { ...FAST, retryBaseMs: 60_000, timeoutMs: 5000, concurrency: 16 }, Fastify().log, undefined, () => false)
  dispatcher.start()
  t.teardown(() => dispatcher.stop())
  await hook.waitFor(4, 2000)
  const before = claims
  // As creates do, turn after turn.
  for (let i = 0; i < 20; i++) {
    dispatcher.wake()
    await new Promise(setImmediate)
  }
  t.equal(claims - before, 0, 'no claim while its 4 attempts hang')
  t.equal(hook.received.length, 4)
  // A subscription made here, with a delivery due: looked for at once.
  const other = await receiver(t, 204)
  await storage.subscribe({ id: `sub_${'4'.repeat(32)}`, url: other.url, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 100)
  storage.enqueue(9n, '{"id":9,"name":"p"}', Date.now())
  const started = Date.now()
  dispatcher.subscribed()
  await other.waitFor(1, 2000)
  t.ok(Date.now() - started < 900, `delivered in ${Date.now() - started} ms, before the next poll`)
})

t.test('subscriptions to one receiver never wait for a connection: attempts run out of time only at the receiver', async (t) => {
  // Four subscriptions, a share of 4 each, to a receiver that answers after
  // 500 ms: their 16 attempts at once each have a connection, and finish
  // well within the 1.5 s deadline (on 4 connections, the last would wait
  // 1.5 s for its turn). (The dispatcher alone, never busy: a loaded
  // machine would otherwise shrink the shares while requests arrive.)
  const storage = new MemoryWebhooks()
  const hook = await receiver(t, { status: 204, afterMs: 500 })
  const ids = [1, 2, 3, 4].map((i) => `sub_${String(i).repeat(32)}`)
  for (const [i, id] of ids.entries()) await storage.subscribe({ id, url: `${hook.url}?subscription=${i + 1}`, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 100)
  for (let i = 1; i <= 4; i++) storage.enqueue(BigInt(i), `{"id":${i},"name":"p${i}"}`, Date.now())
  const dispatcher = new WebhookDispatcher(storage, { ...FAST, timeoutMs: 1500, maxAttempts: 1, concurrency: 16 }, Fastify().log, undefined, () => false)
  dispatcher.start()
  t.teardown(() => dispatcher.stop())
  const statuses = async () => (await Promise.all(ids.map((id) => storage.deliveries(id, { limit: 10 })))).flat().map((delivery) => delivery!.status)
  await until(async () => (await statuses()).every((status) => status !== 'pending'), 'every attempt ended')
  t.same(await statuses(), Array(16).fill('delivered'), 'all 16 delivered')
  t.equal(hook.maxOpen, 16, 'all at once')
})

t.test('an attempt past its time fails as "no answer in time"; the slot is free for the next', async (t) => {
  const app = await build(t, { webhooks: { ...FAST, timeoutMs: 300, maxAttempts: 1, concurrency: 4 } })
  const hook = await receiver(t, 204)
  hook.answers.push('hang')
  const { id } = await subscribe(t, app, hook.url)
  const started = Date.now()
  await create(app, '{"id":1,"name":"Fern"}')
  await until(async () => (await deliveries(app, id))[0]?.status === 'failed', 'the first attempt failed')
  t.ok(Date.now() - started >= 300, `after its 300 ms (${Date.now() - started} ms)`)
  t.match((await deliveries(app, id))[0], { attempts: 1, lastError: 'no answer in time' })
  await create(app, '{"id":2,"name":"Ivy"}')
  await until(async () => (await deliveries(app, id)).some((delivery) => delivery.plantId === 2 && delivery.status === 'delivered'), 'the next delivered')
})

t.test('a failing receiver gets one attempt at a time until one succeeds', async (t) => {
  const app = await build(t, { webhooks: { ...FAST, maxAttempts: 3, retryBaseMs: 10, concurrency: 16 } })
  const hook = await receiver(t, { status: 500, afterMs: 100 })
  // The first four attempts (a quarter of 16) go out together; they fail.
  await subscribe(t, app, hook.url)
  for (let i = 1; i <= 8; i++) await create(app, `{"id":${i},"name":"p${i}"}`)
  await hook.waitFor(6)
  hook.maxOpen = 0
  await hook.waitFor(12)
  t.equal(hook.maxOpen, 1, 'after the failures, one at a time')
  hook.otherwise = 204
  await hook.waitFor(16)
  t.ok(hook.maxOpen >= 1)
})

t.test('three hanging receivers leave room for a healthy one from the start', async (t) => {
  const app = await build(t, { webhooks: { ...FAST, timeoutMs: 5000 } })
  const hanging = await Promise.all([receiver(t, 'hang'), receiver(t, 'hang'), receiver(t, 'hang')])
  for (const hook of hanging) await subscribe(t, app, hook.url)
  const healthy = await receiver(t)
  await subscribe(t, app, healthy.url)
  const started = Date.now()
  for (let i = 1; i <= 10; i++) await create(app, `{"id":${i},"name":"p${i}"}`)
  await healthy.waitFor(10, 4000)
  t.ok(Date.now() - started < 4000, `the healthy receiver had all 10 in ${Date.now() - started} ms, before the others' 5 s timeout`)
})

t.test('attempts that end in one turn are recorded in one write', async (t) => {
  // (A SQLite writer then commits them, and the claim that follows, in one transaction.)
  const storage = new MemoryWebhooks()
  const recorded: number[] = []
  const record = storage.record.bind(storage)
  storage.record = async (outcomes) => {
    recorded.push(outcomes.length)
    return record(outcomes)
  }
  // A receiver that answers the four at once, when all four have arrived.
  const held: ServerResponse[] = []
  const server = createServer((request, response) => {
    request.resume().on('end', () => {
      if (held.push(response) === 4) for (const each of held) each.writeHead(204).end()
    })
  }).listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  const id = `sub_${'3'.repeat(32)}`
  await storage.subscribe({ id, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 100)
  for (let i = 1; i <= 4; i++) storage.enqueue(BigInt(i), `{"id":${i},"name":"p"}`, Date.now())
  const dispatcher = new WebhookDispatcher(storage, { ...FAST, concurrency: 16 }, Fastify().log)
  dispatcher.start()
  t.teardown(() => dispatcher.stop())
  await until(() => recorded.length > 0, 'a record')
  t.same(recorded, [4], 'one record of the four outcomes')
  t.same((await storage.deliveries(id, { limit: 10 }))!.map(({ status }) => status), ['delivered', 'delivered', 'delivered', 'delivered'])
})

// A subscription with a share of 4 (concurrency 16), its deliveries
// enqueued, and the claims' and records' sizes as the storage saw them.
async function dispatching (t: Test, hook: Receiver, deliveries: number, options: Partial<WebhookOptions> = {}, busy = () => false) {
  const storage = new MemoryWebhooks()
  const id = `sub_${'5'.repeat(32)}`
  await storage.subscribe({ id, url: hook.url, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 100)
  for (let i = 1; i <= deliveries; i++) storage.enqueue(BigInt(i), `{"id":${i},"name":"p"}`, Date.now())
  const claims: number[] = []
  const records: number[] = []
  const releases: bigint[][] = []
  // The subscriptions each claim counted as held.
  const counted: string[][] = []
  const claim = storage.claim.bind(storage)
  storage.claim = async (claimOptions) => {
    counted.push(Object.keys(claimOptions.held))
    const claimed = await claim(claimOptions)
    if (claimed.length > 0) claims.push(claimed.length)
    return claimed
  }
  const release = storage.release.bind(storage)
  storage.release = async (seqs) => {
    releases.push([...seqs])
    return release(seqs)
  }
  const record = storage.record.bind(storage)
  storage.record = async (outcomes) => {
    records.push(outcomes.length)
    return record(outcomes)
  }
  const dispatcher = new WebhookDispatcher(storage, { ...FAST, timeoutMs: 5000, concurrency: 16, ...options }, Fastify().log, undefined, busy)
  dispatcher.start()
  let stopped: Promise<void> | undefined
  const stop = () => (stopped ??= dispatcher.stop())
  t.teardown(stop)
  const statuses = async () => (await storage.deliveries(id, { limit: 1000 }))!.map(({ status }) => status)
  // What a claim made now would take: deliveries due and not held by a claim.
  const claimable = async () => (await claim({ now: Date.now(), limit: 1000, perSubscription: 1000, held: {}, leaseUntil: Date.now() }))
  return { storage, dispatcher, stop, claims, records, releases, counted, statuses, claimable }
}

t.test('claims run ahead: a subscription holds its share in flight and as many waiting, which start as slots free, with no claim between', async (t) => {
  const hook = await receiver(t, 'hang')
  // The first four are answered after 300 ms; the rest hang.
  hook.answers.push(...Array(4).fill({ status: 204, afterMs: 300 }))
  const { claims } = await dispatching(t, hook, 12)
  await hook.waitFor(4, 2000)
  await setTimeout(100)
  t.same(claims, [8], 'one claim of 8: 4 in flight, 4 waiting for a slot')
  await hook.waitFor(8, 2000)
  t.equal(hook.maxOpen, 4, 'never more than the share in flight')
  t.same(claims.slice(0, 1), [8], 'the waiting four went out as the first four were answered')
  const first = new Set((await hook.waitFor(8)).map(({ headers }) => headers['webhook-id']))
  t.equal(first.size, 8, 'eight deliveries, each once')
})

t.test('hanging receivers hold at most twice the concurrency in claimed deliveries, those waiting included', async (t) => {
  // Six subscriptions, a share of 4 each (concurrency 16), each with ten
  // deliveries, all to a receiver that never answers: each would hold 8
  // (48), but the dispatcher holds 32, 16 of them in flight.
  const storage = new MemoryWebhooks()
  const hook = await receiver(t, 'hang')
  for (let s = 1; s <= 6; s++) await storage.subscribe({ id: `sub_${String(s).repeat(32)}`, url: hook.url, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 100)
  for (let i = 1; i <= 60; i++) storage.enqueue(BigInt(i), `{"id":${i},"name":"p"}`, Date.now())
  let claimed = 0
  const claim = storage.claim.bind(storage)
  storage.claim = async (options) => {
    const taken = await claim(options)
    claimed += taken.length
    return taken
  }
  const dispatcher = new WebhookDispatcher(storage, { ...FAST, timeoutMs: 5000, concurrency: 16 }, Fastify().log, undefined, () => false)
  dispatcher.start()
  t.teardown(() => dispatcher.stop())
  await hook.waitFor(16, 2000)
  await setTimeout(500)
  t.equal(hook.received.length, 16, 'the concurrency in flight')
  t.equal(claimed, 32, 'twice that claimed')
})

t.test('while requests keep the process busy, claims do not run ahead: the quarter share in flight is all', async (t) => {
  const hook = await receiver(t, 'hang')
  const { claims } = await dispatching(t, hook, 12, {}, () => true)
  await hook.waitFor(1, 2000)
  await setTimeout(300)
  t.same(claims, [1], 'one claimed, for the one attempt in flight')
  t.equal(hook.received.length, 1)
})

t.test('a claim waits for room for half a share; the attempts that ended meanwhile are recorded with it', async (t) => {
  // Forty deliveries, a receiver that answers at once: claims of one, each
  // a write of its own, would follow every attempt that ends.
  const hook = await receiver(t, 204)
  const { claims, records, statuses } = await dispatching(t, hook, 40)
  await until(async () => (await statuses()).every((status) => status === 'delivered'), 'all 40 delivered')
  t.equal(claims.reduce((sum, n) => sum + n, 0), 40, 'each claimed once')
  t.ok(claims.slice(0, -1).every((n) => n >= 2), `each claim but the last took half a share or more (${claims.join(' ')})`)
  t.equal(records.reduce((sum, n) => sum + n, 0), 40, 'each attempt recorded once')
})

t.test('a waiting delivery whose claim would lapse before its attempt is over is not attempted: given back, or left to lapse', async (t) => {
  // A share of 1: the second delivery waits while the first hangs for its
  // 1 s. With the clock moved on by that second and the 10 s margin, its
  // claim (two attempts and their margins) would not outlast its own
  // attempt and the margin: another dispatcher may have it by then. It is
  // given back while its claim surely holds for the write (10 s and more
  // left), else left to lapse. Without the jump, it goes.
  for (const [jump, fate] of [[0, 'attempted'], [10_500, 'given back'], [11_500, 'left to lapse']] as const) {
    t.test(`clock moved on by ${jump} ms: ${fate}`, async (t) => {
      const hook = await receiver(t, 'hang')
      const { releases, claimable } = await dispatching(t, hook, 2, { concurrency: 4, timeoutMs: 1000, retryBaseMs: 60_000 })
      await hook.waitFor(1, 2000)
      await setTimeout(100)
      const now = Date.now
      Date.now = () => now() + jump
      t.teardown(() => { Date.now = now })
      await setTimeout(1500)
      const ids = hook.received.map(({ headers }) => headers['webhook-id'])
      if (fate === 'attempted') {
        t.same(ids, [deliveryId(1n), deliveryId(2n)], 'the second went once the first ran out of time')
        t.same(releases, [], 'nothing given back')
      } else if (fate === 'given back') {
        t.same(releases.slice(0, 1), [[2n]], 'the second given back')
      } else {
        t.same(ids, [deliveryId(1n)], 'only the first was attempted')
        t.same(releases, [], 'nothing given back')
        t.same(await claimable(), [], 'the second is still claimed, until its claim lapses')
      }
    })
  }
})

t.test('a delivery retried while it waits for a slot is sent once', async (t) => {
  // A share of 2: 1 and 2 in flight, 3 and 4 waiting. A retry of 4 makes it
  // due again, and the next claim takes it once more.
  const hook = await receiver(t, 'hang')
  hook.answers.push({ status: 204, afterMs: 500 }, { status: 204, afterMs: 500 }, { status: 204, afterMs: 200 }, 'hang')
  const { storage, dispatcher } = await dispatching(t, hook, 4, { concurrency: 8, timeoutMs: 3000 })
  await hook.waitFor(2, 2000)
  await setTimeout(100)
  await storage.retry(`sub_${'5'.repeat(32)}`, 4n, Date.now())
  dispatcher.subscribed()
  await setTimeout(1500)
  // (3 and 4 go out together, in either order.)
  t.same(hook.received.map(({ headers }) => headers['webhook-id']).sort(), [1n, 2n, 3n, 4n].map(deliveryId), 'each sent once')
})

t.test('a poll that read the subscriptions before one was made elsewhere leaves its claimed deliveries alone', async (t) => {
  const hook = await receiver(t, { status: 204, afterMs: 300 })
  // A poll a second, each read of the subscriptions answered 150 ms late.
  const { storage, dispatcher, releases } = await dispatching(t, hook, 0, { concurrency: 4, timeoutMs: 1000, retryBaseMs: 1000 })
  const subscriptions = storage.subscriptions.bind(storage)
  storage.subscriptions = async () => {
    const read = await subscriptions()
    await setTimeout(150)
    return read
  }
  await setTimeout(1050)
  // (The second poll's read has run; its answer is on its way.) Another
  // instance subscribes, two plants are created, this one is woken.
  await storage.subscribe({ id: `sub_${'6'.repeat(32)}`, url: hook.url, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 100)
  for (const id of [1n, 2n]) storage.enqueue(id, `{"id":${id},"name":"p"}`, Date.now())
  dispatcher.wake()
  await hook.waitFor(4, 1500)
  t.pass('all four deliveries sent (2 plants, 2 subscriptions)')
  t.same(releases, [], 'none given back on the poll\'s word')
})

t.test('a failing subscription deleted is no longer counted by claims', async (t) => {
  const hook = await receiver(t, 500)
  const { storage, counted } = await dispatching(t, hook, 1, { concurrency: 4, retryBaseMs: 60_000 })
  const first = `sub_${'5'.repeat(32)}`
  await hook.waitFor(1, 2000)
  await until(async () => (await storage.deliveries(first, { limit: 1 }))![0]!.attempts === 1, 'the failure recorded')
  await storage.unsubscribe(first)
  // (The next poll, 20 ms on, finds it gone.)
  await setTimeout(200)
  const healthy = await receiver(t)
  await storage.subscribe({ id: `sub_${'6'.repeat(32)}`, url: healthy.url, secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 100)
  counted.length = 0
  storage.enqueue(2n, '{"id":2,"name":"p"}', Date.now())
  await healthy.waitFor(1, 2000)
  t.ok(counted.length > 0 && counted.every((ids) => !ids.includes(first)), `claims counted ${JSON.stringify(counted)}`)
})

t.test('a stop gives the waiting deliveries back with those in flight: due again at once, attempts unchanged', async (t) => {
  const hook = await receiver(t, 'hang')
  const { stop, claims, claimable } = await dispatching(t, hook, 2, { concurrency: 4 })
  await hook.waitFor(1, 2000)
  await setTimeout(100)
  t.same(claims, [2], 'one in flight, one waiting')
  await stop()
  t.same((await claimable()).map(({ seq, attempts }) => [seq, attempts]), [[1n, 0], [2n, 0]], 'both claimable again')
  t.equal(hook.received.length, 1, 'the waiting one was never sent')
})

t.test('a store that cannot be claimed from is logged once per outage, not once a poll', async (t) => {
  const lines: Array<{ level: number, msg: string }> = []
  const log = Fastify({ logger: { level: 'info', stream: { write: (line: string) => { lines.push(JSON.parse(line)) } } } }).log
  const storage = new MemoryWebhooks()
  await storage.subscribe({ id: `sub_${'1'.repeat(32)}`, url: 'http://127.0.0.1:9/', secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 10)
  let down = true
  const claim = storage.claim.bind(storage)
  storage.claim = async (options) => {
    if (down) throw new Error('the database is away')
    return claim(options)
  }
  const dispatcher = new WebhookDispatcher(storage, { ...FAST, retryBaseMs: 10, concurrency: 4 }, log)
  dispatcher.start()
  t.teardown(() => dispatcher.stop())
  await setTimeout(300)
  t.same(lines.map(({ msg }) => msg), ['webhook deliveries could not be claimed; trying again every poll'], 'one warning in some 30 polls')
  down = false
  await setTimeout(100)
  t.same(lines.map(({ msg }) => msg).slice(1), ['webhook deliveries can be claimed again'])
})

t.test('with nobody subscribed, creates do not look for deliveries; a subscription is served at once', async (t) => {
  const store = new MemoryStore()
  let claims = 0
  const claim = store.webhooks.claim.bind(store.webhooks)
  store.webhooks.claim = async (options) => {
    claims++
    return claim(options)
  }
  // (A base delay of a minute: the poll runs once a second.)
  const app = await build(t, { database: store, webhooks: { ...FAST, retryBaseMs: 60_000 } })
  await app.ready()
  await setTimeout(50)
  const before = claims
  for (let i = 1; i <= 20; i++) t.equal((await create(app, `{"id":${i},"name":"p${i}"}`)).statusCode, 200)
  t.equal(claims - before, 0, 'no claim for 20 creates')
  const hook = await receiver(t)
  await subscribe(t, app, hook.url)
  const started = Date.now()
  await create(app, '{"id":21,"name":"after"}')
  await hook.waitFor(1, 2000)
  t.ok(Date.now() - started < 900, `delivered in ${Date.now() - started} ms, before the next poll`)
})
