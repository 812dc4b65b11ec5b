import { resolve } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import { MemoryStore } from './memory-store.ts'
import { DatabaseOpenError, DatabasePathError, UnknownDatabaseError } from '../errors.ts'
import type { PlantStorage, StoreObserver } from './plant-storage.ts'

/** Where plants go when nothing is configured: a SQLite file. */
export const DEFAULT_DATABASE_URL = 'file:./data/plants.db'

/** The database URLs this build can open, as a person would write them. */
const DATABASE_URL_FORMS = ['file:PATH', 'postgres://…', 'memory:']

function kindOf (url: string): 'memory' | 'postgres' | 'file' | undefined {
  if (url === 'memory:') return 'memory'
  if (/^postgres(ql)?:\/\/./.test(url)) return 'postgres'
  if (/^file:.+/.test(url)) return 'file'
  return undefined
}

/** The SQLite file a `file:` URL names (relative to the working directory), if it is one. */
export function sqlitePath (url: string): string | undefined {
  if (kindOf(url) !== 'file') return undefined
  // file:PATH, relative to the working directory, or a file:/// URL.
  return resolve(url.startsWith('file://') ? new URL(url).pathname : url.slice('file:'.length))
}

// Query parameters node-postgres reads as secrets.
const SECRET_PARAMETERS = ['password', 'sslpassword', 'sslkey']

/** A database URL fit for a log line or a message: no password, in whatever form it was given. */
export function redactedUrl (url: string): string {
  if (kindOf(url) === 'file' || kindOf(url) === 'memory') return url
  try {
    const parsed = new URL(url)
    if (parsed.password !== '') parsed.password = '***'
    for (const name of SECRET_PARAMETERS) if (parsed.searchParams.has(name)) parsed.searchParams.set(name, '***')
    return parsed.href
  } catch {
    // Not a URL: shown unless it might hold credentials.
    return url.includes('@') ? `${/^[a-z][\w+.-]*:/i.exec(url)?.[0] ?? ''}…` : url
  }
}

/** What is wrong with a database URL, if anything: a sentence naming it. */
export function databaseUrlProblem (url: string): string | undefined {
  if (kindOf(url) === undefined) return `must be one of ${DATABASE_URL_FORMS.join(', ')} (got "${redactedUrl(url)}")`
  if (kindOf(url) === 'file') {
    if (url.endsWith('/')) return `${url} names a directory: name a file in it, such as ${url}plants.db`
    try {
      sqlitePath(url)
    } catch (err) {
      return `${url} is not a file URL (${(err as Error).message}): write file:PATH or file:///absolute/path`
    }
  }
  return undefined
}

export interface OpenStoreOptions {
  log?: FastifyBaseLogger
  /** Told of every SQLite commit (metrics). */
  observer?: StoreObserver
  /** PostgreSQL: connections in the pool. */
  poolSize?: number
  /** `memory:`: plants and delivery records held at most. */
  memoryMaxRecords?: number
}

/** The kind of store a URL opens, as metrics name it. */
export function storeKind (url: string): 'memory' | 'postgres' | 'sqlite' | undefined {
  const kind = kindOf(url)
  return kind === 'file' ? 'sqlite' : kind
}

/**
 * Opens the store a database URL names (`file:PATH`, `postgres://…` or
 * `memory:`), and says when it may be read: a SQLite
 * store's writer thread is still starting when it is returned. A `ready`
 * that fails means the store cannot be used; it must be awaited (or caught).
 */
export async function startStore (url: string, { log, observer, poolSize, memoryMaxRecords }: OpenStoreOptions = {}): Promise<{ store: PlantStorage, ready: Promise<void> }> {
  switch (kindOf(url)) {
    case 'memory':
      return { store: new MemoryStore({ maxRecords: memoryMaxRecords }), ready: Promise.resolve() }
    // The database backends load on demand: a server on SQLite never loads pg.
    case 'postgres': {
      const { PostgresStore } = await import('./postgres-store.ts')
      try {
        return { store: await PostgresStore.open(url, { log: log?.child({ database: redactedUrl(url) }), poolSize }), ready: Promise.resolve() }
      } catch (err) {
        throw new DatabaseOpenError(redactedUrl(url), (err as Error).message)
      }
    }
    case 'file': {
      const { SqliteStore } = await import('./sqlite-store.ts')
      if (url.endsWith('/')) throw new DatabasePathError(url)
      return SqliteStore.start(sqlitePath(url)!, { log, observer })
    }
  }
  throw new UnknownDatabaseError(url, DATABASE_URL_FORMS.join(', '))
}
