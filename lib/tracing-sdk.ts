// The OpenTelemetry SDK, started by the server (and loaded at all) only when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set:
// spans go out over OTLP/HTTP in batches, @fastify/otel makes a server span
// per request, and the plugin (tracing.ts) its store and webhook spans.
// The exporter reads the standard OTEL_EXPORTER_OTLP_* variables itself
// (endpoint, headers, timeout), as every OpenTelemetry SDK does.
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { context, propagation, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CTraceContextPropagator } from '@opentelemetry/core'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BatchSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace'
import type { FastifyPluginCallback } from 'fastify'

export interface Tracing {
  /** @fastify/otel's plugin: registered on the app before the routes it traces. */
  plugin: FastifyPluginCallback
  /** Sends the spans still held, then stops. */
  shutdown: () => Promise<void>
}

export function startTracing ({ serviceName, scheduleDelayMs }: { serviceName: string, scheduleDelayMs: number }): Tracing {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  propagation.setGlobalPropagator(new W3CTraceContextPropagator())
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [new BatchSpanProcessor({ exporter: new OTLPTraceExporter(), scheduledDelayMillis: scheduleDelayMs })]
  })
  trace.setGlobalTracerProvider(provider)
  // Request and handler spans; a span per hook would cost every request
  // for little to see.
  const instrumentation = new FastifyOtelInstrumentation({ instrumentHooks: false })
  instrumentation.setTracerProvider(provider)
  return { plugin: instrumentation.plugin() as FastifyPluginCallback, shutdown: () => provider.shutdown() }
}
