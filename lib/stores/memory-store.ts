import { outcomeOver, plantOf } from './plant-storage.ts'
import type { CreateOutcome, ListOptions, PlantStorage, StoredPlant } from './plant-storage.ts'
import { MemoryWebhooks } from './memory-webhooks.ts'
import { newPlantPayload } from './webhook-storage.ts'

// Map keys: a number for an id within ±2^53 (hashed without a bigint's
// cost), the bigint past it; one key per id either way.
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)
function key (id: bigint): number | bigint {
  return id >= -MAX_SAFE && id <= MAX_SAFE ? Number(id) : id
}

/** Keeps plants in the process: fast, and gone when the process ends. */
export class MemoryStore implements PlantStorage {
  readonly #plants = new Map<number | bigint, StoredPlant>()
  // The ids in ascending order, so that a page costs a binary search and a
  // slice rather than a sort of every id.
  readonly #ids: bigint[] = []
  readonly webhooks = new MemoryWebhooks()

  // The index of the first id greater than `id` (or equal, when `inclusive`).
  #position (id: bigint, inclusive: boolean): number {
    let low = 0
    let high = this.#ids.length
    while (low < high) {
      const middle = (low + high) >>> 1
      const current = this.#ids[middle]!
      if (current < id || (!inclusive && current === id)) low = middle + 1
      else high = middle
    }
    return low
  }

  async create (plant: StoredPlant, traceparent?: string): Promise<CreateOutcome> {
    const existing = this.#plants.get(key(plant.id))
    if (existing !== undefined) return outcomeOver(existing, plant)
    // A copy, so that the caller cannot change what is stored.
    this.#plants.set(key(plant.id), plantOf(plant.id, plant.name, plant.tag))
    if (this.webhooks.hasSubscriptions) this.webhooks.enqueue(plant.id, newPlantPayload(plant), Date.now(), traceparent)
    // Ids often arrive in ascending order: appending is the common case.
    const last = this.#ids.at(-1)
    if (last === undefined || last < plant.id) this.#ids.push(plant.id)
    else this.#ids.splice(this.#position(plant.id, true), 0, plant.id)
    return 'created'
  }

  async get (id: bigint): Promise<StoredPlant | undefined> {
    const plant = this.#plants.get(key(id))
    return plant && { ...plant }
  }

  async list ({ after, limit }: ListOptions): Promise<StoredPlant[]> {
    const start = after === undefined ? 0 : this.#position(after, false)
    return this.#ids.slice(start, start + limit).map((id) => ({ ...this.#plants.get(key(id))! }))
  }

  async delete (id: bigint): Promise<boolean> {
    if (!this.#plants.delete(key(id))) return false
    this.#ids.splice(this.#position(id, true), 1)
    return true
  }

  async ping (): Promise<void> {}

  async close (): Promise<void> {}
}
