// What the plugin's routes are, gathered as Fastify registers them: the
// methods each path serves (for a 405's Allow and for CORS preflights) and
// the int64 members of each body. Taken from the routes Fastify actually
// has, so that HEAD is listed where Fastify serves it and nowhere else.
import type { FastifyContextConfig, FastifyRequest, RouteOptions } from 'fastify'
import { isInt64Schema } from './int64.ts'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Top-level members of the body that are int64s, read as bigints. */
    int64Members?: ReadonlySet<string>
    /** The operation takes a request body (the spec gives it a requestBody). */
    takesBody?: boolean
    /** A route that answers 405: the methods a path does not serve. */
    methodNotAllowed?: boolean
  }
  interface FastifyRequest {
    /** This request's route config, once read (RouteFacts.of). */
    plantStoreRoute: FastifyContextConfig | null
  }
}

const NONE: ReadonlySet<string> = new Set()

// (Remembered per object: the spec's schemas share their parts, so a walk
// that does not remember goes down the same ones again and again.)
const containing = new WeakMap<object, boolean>()
function containsInt64 (schema: unknown): boolean {
  if (typeof schema !== 'object' || schema === null) return false
  let found = containing.get(schema)
  if (found === undefined) {
    found = isInt64Schema(schema) || Object.values(schema).some(containsInt64)
    containing.set(schema, found)
  }
  return found
}

// The top-level int64 properties of an object schema, following allOf.
// The JSON body parser reads only those exactly, so an int64 anywhere else
// in a body is a spec this service cannot honour: start-up fails instead.
function int64Members (schema: unknown, names = new Set<string>()): Set<string> {
  const { allOf = [], properties = {}, ...rest } = (schema ?? {}) as { allOf?: unknown[], properties?: Record<string, unknown> }
  for (const part of allOf) int64Members(part, names)
  for (const [name, property] of Object.entries(properties)) {
    if (isInt64Schema(property)) names.add(name)
    else if (containsInt64(property)) throw new Error(`An int64 below the top level of a request body (in "${name}") is not supported`)
  }
  if (containsInt64(rest)) throw new Error('An int64 request body must be an object whose top-level properties hold the int64s')
  return names
}

const JSON_TYPE = 'application/json'

type Part = { content?: Record<string, { schema?: unknown }> } | undefined

// A request body's or an answer's JSON schema, where it has one by media type.
const jsonContentOf = (part: unknown): unknown => (part as Part)?.content?.[JSON_TYPE]?.schema

// A request body's or an answer's schema when JSON is its one media type;
// anything else as it is.
function jsonSchemaOf (part: unknown): unknown {
  const json = jsonContentOf(part)
  return json !== undefined && Object.keys((part as Part)!.content!).length === 1 ? json : part
}

// A route's schema with each JSON-only body and answer given by its schema
// alone: Fastify then finds their validator and serializer by status, where
// schemas by media type make it parse the request's and the answer's
// content type to find them, on every request. (The body parser takes
// JSON alone, and every answer but the metrics' text is JSON.) An optional
// body keeps its schema by media type, which Fastify skips when none came.
function byStatusOnly (schema: NonNullable<RouteOptions['schema']>, bodyRequired: boolean): RouteOptions['schema'] {
  const response = schema.response as Record<string, unknown> | undefined
  return {
    ...schema,
    ...(schema.body !== undefined && bodyRequired && { body: jsonSchemaOf(schema.body) }),
    ...(response !== undefined && { response: Object.fromEntries(Object.entries(response).map(([status, part]) => [status, jsonSchemaOf(part)])) })
  }
}

// A route URL (`/plants/:id`) as a pattern for request paths.
function pathPattern (url: string): RegExp {
  const escaped = url.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&').replace(/:[^/]+/g, '[^/]+')
  return new RegExp(`^${escaped}$`)
}

export class RouteFacts {
  readonly #paths = new Map<string, { pattern: RegExp, methods: Set<string> }>()
  readonly #extraMethods: string[]

  /** `extraMethods` are served on every path besides its routes' (OPTIONS, for CORS preflights). */
  constructor (extraMethods: string[] = []) {
    this.#extraMethods = extraMethods
  }

  /**
   * An onRoute hook: records the route, and the int64 members of its body
   * in its config; JSON-only bodies and answers get their schemas by status.
   */
  readonly onRoute = (route: RouteOptions): void => {
    if (route.schema !== undefined) route.schema = byStatusOnly(route.schema, route.config?.bodyRequired === true)
    const body = route.schema?.body
    if (body !== undefined) {
      const members = int64Members(jsonContentOf(body) ?? body)
      route.config = { ...route.config, int64Members: members, takesBody: true }
    }
    // Wildcards (static files, the CORS preflight route) name no path of
    // the API, and 405 routes serve nothing.
    if (route.url.includes('*') || route.config?.methodNotAllowed) return
    let path = this.#paths.get(route.url)
    if (path === undefined) this.#paths.set(route.url, path = { pattern: pathPattern(route.url), methods: new Set() })
    for (const method of [route.method].flat()) path.methods.add(method.toUpperCase())
  }

  /** The methods the route URL `url` (`/api/plants/:id`) is served with, extra ones included. */
  methodsOf (url: string): string[] {
    return [...(this.#paths.get(url)?.methods ?? []), ...this.#extraMethods]
  }

  /** The methods a request path is served with, or undefined for a path the plugin does not have. */
  allowedMethods (path: string): string[] | undefined {
    for (const { pattern, methods } of this.#paths.values()) {
      if (pattern.test(path)) return [...methods, ...this.#extraMethods]
    }
    return undefined
  }

  /**
   * The config of a request's route, with the facts above: read once per
   * request, as Fastify's routeOptions getter builds a new object on every
   * read (the plugin decorates requests with `plantStoreRoute`).
   */
  static of (request: FastifyRequest): FastifyContextConfig {
    request.plantStoreRoute ??= request.routeOptions.config
    return request.plantStoreRoute
  }

  static int64Members (request: FastifyRequest): ReadonlySet<string> {
    return RouteFacts.of(request).int64Members ?? NONE
  }

  /** Whether the request's operation takes a body. */
  static takesBody (request: FastifyRequest): boolean {
    return RouteFacts.of(request).takesBody === true
  }
}
