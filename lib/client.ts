// plant-store/client: a typed client for the plant store API, built from
// the spec's generated types with openapi-fetch. int64 values travel as
// exact JSON integers both ways and arrive as bigints; they may be given
// as bigints or as numbers (exact up to 2^53).
import './node-version.ts'
import createClient from 'openapi-fetch'
import type { Client } from 'openapi-fetch'
import { int64Properties } from './api-types.ts'
import type { paths } from './api-types.ts'
import { int64FromJsonNumber } from './int64.ts'

export type { paths, components, operations } from './api-types.ts'

// What a request may carry: an int64 as a bigint or as a number, since a
// small id is more often a number in an app. Answers keep bigint.
type Lenient<T> = T extends bigint ? bigint | number : T extends object ? { [K in keyof T]: Lenient<T[K]> } : T
type LenientOperation<O> = { [K in keyof O]: K extends 'parameters' | 'requestBody' ? Lenient<O[K]> : O[K] }
/** The spec's paths as the client takes them: int64s in requests as bigint or number. */
export type ClientPaths = { [P in keyof paths]: { [M in keyof paths[P]]: LenientOperation<paths[P][M]> } }
export type PlantStoreClient = Client<ClientPaths>

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

function serialize (body: unknown): string {
  return JSON.stringify(body, (_key, value) => typeof value === 'bigint' ? rawJSON(value.toString()) : value)
}

// int64 properties become bigints whatever their size, as the types say;
// any other whole number past 2^53 too, rather than losing digits. (The
// rules of int64 numbers are int64.ts's, as the server reads them.)
function parse (text: string): unknown {
  if (text === '') return undefined
  return JSON.parse(text, (key, value, context?: { source?: string }) => {
    if (typeof value !== 'number' || context?.source === undefined) return value
    if (!int64Properties.has(key) && Number.isSafeInteger(value)) return value
    return int64FromJsonNumber(context.source) ?? value
  })
}

export function createPlantStoreClient ({ baseUrl, token, fetch = globalThis.fetch }: PlantStoreClientOptions): PlantStoreClient {
  return createClient<ClientPaths>({
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
