import { SPEC_JSON } from './spec-document.ts'

export interface OperationObject {
  operationId?: string
  requestBody?: { required?: boolean }
  security?: unknown[]
  responses?: Record<string, unknown>
  [key: string]: unknown
}

export type PathItemObject = Partial<Record<'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace', OperationObject>>

export interface OpenApiDocument {
  openapi: string
  info: { title: string, version: string, [key: string]: unknown }
  servers?: Array<{ url: string, description?: string }>
  paths?: Record<string, PathItemObject>
  [key: string]: unknown
}

/**
 * The spec (spec/plant-store.yaml, embedded by `npm run generate`): the
 * single source of the routes, schemas and docs. A new copy each time, as
 * fastify-openapi-glue and @fastify/swagger may change what they are given.
 */
export async function loadSpec (): Promise<OpenApiDocument> {
  return JSON.parse(SPEC_JSON) as OpenApiDocument
}
