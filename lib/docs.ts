// Swagger UI at <prefix>/docs and the spec, as written, at <prefix>/docs/json.
import swagger from '@fastify/swagger'
import type { StaticDocumentSpec } from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, onRequestHookHandler } from 'fastify'
import { losslessJsonPlugin } from './docs-lossless-json.ts'
import type { OpenApiDocument } from './spec.ts'

export interface DocsOptions {
  spec: OpenApiDocument
  /** When set, the docs need a bearer token too. */
  guard?: onRequestHookHandler | undefined
}

export async function docs (fastify: FastifyInstance, { spec, guard }: DocsOptions): Promise<void> {
  if (guard) fastify.addHook('onRequest', guard)
  // "Try it out" calls the first server: point it at where the service is
  // mounted, relative to the page, so that it works behind any host name.
  const document = { ...spec, servers: [{ url: fastify.prefix || '/', description: 'This server' }] }
  // The document is the spec as parsed, which openapi-types cannot know.
  await fastify.register(swagger, { mode: 'static', specification: { document: document as unknown as StaticDocumentSpec['document'] } })
  await fastify.register(swaggerUi, {
    routePrefix: '/docs',
    // Its page links its assets absolutely: under a prefix they must carry it.
    ...(fastify.prefix && { indexPrefix: fastify.prefix }),
    uiConfig: {
      // Keeps the token from the Authorize dialog across page reloads.
      persistAuthorization: true,
      // (Swagger UI's own DownloadUrl plugin, which a list of plugins
      // replaces, and answers shown with every digit of their ids.)
      plugins: [
        (system: unknown) => (globalThis as unknown as { SwaggerUIBundle: { plugins: { DownloadUrl: (system: unknown) => object } } }).SwaggerUIBundle.plugins.DownloadUrl(system),
        losslessJsonPlugin
      ]
    }
  })
}
