import { samePlant } from './plant-store.ts'
import type { CreateOutcome, ListOptions, PlantStore, StoredPlant } from './plant-store.ts'

/** Keeps plants in the process: fast, and gone when the process ends. */
export class MemoryStore implements PlantStore {
  readonly #plants = new Map<bigint, StoredPlant>()

  async create (plant: StoredPlant): Promise<CreateOutcome> {
    const existing = this.#plants.get(plant.id)
    if (existing !== undefined) return samePlant(existing, plant) ? 'replayed' : 'conflict'
    // A copy, so that the caller cannot change what is stored.
    this.#plants.set(plant.id, { ...plant })
    return 'created'
  }

  async get (id: bigint): Promise<StoredPlant | undefined> {
    const plant = this.#plants.get(id)
    return plant && { ...plant }
  }

  async list ({ after, limit }: ListOptions): Promise<StoredPlant[]> {
    const ids = [...this.#plants.keys()]
      .filter((id) => after === undefined || id > after)
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .slice(0, limit)
    return ids.map((id) => ({ ...this.#plants.get(id)! }))
  }

  async delete (id: bigint): Promise<boolean> {
    return this.#plants.delete(id)
  }

  async close (): Promise<void> {}
}
