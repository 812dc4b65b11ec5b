// Answers are serialized as Fastify serializes them: fast-json-stringify,
// through Fastify's own compiler package, one serializer per distinct
// answer schema (compile-once.ts). The spec's are compiled ahead by `npm
// run generate` (response-serializers.ts), with that package's standalone
// mode; a start compiles only a schema that is not among them.
import { createRequire } from 'node:module'
import type { FastifyInstance } from 'fastify'
import { compileOnce, schemaKey } from './compile-once.ts'
import { RESPONSE_SERIALIZERS } from './response-serializers.ts'

type SerializerCompiler = Parameters<FastifyInstance['setSerializerCompiler']>[0]
type Compilers = typeof import('@fastify/fast-json-stringify-compiler')

// (CommonJS, loaded on first need: a start that finds every schema
// compiled ahead does not load fast-json-stringify's compiler.)
const require = createRequire(import.meta.url)

/** A serializer compiler for one plugin instance. The spec's answers refer to no shared schema. */
export function createSerializerCompiler (ahead: ReadonlyMap<string, (data: unknown) => string> = RESPONSE_SERIALIZERS): SerializerCompiler {
  let build: ReturnType<ReturnType<Compilers['SerializerSelector']>> | undefined
  return compileOnce((route) => schemaKey(route.schema), (route, key) => {
    const compiled = ahead.get(key)
    if (compiled !== undefined) return compiled
    // (The selector reads only the schema of what Fastify passes.)
    build ??= (require('@fastify/fast-json-stringify-compiler') as Compilers).SerializerSelector()({}, {})
    return build({ ...route, httpStatus: route.httpStatus ?? '' })
  })
}
