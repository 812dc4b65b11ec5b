// The storage contract every backend implements; the service depends on this
// interface only, and test/store-suite.ts holds every backend to it.

export interface StoredPlant {
  id: bigint
  name: string
  tag?: string
}

/**
 * What `create` did: `created` a new plant, found the same plant already
 * there (`replayed`, a safe client retry), or found a different plant under
 * that id (`conflict`, nothing changed).
 */
export type CreateOutcome = 'created' | 'replayed' | 'conflict'

export interface ListOptions {
  /** Only plants whose id is greater than this (an exclusive cursor). */
  after?: bigint
  limit: number
}

export interface PlantStore {
  create (plant: StoredPlant): Promise<CreateOutcome>
  get (id: bigint): Promise<StoredPlant | undefined>
  /** Plants in ascending id order. */
  list (options: ListOptions): Promise<StoredPlant[]>
  /** Whether a plant was deleted. */
  delete (id: bigint): Promise<boolean>
  /** Resolves when the database answers; rejects (503 kind) when it does not. */
  ping (): Promise<void>
  close (): Promise<void>
}

/** Whether two plants hold the same content, so that a create is a replay. */
export function samePlant (a: StoredPlant, b: StoredPlant): boolean {
  return a.id === b.id && a.name === b.name && a.tag === b.tag
}
