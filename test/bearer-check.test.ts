// The auth hook's own check of a valid token, ahead of bearer-auth: it may
// only accept what bearer-auth accepts, and a valid token then never waits
// for bearer-auth's promise.
import bearerAuth from '@fastify/bearer-auth'
import fc from 'fast-check'
import Fastify from 'fastify'
import type { FastifyReply, FastifyRequest } from 'fastify'
import t from 'tap'
import type { Test } from 'tap'
import { createAuthHook, createBearerCheck, createTokenCheck } from '../lib/auth.ts'
import type { RequestStep } from '../lib/auth.ts'

const TOKENS = ['first', 'second-token', 'ünïcode']
const check = createTokenCheck(TOKENS)
const accepts = createBearerCheck(check)

// What bearer-auth says of a header, configured as the plugin configures it.
async function bearerAuthSays (t: Test): Promise<(header: string | undefined) => Promise<boolean>> {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(bearerAuth, { keys: [], auth: check, addHook: false, specCompliance: 'rfc6749', verifyErrorLogLevel: false as unknown as 'info' })
  await app.ready()
  const verify = app.verifyBearerAuth!
  return (header) => new Promise((resolve) => {
    const request = { raw: { headers: header === undefined ? {} : { authorization: header } }, log: app.log } as unknown as FastifyRequest
    const reply = { header () { return reply }, code () { return reply }, send () { return reply } } as unknown as FastifyReply
    verify(request, reply, (err?: Error) => resolve(err === undefined))
  })
}

t.test('what the check accepts, bearer-auth accepts; a valid token in any form passes it', async (t) => {
  const says = await bearerAuthSays(t)
  const valid = ['Bearer first', 'bearer second-token', 'BEARER ünïcode', 'BeArEr first', 'Bearer  first', 'Bearer first \t', 'Bearer \tfirst']
  for (const header of valid) {
    t.ok(accepts(header), `accepted at once: ${JSON.stringify(header)}`)
    t.ok(await says(header), `bearer-auth agrees: ${JSON.stringify(header)}`)
  }
  const refused = [undefined, '', 'Bearer', 'Bearer ', 'Bearer firs', 'Bearer firstx', 'Basic first', 'first', 'Bearerfirst', 'Bearer\tfirst',
    'Bearer\u0000first', 'B\u0000arer first', 'Bea\u212Aer first', 'Ｂearer first', 'Bearer\u00a0first']
  for (const header of refused) t.notOk(accepts(header), `left to bearer-auth: ${JSON.stringify(header)}`)
  await fc.assert(fc.asyncProperty(
    fc.oneof(fc.string(), fc.constantFrom(...TOKENS).chain((token) => fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 3 })).map(([scheme, pad]) => `${scheme} ${pad}${token}${pad}`))),
    async (header) => !accepts(header) || await says(header)), { numRuns: 2000 })
})

t.test('a valid token passes without bearer-auth; anything else goes to it, checked once', async (t) => {
  const calls: Array<string | undefined> = []
  const verify: RequestStep = (request, _reply, done) => { calls.push(request.headers.authorization); done(new Error('refused')) }
  let checks = 0
  const counted = (header: string | undefined) => { checks++; return accepts(header) }
  const hook = createAuthHook(verify, undefined, undefined, counted)
  const run = (authorization?: string) => new Promise<Error | undefined>((resolve) => {
    const rawHeaders = authorization === undefined ? [] : ['Authorization', authorization]
    const request = { headers: authorization === undefined ? {} : { authorization }, raw: { rawHeaders }, plantStoreRoute: { operationId: 'createPlant' } } as unknown as FastifyRequest
    checks = 0
    const passes = hook.passes(request)
    t.equal(passes, authorization === 'Bearer first', `passes at once: ${authorization}`)
    if (passes) return resolve(undefined)
    // The refusal path: judged without the token being checked again.
    hook.judge(request, {} as FastifyReply, (err) => {
      t.equal(checks, 1, `its token checked once: ${authorization}`)
      resolve(err)
    })
  })
  t.equal(await run('Bearer first'), undefined, 'a valid token passes')
  t.same(calls, [], 'without asking bearer-auth')
  t.match(await run('Bearer wrong'), { message: 'refused' }, 'an invalid one is bearer-auth\'s to refuse')
  t.match(await run(), { message: 'refused' }, 'and so is none')
  t.same(calls, ['Bearer wrong', undefined])
})
