// plant-store/client: a typed client for the plant store API, built from
// the spec's generated types with openapi-fetch. int64 values travel as
// exact JSON integers both ways and arrive as bigints.
import './node-version.ts'
import createClient from 'openapi-fetch'
import type { Client } from 'openapi-fetch'
import { int64Properties } from './api-types.ts'
import type { paths } from './api-types.ts'

export type { paths, components, operations } from './api-types.ts'
export type PlantStoreClient = Client<paths>

export interface PlantStoreClientOptions {
  /** Where the service is mounted, e.g. `http://127.0.0.1:3000` or `https://host/api`. */
  baseUrl: string
  /** A bearer token the service accepts. */
  token: string
  /** A fetch of your own (tests, proxies); the global one by default. */
  fetch?: typeof globalThis.fetch
}

// JSON.rawJSON writes a bigint's digits as a JSON number (Node 22+).
const rawJSON = (JSON as unknown as { rawJSON: (text: string) => unknown }).rawJSON
// (As in json-body.ts; the client imports nothing of the server.)
const INTEGER_LITERAL = /^-?\d+$/

function serialize (body: unknown): string {
  return JSON.stringify(body, (_key, value) => typeof value === 'bigint' ? rawJSON(value.toString()) : value)
}

// int64 properties become bigints whatever their size, as the types say;
// any other integer past 2^53 too, rather than losing digits.
function parse (text: string): unknown {
  if (text === '') return undefined
  return JSON.parse(text, (key, value, context?: { source?: string }) => {
    if (typeof value !== 'number' || context?.source === undefined || !INTEGER_LITERAL.test(context.source)) return value
    return int64Properties.has(key) || !Number.isSafeInteger(value) ? BigInt(context.source) : value
  })
}

export function createPlantStoreClient ({ baseUrl, token, fetch = globalThis.fetch }: PlantStoreClientOptions): PlantStoreClient {
  return createClient<paths>({
    baseUrl,
    headers: { authorization: `Bearer ${token}` },
    bodySerializer: serialize,
    fetch: async (request: Request) => {
      const response = await fetch(request)
      // openapi-fetch reads bodies with response.json(): give it one that
      // keeps every digit.
      Object.defineProperty(response, 'json', { value: async () => parse(await response.text()) })
      return response
    }
  })
}
