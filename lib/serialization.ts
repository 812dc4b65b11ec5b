// Answers are serialized as Fastify serializes them (fast-json-stringify,
// through Fastify's own compiler package), with one serializer per
// distinct schema: the spec's routes share a few answer schemas (every
// route's Error answers), and compiling each route's copy was most of the
// plugin's start-up.
import SerializerSelector from '@fastify/fast-json-stringify-compiler'
import type { FastifyInstance } from 'fastify'
import { schemaKey } from './validation.ts'

type Serializer = (data: unknown) => string
type SerializerCompiler = Parameters<FastifyInstance['setSerializerCompiler']>[0]

/** A serializer compiler for one plugin instance. The spec's answers refer to no shared schema. */
export function createSerializerCompiler (): SerializerCompiler {
  const build = SerializerSelector()({}, {})
  const compiled = new Map<string, Serializer>()
  return (route) => {
    const key = schemaKey(route.schema)
    let serialize = compiled.get(key)
    if (serialize === undefined) {
      // (The selector reads only the schema of what Fastify passes.)
      serialize = build({ ...route, httpStatus: route.httpStatus ?? '' })
      compiled.set(key, serialize)
    }
    return serialize
  }
}
