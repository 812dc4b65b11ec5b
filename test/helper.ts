import Fastify from 'fastify'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import type { Test } from 'tap'
import plantStore from '../lib/plugin.ts'
import type { PlantStoreOptions } from '../lib/plugin.ts'
import { contractProblems } from './contract.ts'

export const TOKEN = 'test-token-1'
export const AUTH = { authorization: `Bearer ${TOKEN}` }
export const JSON_TYPE = { 'content-type': 'application/json' }

export interface BuildOptions extends Partial<PlantStoreOptions> {
  prefix?: string
  server?: FastifyServerOptions
}

/**
 * A host app with the plugin registered, closed when the test ends. Every
 * answer of the plugin's routes is checked against the spec (the contract
 * test): each one adds an assertion.
 */
export async function build (t: Test, { server, ...options }: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify(server)
  app.addHook('onSend', async (request, reply, payload) => {
    const url = request.routeOptions.url ?? ''
    const ours = request.url.startsWith(options.prefix ?? '')
    if (ours && !url.includes('/docs') && reply.statusCode !== 204) {
      const problems = contractProblems(request.routeOptions.schema?.operationId as string | undefined, reply.statusCode, String(payload ?? ''))
      t.same(problems, [], `${request.method} ${request.url} → ${reply.statusCode} matches the spec`)
    }
    return payload
  })
  // No overload check unless a test asks for one: a loaded CI machine
  // stalls test processes, and a 503 would then fail unrelated tests.
  await app.register(plantStore, { tokens: [TOKEN], database: 'memory:', overload: false, notFound: true, ...options })
  t.teardown(() => app.close())
  return app
}

/** Waits until `check` holds, polling; fails naming `what` after `timeoutMs`. */
export async function until (check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!await check()) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** JSON text parsed with its `id` members exact, as bigints (JSON.parse's reviver sees each number's source). */
export function parseExactIds (text: string): unknown {
  return JSON.parse(text, (key, value, context?: { source: string }) => key === 'id' ? BigInt(context!.source) : value)
}
