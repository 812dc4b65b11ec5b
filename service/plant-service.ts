// The plant store's operations, one method per operationId of the spec.
// fastify-openapi-glue calls them with the request already authenticated and
// validated; they know nothing of HTTP beyond the errors they throw.
import type { OperationHandlers, OperationRequest, OperationResult } from '../lib/operations.ts'
import type { PlantStorage, StoredPlant } from '../lib/stores/plant-storage.ts'
import { NotReadyError, PlantConflictError, PlantNotFoundError } from '../lib/errors.ts'

/** Why the service should take no traffic now (shutting down, overloaded), if it should not. */
export type NotReadyReason = () => string | undefined

export class PlantService implements OperationHandlers {
  readonly #store: PlantStorage
  readonly #notReady: NotReadyReason

  constructor (store: PlantStorage, notReady: NotReadyReason = () => undefined) {
    this.#store = store
    this.#notReady = notReady
  }

  async getHealth (): Promise<OperationResult<'getHealth'>> {
    return { status: 'ok' }
  }

  async getReadiness (): Promise<OperationResult<'getReadiness'>> {
    const reason = this.#notReady()
    if (reason !== undefined) throw new NotReadyError(reason)
    await this.#store.ping()
    return { status: 'ok' }
  }

  async createPlant ({ body }: OperationRequest<'createPlant'>): Promise<OperationResult<'createPlant'>> {
    // Only the fields of the spec are kept: unknown properties are neither
    // stored nor echoed.
    const plant: StoredPlant = { id: body.id, name: body.name }
    if (body.tag !== undefined) plant.tag = body.tag
    if (await this.#store.create(plant) === 'conflict') throw new PlantConflictError(String(plant.id))
    return plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag }
  }

  async getPlant ({ params }: OperationRequest<'getPlant'>): Promise<OperationResult<'getPlant'>> {
    const plant = await this.#store.get(params.id)
    if (plant === undefined) throw new PlantNotFoundError(String(params.id))
    return plant
  }

  async listPlants ({ query }: OperationRequest<'listPlants'>): Promise<OperationResult<'listPlants'>> {
    // The spec's default (100) fills in a missing limit before this runs.
    return this.#store.list({ after: query.after, limit: query.limit! })
  }

  async deletePlant ({ params }: OperationRequest<'deletePlant'>): Promise<OperationResult<'deletePlant'>> {
    if (!await this.#store.delete(params.id)) throw new PlantNotFoundError(String(params.id))
  }
}
