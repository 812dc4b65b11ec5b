import { MemoryStore } from './memory-store.ts'
import { UnknownDatabaseError } from '../errors.ts'
import type { PlantStore } from './plant-store.ts'

/** The database URLs this build can open, as a person would write them. */
export const DATABASE_URL_FORMS = ['memory:']

/** Whether `openStore` knows what to do with this URL. */
export function isDatabaseUrl (url: string): boolean {
  return url === 'memory:'
}

/** Opens the store a database URL names, such as `memory:`. */
export async function openStore (url: string): Promise<PlantStore> {
  if (url === 'memory:') return new MemoryStore()
  throw new UnknownDatabaseError(url, DATABASE_URL_FORMS.join(', '))
}
