// Traces: with OTEL_EXPORTER_OTLP_ENDPOINT set, the server exports over
// OTLP/HTTP to a collector inside the test. A create is one trace: the
// request's server span, its store span, and the webhook attempt that
// followed, whose traceparent the receiver sees. Log lines name the trace.
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { Test } from 'tap'
import { receiver } from './receiver.ts'
import { start } from './server-process.ts'
import { AUTH, build, until } from './helper.ts'

interface OtlpSpan { traceId: string, spanId: string, parentSpanId?: string, name: string, kind: number, attributes?: Array<{ key: string, value: Record<string, unknown> }> }

/** A collector that keeps every span it is sent (OTLP/HTTP, JSON). */
async function collector (t: Test) {
  const spans: OtlpSpan[] = []
  const services = new Set<string>()
  const server = createServer((request, response) => {
    let body = ''
    request.setEncoding('utf8').on('data', (chunk) => { body += chunk }).on('end', () => {
      const { resourceSpans = [] } = JSON.parse(body) as { resourceSpans?: Array<{ resource?: { attributes?: Array<{ key: string, value: { stringValue?: string } }> }, scopeSpans: Array<{ spans: OtlpSpan[] }> }> }
      for (const { resource, scopeSpans } of resourceSpans) {
        const name = resource?.attributes?.find(({ key }) => key === 'service.name')?.value.stringValue
        if (name !== undefined) services.add(name)
        for (const scope of scopeSpans) spans.push(...scope.spans)
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  }).listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => server.close())
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, services }
}

t.test('a create is one trace: request span, store span with its SQLite wait and commit, webhook attempt; the receiver gets its traceparent; logs carry the ids', async (t) => {
  const otlp = await collector(t)
  const hook = await receiver(t, 204)
  const server = await start(t, {
    PLANT_STORE_TOKENS: 'token',
    LOG_LEVEL: 'info',
    DATABASE_URL: `file:${t.testdir()}/plants.db`,
    OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
    OTEL_SERVICE_NAME: 'plants-under-test',
    OTEL_BSP_SCHEDULE_DELAY: '50',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true'
  })
  const headers = { authorization: 'Bearer token', 'content-type': 'application/json' }
  t.equal((await fetch(`${server.url}/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: hook.url }) })).status, 201)
  t.equal((await fetch(`${server.url}/plants`, { method: 'POST', headers, body: '{"id":9007199254740993,"name":"traced"}' })).status, 200)

  const [delivery] = await hook.waitFor(1)
  const traceparent = String(delivery!.headers.traceparent ?? '')
  t.match(traceparent, /^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/, 'the receiver got a traceparent')
  const traceId = traceparent.split('-')[1]!

  await until(() => otlp.spans.some((span) => span.name === 'plant-store webhook newPlant' && span.traceId === traceId), 'the attempt\'s span exported')
  const trace = otlp.spans.filter((span) => span.traceId === traceId)
  const byId = new Map(trace.map((span) => [span.spanId, span]))
  const root = trace.filter((span) => !span.parentSpanId || !byId.has(span.parentSpanId))
  t.equal(root.length, 1, `one root: ${trace.map((span) => span.name).join(', ')}`)
  t.equal(root[0]!.kind, 2, 'the root is the request\'s server span')
  const store = trace.find((span) => span.name === 'plant-store create')
  t.ok(store, 'a span for the store\'s create')
  const ancestors = (span: OtlpSpan): OtlpSpan[] => span.parentSpanId && byId.has(span.parentSpanId) ? [byId.get(span.parentSpanId)!, ...ancestors(byId.get(span.parentSpanId)!)] : []
  t.ok(ancestors(store!).includes(root[0]!), 'the store span is within the request')
  for (const phase of ['plant-store sqlite wait', 'plant-store sqlite commit']) {
    t.equal(trace.find((span) => span.name === phase)?.parentSpanId, store!.spanId, `${phase}: a child of the store's create`)
  }
  const attempt = trace.find((span) => span.name === 'plant-store webhook newPlant')!
  t.equal(attempt.spanId, traceparent.split('-')[2], 'the receiver\'s parent is the attempt span')
  t.ok(ancestors(attempt).includes(store!), 'the attempt continues the create')
  t.same([...otlp.services], ['plants-under-test'])

  // The request's log line names its trace.
  await until(() => /"route":"\/plants".*"status":200/.test(server.stdout()), 'the request line')
  const line = server.stdout().split('\n').find((row) => row.includes('"msg":"request"') && row.includes('"method":"POST"') && row.includes('"url":"/plants"'))!
  t.match(line, `"trace_id":"${traceId}"`)
  t.match(line, /"span_id":"[0-9a-f]{16}"/)
})

t.test('OTEL_SDK_DISABLED=true: nothing is exported, no traceparent is sent', async (t) => {
  const otlp = await collector(t)
  const hook = await receiver(t, 204)
  const server = await start(t, { PLANT_STORE_TOKENS: 'token', OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_SDK_DISABLED: 'true', OTEL_BSP_SCHEDULE_DELAY: '50', WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' })
  const headers = { authorization: 'Bearer token', 'content-type': 'application/json' }
  await fetch(`${server.url}/webhooks`, { method: 'POST', headers, body: JSON.stringify({ url: hook.url }) })
  await fetch(`${server.url}/plants`, { method: 'POST', headers, body: '{"id":1,"name":"untraced"}' })
  const [delivery] = await hook.waitFor(1)
  t.equal(delivery!.headers.traceparent, undefined)
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.same(otlp.spans, [])
})

t.test('the plugin with tracing: true and no SDK registered: everything works, nothing is traced', async (t) => {
  const app = await build(t, { tracing: true })
  const res = await app.inject({ method: 'POST', url: '/plants', headers: { ...AUTH, 'content-type': 'application/json' }, payload: '{"id":2,"name":"fern"}' })
  t.equal(res.statusCode, 200)
  t.same((await app.inject({ url: '/plants/2', headers: AUTH })).json(), { id: 2, name: 'fern' })
})
