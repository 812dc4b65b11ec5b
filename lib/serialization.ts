// Answers are serialized as Fastify serializes them: fast-json-stringify,
// through Fastify's own compiler package, one serializer per distinct
// answer schema (compile-once.ts).
import SerializerSelector from '@fastify/fast-json-stringify-compiler'
import type { FastifyInstance } from 'fastify'
import { compileOnce, schemaKey } from './compile-once.ts'

type SerializerCompiler = Parameters<FastifyInstance['setSerializerCompiler']>[0]

/** A serializer compiler for one plugin instance. The spec's answers refer to no shared schema. */
export function createSerializerCompiler (): SerializerCompiler {
  const build = SerializerSelector()({}, {})
  // (The selector reads only the schema of what Fastify passes.)
  return compileOnce((route) => schemaKey(route.schema), (route) => build({ ...route, httpStatus: route.httpStatus ?? '' }))
}
