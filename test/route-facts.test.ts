// RouteFacts reads the int64 members of each route's body from its schema
// as Fastify registers the route; a spec whose int64 the body parser
// cannot read exactly fails at start-up.
import t from 'tap'
import type { RouteOptions } from 'fastify'
import { RouteFacts } from '../lib/route-facts.ts'

const INT64 = { type: 'integer', format: 'int64' }
const route = (url: string, body: unknown): RouteOptions => ({ method: 'POST', url, schema: { body }, handler: async () => {} }) as RouteOptions

t.test('top-level int64 members, through allOf and the spec\'s media type', async (t) => {
  const facts = new RouteFacts()
  const a = route('/a', { content: { 'application/json': { schema: { allOf: [{ properties: { id: INT64 } }, { properties: { name: { type: 'string' }, n: INT64 } }] } } } })
  facts.onRoute(a)
  t.same([...a.config!.int64Members!], ['id', 'n'])
  t.equal(a.config!.takesBody, true)
})

t.test('an int64 below the top level fails, however often its schema is shared', async (t) => {
  const facts = new RouteFacts()
  // One nested part shared by several schemas (as $refs resolve), met once
  // through an innocent member and then where it is refused.
  const nested = { type: 'object', properties: { deep: INT64 } }
  const plain = { type: 'object', properties: { text: { type: 'string' } } }
  facts.onRoute(route('/ok', { properties: { id: INT64, a: plain, b: plain } }))
  t.throws(() => facts.onRoute(route('/bad', { properties: { id: INT64, inner: nested } })), /below the top level of a request body \(in "inner"\)/)
  t.throws(() => facts.onRoute(route('/again', { properties: { other: { allOf: [nested] } } })), /below the top level/, 'the second meeting too')
  t.throws(() => facts.onRoute(route('/items', { type: 'array', items: nested })), /must be an object whose top-level properties hold the int64s/)
  t.doesNotThrow(() => facts.onRoute(route('/plain', { properties: { a: plain, b: { allOf: [plain] } } })), 'a shared part without an int64 stays harmless')
})

t.test('JSON-only bodies (when required) and answers are given to Fastify by status alone', async (t) => {
  const facts = new RouteFacts()
  const json = (schema: unknown) => ({ content: { 'application/json': { schema } } })
  const body = { type: 'object', properties: { id: INT64 } }
  const answer = { type: 'object', properties: { name: { type: 'string' } } }
  const text = { content: { 'text/plain': { schema: { type: 'string' } } } }
  const both = { content: { 'application/json': { schema: answer }, 'application/xml': { schema: answer } } }
  const required: RouteOptions = { ...route('/required', json(body)), config: { bodyRequired: true } }
  required.schema!.response = { 200: json(answer), 400: both, 500: text, 204: { description: 'none' } }
  facts.onRoute(required)
  t.same(required.schema!.body, body, 'a required JSON body: its schema')
  t.same([...required.config!.int64Members!], ['id'])
  const response = required.schema!.response as Record<string, unknown>
  t.same(response[200], answer, 'a JSON answer: its schema')
  t.same(response[400], both, 'an answer of two media types keeps them')
  t.same(response[500], text, 'a text answer keeps its media type')
  t.same(response[204], { description: 'none' }, 'an answer without content stays as it is')

  // Fastify skips an optional body's schema by media type when no body
  // came; given by status alone, it would validate the missing one.
  const optional = route('/optional', json(body))
  facts.onRoute(optional)
  t.same(optional.schema!.body, json(body), 'an optional body keeps its media type')
  t.same([...optional.config!.int64Members!], ['id'])
})
