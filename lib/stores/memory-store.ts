import sortedBtree from 'sorted-btree'
import { DEFAULT_MEMORY_MAX_RECORDS } from '../defaults.ts'
import { MemoryMaxRecordsError, StoreUnavailableError } from '../errors.ts'
import { outcomeOver, pageSize, plantOf } from './plant-storage.ts'
import type { CreateOutcome, ListOptions, PlantStorage, StoredPlant } from './plant-storage.ts'
import { MemoryWebhooks } from './memory-webhooks.ts'
import { newPlantPayload } from './webhook-storage.ts'

// Keys: a number for an id within ±2^53 (hashed and compared without a
// bigint's cost), the bigint past it; one key per id either way, and keys
// order as their ids do (`<` compares a number with a bigint exactly).
type Key = number | bigint
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)
function key (id: bigint): Key {
  return id >= -MAX_SAFE && id <= MAX_SAFE ? Number(id) : id
}

// (CommonJS: its class arrives as the default export's `default`.)
const BTree = sortedBtree.default
const compareKeys = (a: Key, b: Key): number => a < b ? -1 : a > b ? 1 : 0

export interface MemoryStoreOptions {
  /** Plants and webhook delivery records held at most; a create past it is refused as from a full store (503). Default 100,000. */
  maxRecords?: number
}

/** Keeps plants in the process: fast, and gone when the process ends. */
export class MemoryStore implements PlantStorage {
  readonly #maxRecords: number
  // The plants in ascending key order, so that a page is a walk from its
  // first one: a B+ tree, where a key inserted anywhere costs O(log n) (a
  // sorted array's insert in the middle moved every key above it). The one
  // structure: a create is one descent of it, where a Map beside it made a
  // create a lookup and two inserts, and held every key twice.
  readonly #plants = new BTree<Key, StoredPlant>(undefined, compareKeys)
  readonly webhooks = new MemoryWebhooks()

  constructor ({ maxRecords = DEFAULT_MEMORY_MAX_RECORDS }: MemoryStoreOptions = {}) {
    // (0, NaN or a fraction would refuse every create, or none.)
    if (!Number.isSafeInteger(maxRecords) || maxRecords < 1) throw new MemoryMaxRecordsError(String(maxRecords))
    this.#maxRecords = maxRecords
  }

  async create (plant: StoredPlant, traceparent?: string): Promise<CreateOutcome> {
    const at = key(plant.id)
    // The process's memory is the store's disk: full, as a disk would be,
    // before a client's creates can exhaust it (a replay is answered still).
    if (this.#plants.size + 1 + this.webhooks.deliveriesAfterCreate > this.#maxRecords) {
      const existing = this.#plants.get(at)
      if (existing !== undefined) return outcomeOver(existing, plant)
      throw new StoreUnavailableError('full')
    }
    // A copy, so that the caller cannot change what is stored.
    if (!this.#plants.setIfNotPresent(at, plantOf(plant.id, plant.name, plant.tag))) return outcomeOver(this.#plants.get(at)!, plant)
    if (this.webhooks.hasSubscriptions) this.webhooks.enqueue(plant.id, newPlantPayload(plant), Date.now(), traceparent)
    return 'created'
  }

  async get (id: bigint): Promise<StoredPlant | undefined> {
    const plant = this.#plants.get(key(id))
    return plant && { ...plant }
  }

  async list ({ after, limit }: ListOptions): Promise<StoredPlant[]> {
    const page: StoredPlant[] = []
    const size = pageSize(limit)
    // (Keys from `after`'s on, itself included when stored: it is skipped.)
    const from = after === undefined ? undefined : key(after)
    for (const [at, plant] of this.#plants.entries(from)) {
      if (page.length === size) break
      if (at !== from) page.push({ ...plant })
    }
    return page
  }

  async delete (id: bigint): Promise<boolean> {
    return this.#plants.delete(key(id))
  }

  async ping (): Promise<void> {}

  async close (): Promise<void> {}
}
