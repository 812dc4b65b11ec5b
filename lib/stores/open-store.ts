import { resolve } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import { MemoryStore } from './memory-store.ts'
import { UnknownDatabaseError } from '../errors.ts'
import type { PlantStorage } from './plant-storage.ts'

/** Where plants go when nothing is configured: a SQLite file. */
export const DEFAULT_DATABASE_URL = 'file:./data/plants.db'

/** The database URLs this build can open, as a person would write them. */
export const DATABASE_URL_FORMS = ['file:PATH', 'postgres://…', 'memory:']

function kindOf (url: string): 'memory' | 'postgres' | 'file' | undefined {
  if (url === 'memory:') return 'memory'
  if (/^postgres(ql)?:\/\/./.test(url)) return 'postgres'
  if (/^file:.+/.test(url)) return 'file'
  return undefined
}

/** Whether `openStore` knows what to do with this URL. */
export function isDatabaseUrl (url: string): boolean {
  return kindOf(url) !== undefined
}

export interface OpenStoreOptions {
  log?: FastifyBaseLogger
}

/** Opens the store a database URL names: `file:PATH`, `postgres://…` or `memory:`. */
export async function openStore (url: string, { log }: OpenStoreOptions = {}): Promise<PlantStorage> {
  switch (kindOf(url)) {
    case 'memory':
      return new MemoryStore()
    // The database backends load on demand: a server on SQLite never loads pg.
    case 'postgres': {
      const { PostgresStore } = await import('./postgres-store.ts')
      return PostgresStore.open(url, { log })
    }
    case 'file': {
      const { SqliteStore } = await import('./sqlite-store.ts')
      // file:PATH, relative to the working directory, or a file:/// URL.
      return SqliteStore.open(resolve(url.startsWith('file://') ? new URL(url).pathname : url.slice('file:'.length)), { log })
    }
  }
  throw new UnknownDatabaseError(url, DATABASE_URL_FORMS.join(', '))
}
