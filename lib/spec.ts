import { readFile } from 'node:fs/promises'
import { parse } from 'yaml'

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

/** spec/plant-store.yaml, found through the package's own exports from source and from dist alike. */
export const SPEC_URL = new URL(import.meta.resolve('plant-store/spec/plant-store.yaml'))

/** Reads the spec: the single source of the routes, schemas and docs. */
export async function loadSpec (): Promise<OpenApiDocument> {
  return parse(await readFile(SPEC_URL, 'utf8')) as OpenApiDocument
}
