// Binds the spec's operations to the service: the handler types come from
// the generated api-types.ts, and the route table from the spec itself.
import type { FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import type { operations } from './api-types.ts'
import { JsonText } from './json-text.ts'
import { MissingOperationError } from './errors.ts'
import type { OpenApiDocument, OperationObject } from './spec.ts'

/** The operations the service serves: the spec's webhooks (newPlant) are requests it sends, not answers. */
export type OperationId = Exclude<keyof operations, 'newPlant'>

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The spec says `security: []`, or the plugin was told so: no token needed (health checks). */
    public?: boolean
    /** Tagged `operations` (health, readiness, metrics): answered while overloaded, when they matter most. */
    operational?: boolean
    /** The route's operationId (for metrics); none on routes of no operation. */
    operationId?: string
    /** The spec says the request body is required: a request without one is refused before it is read. */
    bodyRequired?: boolean
  }
}

// The body of a request or answer, whatever its one media type (JSON, or text for metrics).
type BodyOf<T> = T extends { content: infer C } ? C[keyof C] : undefined
type Part<T> = [Exclude<T, undefined>] extends [never] ? Record<string, never> : Exclude<T, undefined>
type SuccessOf<R> =
  200 extends keyof R ? BodyOf<R[200]>
    : 201 extends keyof R ? BodyOf<R[201]>
      : 202 extends keyof R ? BodyOf<R[202]>
        : 204 extends keyof R ? void
          : never

/** What a service method receives: the request, validated against the spec. */
export interface OperationRequest<Op extends OperationId> {
  body: operations[Op] extends { requestBody: infer B } ? BodyOf<B> : undefined
  params: Part<operations[Op]['parameters']['path']>
  query: Part<operations[Op]['parameters']['query']>
}

/** What a service method resolves to: the body of the operation's success answer. */
export type OperationResult<Op extends OperationId> = SuccessOf<operations[Op]['responses']>

// The operations whose method may resolve to its answer's JSON text
// instead (json-text.ts): a page of plants, which a database can write.
const JSON_TEXT = ['listPlants'] as const satisfies readonly OperationId[]
const JSON_TEXT_OPERATIONS: ReadonlySet<string> = new Set(JSON_TEXT)
type JsonTextOperation = typeof JSON_TEXT[number]

/** What a JSON answer's text is sent as (Fastify's own type for JSON). */
const JSON_TYPE = 'application/json; charset=utf-8'

/**
 * One method per operationId of the spec. A service that misses one, or
 * takes or returns the wrong shape, does not compile.
 */
export type OperationHandlers = {
  [Op in OperationId]: (request: OperationRequest<Op>) => Promise<OperationResult<Op> | (Op extends JsonTextOperation ? JsonText<OperationResult<Op>> : never)>
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const

interface SpecOperation {
  method: string
  path: string
  operation: OperationObject
}

function specOperations (spec: OpenApiDocument): SpecOperation[] {
  return Object.entries(spec.paths ?? {}).flatMap(([path, item]) =>
    METHODS.flatMap((method) => {
      const operation = item[method]
      return operation ? [{ method, path, operation }] : []
    }))
}

function successStatus (operation: OperationObject): number {
  const codes = Object.keys(operation.responses ?? {}).map(Number).filter((code) => code >= 200 && code < 300)
  return codes.length > 0 ? Math.min(...codes) : 200
}

/** The media type of a success answer that is not JSON (metrics' text), if it is not. */
function successTextType (operation: OperationObject, status: number): string | undefined {
  const response = operation.responses?.[String(status)] as { content?: Record<string, unknown> } | undefined
  const type = Object.keys(response?.content ?? {})[0]
  return type === undefined || type === 'application/json' ? undefined : type
}

/**
 * The operationResolver for fastify-openapi-glue. It checks every operation
 * up front, so that start-up fails when the service lacks a method rather
 * than the first request that needs it.
 */
export function createOperationResolver (spec: OpenApiDocument, service: object, publicOperations: ReadonlySet<string> = new Set()) {
  const routes = new Map<string, RouteOptions>()
  for (const { operation } of specOperations(spec)) {
    const operationId = operation.operationId ?? ''
    const method = (service as Record<string, unknown>)[operationId]
    if (typeof method !== 'function') throw new MissingOperationError(operationId)
    const status = successStatus(operation)
    const textType = successTextType(operation, status)
    routes.set(operationId, {
      config: {
        public: publicOperations.has(operationId) || (Array.isArray(operation.security) && operation.security.length === 0),
        operational: (operation.tags as string[] | undefined)?.includes('operations') === true,
        operationId,
        bodyRequired: operation.requestBody?.required === true
      },
      // (Not async: Fastify sends what the method's promise resolves to, or
      // the error it rejects with. An async handler that sent the answer
      // itself cost a promise of its own and the reply's as a thenable.)
      handler: JSON_TEXT_OPERATIONS.has(operationId)
        ? (request: FastifyRequest, reply: FastifyReply) => {
            reply.code(status)
            // JSON text goes out as it is: Fastify sends a string of a JSON
            // type unserialized (no serializer runs, a host app's reply
            // serializer included, nor preSerialization hooks).
            return (method.call(service, request) as Promise<unknown>).then((result) => {
              if (!(result instanceof JsonText)) return result
              reply.type(JSON_TYPE)
              return result.text
            })
          }
        : (request: FastifyRequest, reply: FastifyReply) => {
            reply.code(status)
            if (textType !== undefined) reply.type(textType)
            return method.call(service, request)
          }
    } as RouteOptions) // glue adds method, url and schema
  }
  // Every operationId was checked above.
  return (operationId: string) => routes.get(operationId)!
}

/** Every media type the spec's operations name, for their bodies and their answers. */
export function specMediaTypes (spec: OpenApiDocument): Set<string> {
  const types = new Set<string>()
  const add = (part: unknown) => {
    for (const type of Object.keys((part as { content?: object } | undefined)?.content ?? {})) types.add(type)
  }
  for (const { operation } of specOperations(spec)) {
    add(operation.requestBody)
    for (const response of Object.values(operation.responses ?? {})) add(response)
  }
  return types
}

/** Each path of the spec as Fastify writes it (`/plants/:id`). */
export function specPaths (spec: OpenApiDocument): Set<string> {
  return new Set(specOperations(spec).map(({ path }) => path.replace(/\{([^{}]+)\}/g, ':$1')))
}
