// Traces, as the plugin makes them when asked (`tracing: true`; the server
// asks when the OpenTelemetry variables are set, tracing-sdk.ts): a span
// for each store operation, the trace context kept with each newPlant
// delivery, and a span for each delivery attempt, its `traceparent` sent to
// the receiver. Only @opentelemetry/api here: without an SDK registered its
// calls do nothing, and without `tracing` none is made.
import { SpanKind, SpanStatusCode, context, propagation, trace } from '@opentelemetry/api'
import type { Span } from '@opentelemetry/api'
import { wrapStore } from './stores/plant-storage.ts'
import type { PlantStorage, StoredPlant, WriteTiming } from './stores/plant-storage.ts'

const tracer = () => trace.getTracer('plant-store')

// The database a store is, as OpenTelemetry's `db.system.name` names it.
const DB_SYSTEM: Record<string, string> = { sqlite: 'sqlite', postgres: 'postgresql', memory: 'other_sql' }

function ended<T> (span: Span, work: Promise<T>): Promise<T> {
  return work.then((value) => {
    span.end()
    return value
  }, (err: Error) => {
    span.recordException(err)
    span.setStatus({ code: SpanStatusCode.ERROR, message: err.message })
    span.end()
    throw err
  })
}

/** The active trace context as a W3C traceparent, if there is one. */
function currentTraceparent (): string | undefined {
  const carrier: Record<string, string> = {}
  propagation.inject(context.active(), carrier)
  return carrier.traceparent
}

/**
 * The store with a span around each plant operation (a child of the
 * request's), and each create given the trace context its deliveries keep.
 * The outbox's own operations (claims, records) are left out: they run on
 * the dispatcher's timer, and would be a trace a second each.
 */
export function tracedStore (store: PlantStorage, name: string): PlantStorage {
  const attributes = { 'db.system.name': DB_SYSTEM[name] ?? name }
  return wrapStore(store, (operation, method) => (...args) => tracer().startActiveSpan(`plant-store ${operation}`, { kind: SpanKind.CLIENT, attributes: { ...attributes, 'db.operation.name': operation } }, (span) => {
    if (operation !== 'create' || args[1] !== undefined) return ended(span, method(...args))
    // A store that commits in batches (SQLite) says when the write's
    // transaction began and ended: the create's wait for it, and the
    // commit, are spans of their own.
    const started = Date.now()
    const timing: WriteTiming = {}
    const parent = context.active()
    const creating = store.create(args[0] as StoredPlant, currentTraceparent(), timing).then((outcome) => {
      const { committing, committed } = timing
      if (committing !== undefined && committed !== undefined) {
        tracer().startSpan('plant-store sqlite wait', { startTime: started, attributes }, parent).end(Math.max(started, committing))
        tracer().startSpan('plant-store sqlite commit', { startTime: committing, attributes }, parent).end(committed)
      }
      return outcome
    })
    return ended(span, creating)
  }))
}

/**
 * Runs one delivery attempt in a span of the trace its create was part of
 * (`traceparent`, kept with the delivery), and gives the attempt the
 * headers that carry that span to the receiver.
 */
export function traceAttempt<T extends { status?: number, error?: string }> (traceparent: string | undefined, url: URL, attempt: (headers: Record<string, string>) => Promise<T>): Promise<T> {
  const parent = traceparent === undefined ? context.active() : propagation.extract(context.active(), { traceparent })
  return tracer().startActiveSpan('plant-store webhook newPlant', {
    kind: SpanKind.CLIENT,
    attributes: { 'http.request.method': 'POST', 'server.address': url.hostname, 'url.scheme': url.protocol.slice(0, -1) }
  }, parent, (span) => {
    const headers: Record<string, string> = {}
    propagation.inject(context.active(), headers)
    return ended(span, attempt(headers).then((result) => {
      if (result.status !== undefined) span.setAttribute('http.response.status_code', result.status)
      if (result.error !== undefined) span.setStatus({ code: SpanStatusCode.ERROR, message: result.error })
      return result
    }))
  })
}

/** The ids of the active span, for a log line (pino's `mixin`). */
export function traceIds (): { trace_id?: string, span_id?: string } {
  const span = trace.getActiveSpan()
  if (span === undefined) return {}
  const { traceId, spanId } = span.spanContext()
  return { trace_id: traceId, span_id: spanId }
}
