import sortedBtree from 'sorted-btree'
import { outcomeOver, pageSize, plantOf } from './plant-storage.ts'
import type { CreateOutcome, ListOptions, PlantStorage, StoredPlant } from './plant-storage.ts'
import { MemoryWebhooks } from './memory-webhooks.ts'
import { newPlantPayload } from './webhook-storage.ts'

// Map keys: a number for an id within ±2^53 (hashed without a bigint's
// cost), the bigint past it; one key per id either way.
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)
function key (id: bigint): number | bigint {
  return id >= -MAX_SAFE && id <= MAX_SAFE ? Number(id) : id
}

// (CommonJS: its class arrives as the default export's `default`.)
const BTree = sortedBtree.default
const compareIds = (a: bigint, b: bigint): number => a < b ? -1 : a > b ? 1 : 0

/** Keeps plants in the process: fast, and gone when the process ends. */
export class MemoryStore implements PlantStorage {
  readonly #plants = new Map<number | bigint, StoredPlant>()
  // The ids in ascending order, so that a page is a walk from its first id:
  // a B+ tree, where an id inserted anywhere costs O(log n) (a sorted
  // array's insert in the middle moved every id above it).
  readonly #ids = new BTree<bigint, undefined>(undefined, compareIds)
  readonly webhooks = new MemoryWebhooks()

  async create (plant: StoredPlant, traceparent?: string): Promise<CreateOutcome> {
    const existing = this.#plants.get(key(plant.id))
    if (existing !== undefined) return outcomeOver(existing, plant)
    // A copy, so that the caller cannot change what is stored.
    this.#plants.set(key(plant.id), plantOf(plant.id, plant.name, plant.tag))
    if (this.webhooks.hasSubscriptions) this.webhooks.enqueue(plant.id, newPlantPayload(plant), Date.now(), traceparent)
    this.#ids.set(plant.id, undefined)
    return 'created'
  }

  async get (id: bigint): Promise<StoredPlant | undefined> {
    const plant = this.#plants.get(key(id))
    return plant && { ...plant }
  }

  async list ({ after, limit }: ListOptions): Promise<StoredPlant[]> {
    const page: StoredPlant[] = []
    const size = pageSize(limit)
    if (size === 0) return page
    // (Keys from `after` on, itself included when stored: it is skipped.)
    for (const id of this.#ids.keys(after)) {
      if (id === after) continue
      page.push({ ...this.#plants.get(key(id))! })
      if (page.length === size) break
    }
    return page
  }

  async delete (id: bigint): Promise<boolean> {
    if (!this.#plants.delete(key(id))) return false
    this.#ids.delete(id)
    return true
  }

  async ping (): Promise<void> {}

  async close (): Promise<void> {}
}
