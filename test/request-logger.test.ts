import { Writable } from 'node:stream'
import { inspect } from 'node:util'
import t from 'tap'
import Fastify from 'fastify'
import pino from 'pino'
import type { FastifyBaseLogger, FastifyServerOptions } from 'fastify'
import { deferChildLoggers } from '../lib/request-logger.ts'
import { AUTH, build } from './helper.ts'

// A pino logger whose lines are kept, and whose child() calls are counted.
function countingLogger (level: string) {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk, _encoding, callback) {
      lines.push(JSON.parse(String(chunk)))
      callback()
    }
  })
  const logger = pino({ level }, stream)
  let children = 0
  // (Called on whichever logger inherits it: Fastify's root is a child of this one.)
  const child = logger.child
  logger.child = function (this: typeof logger, ...args: Parameters<typeof child>) {
    children++
    return child.apply(this, args)
  } as typeof logger.child
  return { logger: logger as unknown as FastifyBaseLogger, lines, children: () => children }
}

t.test('a request that writes no line at a kept level makes no child logger', async (t) => {
  const { logger, children } = countingLogger('warn')
  const app = await build(t, { server: { loggerInstance: logger } })
  t.ok(deferChildLoggers(app.log))
  await app.ready()
  const before = children()
  for (let i = 0; i < 5; i++) {
    t.equal((await app.inject({ url: '/plants', headers: AUTH })).statusCode, 200)
    // A refused token is logged at info: not kept at warn.
    t.equal((await app.inject({ url: '/plants', headers: { authorization: 'Bearer wrong' } })).statusCode, 401)
  }
  t.equal(children() - before, 0, 'no child() for 10 requests')
})

t.test('a line at a kept level is written by the request\'s child, with its request id', async (t) => {
  const { logger, lines, children } = countingLogger('info')
  const app = await build(t, { server: { loggerInstance: logger, genReqId: () => 'the-id' } })
  deferChildLoggers(app.log)
  t.equal((await app.inject({ url: '/plants', headers: { authorization: 'Bearer wrong' } })).statusCode, 401)
  const unauthorized = lines.filter((line) => line.status === 401)
  t.equal(unauthorized.length, 1, 'the error handler\'s line is written')
  t.equal(unauthorized[0]!.reqId, 'the-id', 'with the request id')
  t.ok(children() >= 1, 'through a child logger')
})

t.test('the lazy logger answers what a logger is asked', async (t) => {
  const { logger } = countingLogger('warn')
  const app = await build(t, { server: { loggerInstance: logger } })
  deferChildLoggers(app.log)
  let seen: { level: string, info: boolean, warn: boolean, grandchild: boolean } | undefined
  app.addHook('onRequest', async (request) => {
    const log = request.log as FastifyBaseLogger & { isLevelEnabled: (level: string) => boolean }
    seen = { level: log.level, info: log.isLevelEnabled('info'), warn: log.isLevelEnabled('warn'), grandchild: typeof log.child({ a: 1 }).warn === 'function' }
  })
  await app.inject({ url: '/plants', headers: AUTH })
  t.same(seen, { level: 'warn', info: false, warn: true, grandchild: true })
})

t.test('a child asked for with a level of its own is made at once, at that level', async (t) => {
  const { logger, lines, children } = countingLogger('warn')
  t.ok(deferChildLoggers(logger))
  const child = logger.child({ reqId: 'r1' }, { level: 'info' })
  t.equal(children(), 1)
  child.info('kept at its own level')
  t.match(lines, [{ msg: 'kept at its own level', reqId: 'r1' }])
  // (Empty options, as Fastify asks for a request's child.)
  const lazy = logger.child({ reqId: 'r2' }, {})
  lazy.info('dropped')
  t.equal(children(), 1, 'nothing made for a line not kept')
  lazy.warn('kept')
  t.equal(children(), 2, 'the lazy one made its child for the kept line only')
  t.match(lines.at(-1), { msg: 'kept', reqId: 'r2' })
  t.equal(lines.length, 2)

  // A route's level: its requests' children are made at that level.
  const app = Fastify({ loggerInstance: logger })
  deferChildLoggers(app.log)
  app.get('/chatty', { logLevel: 'info' }, async (request) => {
    request.log.info('a route line')
    return 'ok'
  })
  t.equal((await app.inject({ url: '/chatty' })).statusCode, 200)
  t.match(lines.find((line) => line.msg === 'a route line'), { reqId: 'req-1', level: 30 })
  await app.close()
})

t.test('the plugin leaves an embedding app\'s logger and child logger factory as they are', async (t) => {
  const { logger, children } = countingLogger('warn')
  const plain = await build(t, { server: { loggerInstance: logger } })
  await plain.ready()
  const before = children()
  await plain.inject({ url: '/plants', headers: AUTH })
  t.equal(children() - before, 1, 'a child per request, as Fastify makes it')

  let made = 0
  const factory: FastifyServerOptions['childLoggerFactory'] = function (parent, bindings, options) {
    made++
    return parent.child(bindings, options)
  }
  const app = await build(t, { server: { loggerInstance: logger, childLoggerFactory: factory } })
  await app.ready()
  await app.inject({ url: '/plants', headers: AUTH })
  t.equal(made, 1, 'the host\'s factory ran for the request')
  t.equal(app.childLoggerFactory, factory)
})

t.test('a logger with levels of its own is left as it is, and so is a child asked for with some', async (t) => {
  const custom = pino({ level: 'warn', customLevels: { audit: 45 } }, new Writable({ write (_chunk, _encoding, callback) { callback() } }))
  const child = custom.child
  t.notOk(deferChildLoggers(custom as unknown as FastifyBaseLogger), 'custom levels: not deferred')
  t.equal(custom.child, child)
  t.notOk(deferChildLoggers({ info () {} } as unknown as FastifyBaseLogger), 'a logger that cannot say its levels: not deferred')

  const { logger, children } = countingLogger('warn')
  deferChildLoggers(logger)
  const audited = logger.child({}, { customLevels: { audit: 45 } } as object) as FastifyBaseLogger & { audit: (msg: string) => void }
  t.equal(children(), 1, 'made at once')
  t.type(audited.audit, 'function')
})

t.test('setBindings and flush reach the request\'s child', async (t) => {
  const { logger, lines } = countingLogger('warn')
  const app = await build(t, { server: { loggerInstance: logger } })
  deferChildLoggers(app.log)
  app.addHook('onRequest', async (request) => {
    const log = request.log as FastifyBaseLogger & { setBindings: (bindings: object) => void, flush: () => void }
    log.setBindings({ tenant: 'a' })
    log.flush()
    log.warn('tagged')
  })
  await app.inject({ url: '/plants', headers: AUTH })
  t.match(lines.find((line) => line.msg === 'tagged'), { tenant: 'a' })
})

t.test('a request\'s logger, serialized or shown, holds nothing of the request', async (t) => {
  const { logger } = countingLogger('warn')
  const app = await build(t, { server: { loggerInstance: logger } })
  deferChildLoggers(app.log)
  let seen: { json: string, shown: string } | undefined
  app.addHook('onRequest', async (request) => {
    // (What a host's log line or debugger would make of it: the lazy
    // logger keeps its parent, the whole root logger.)
    seen = { json: JSON.stringify(request.log), shown: inspect(request.log, { depth: 4 }) }
  })
  t.equal((await app.inject({ url: '/plants', headers: AUTH })).statusCode, 200)
  t.equal(seen?.json, '{}')
  t.equal(seen?.shown, 'LazyChildLogger {}')
})

t.test('a child asked for with no options, or with serializers, is pino\'s own, made at once', async (t) => {
  const { logger, children } = countingLogger('warn')
  deferChildLoggers(logger)
  logger.child({ svc: 'api' })
  t.equal(children(), 1, 'no options: made at once')
  logger.child({ reqId: 'r1' }, { serializers: {} })
  t.equal(children(), 2, 'serializers: made at once')

  // A host's deferred logger's child given to Fastify keeps the host's serializers.
  const lines: Array<Record<string, unknown>> = []
  const host = pino({
    level: 'info',
    serializers: { req: (request: { url: string }) => ({ path: request.url.split('?')[0] }) }
  }, new Writable({
    write (chunk, _encoding, callback) {
      lines.push(JSON.parse(String(chunk)))
      callback()
    }
  }))
  deferChildLoggers(host as unknown as FastifyBaseLogger)
  const app = Fastify({ loggerInstance: host.child({ svc: 'api' }) as unknown as FastifyBaseLogger })
  deferChildLoggers(app.log)
  app.get('/x', async (request) => {
    request.log.info({ req: request }, 'seen')
    return 'ok'
  })
  t.equal((await app.inject({ url: '/x?token=secret' })).statusCode, 200)
  t.same(lines.find((line) => line.msg === 'seen')?.req, { path: '/x' }, 'the host\'s req serializer, not Fastify\'s')
  await app.close()
})

t.test('a logger deferred twice is wrapped once', async (t) => {
  const { logger } = countingLogger('warn')
  t.ok(deferChildLoggers(logger))
  const once = logger.child
  t.ok(deferChildLoggers(logger))
  t.equal(logger.child, once)
  const lazy = logger.child({ reqId: 'r1' }, {})
  t.notOk(deferChildLoggers(lazy), 'a deferred child itself is not deferred again')
})
