// Answers are serialized as Fastify serializes them: fast-json-stringify,
// through Fastify's own compiler package, one serializer per distinct
// answer schema (compile-once.ts). An answer that is already JSON text
// (json-text.ts) is sent as it is.
import SerializerSelector from '@fastify/fast-json-stringify-compiler'
import type { FastifyInstance } from 'fastify'
import { compileOnce, schemaKey } from './compile-once.ts'
import { JsonText } from './json-text.ts'

type SerializerCompiler = Parameters<FastifyInstance['setSerializerCompiler']>[0]

/** A serializer compiler for one plugin instance. The spec's answers refer to no shared schema. */
export function createSerializerCompiler (): SerializerCompiler {
  const build = SerializerSelector()({}, {})
  // (The selector reads only the schema of what Fastify passes.)
  return compileOnce((route) => schemaKey(route.schema), (route) => {
    const serialize = build({ ...route, httpStatus: route.httpStatus ?? '' })
    return (data: unknown) => data instanceof JsonText ? data.text : serialize(data)
  })
}
