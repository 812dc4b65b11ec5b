// The plant store's operations, one method per operationId of the spec.
// fastify-openapi-glue calls them with the request already authenticated and
// validated; they know nothing of HTTP beyond the errors they throw.
import { randomBytes } from 'node:crypto'
import type { JsonText } from '../lib/json-text.ts'
import type { OperationHandlers, OperationRequest, OperationResult } from '../lib/operations.ts'
import type { PlantStorage, StoredPlant } from '../lib/stores/plant-storage.ts'
import { deliveryId, deliverySeq } from '../lib/stores/webhook-storage.ts'
import type { DeliveryRecord, Subscription, WebhookStorage } from '../lib/stores/webhook-storage.ts'
import { urlProblem } from '../lib/webhooks/address-guard.ts'
import { newSecret } from '../lib/webhooks/signature.ts'
import {
  DeliveryNotFoundError, MetricsOffError, NotReadyError, PlantConflictError, PlantNotFoundError, SubscriptionLimitError, SubscriptionNotFoundError,
  WebhookUrlError, WebhooksOffError
} from '../lib/errors.ts'

/** Why the service should take no traffic now (shutting down, overloaded), if it should not. */
export type NotReadyReason = () => string | undefined

/** The metrics text, in the Prometheus format. */
export type MetricsText = () => Promise<string>

/** Subscriptions that may exist at once: each create writes a delivery for every one. */
const MAX_SUBSCRIPTIONS = 100

export interface WebhookSettings {
  /** Allow receivers on loopback, private and other non-public addresses. */
  allowPrivateNetworks: boolean
  /** Called when a create has written deliveries, so that they go out at once. */
  wake: () => void
  /** Called when a subscription was made or a delivery retried: deliveries are due for sure. */
  subscribed: () => void
}

export class PlantService implements OperationHandlers {
  readonly #store: PlantStorage
  readonly #notReady: NotReadyReason
  readonly #webhooks: (WebhookSettings & { storage: WebhookStorage }) | undefined
  readonly #metrics: MetricsText | undefined

  /**
   * Without `webhooks` (or with a store that keeps no outbox), the webhook
   * operations answer 404; without `metrics`, getMetrics does.
   */
  constructor (store: PlantStorage, notReady: NotReadyReason = () => undefined, webhooks?: WebhookSettings, metrics?: MetricsText) {
    this.#store = store
    this.#notReady = notReady
    this.#webhooks = webhooks && store.webhooks && { ...webhooks, storage: store.webhooks }
    this.#metrics = metrics
  }

  #outbox (): WebhookSettings & { storage: WebhookStorage } {
    if (this.#webhooks === undefined) throw new WebhooksOffError()
    return this.#webhooks
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

  async getMetrics (): Promise<OperationResult<'getMetrics'>> {
    if (this.#metrics === undefined) throw new MetricsOffError()
    return this.#metrics()
  }

  async createPlant ({ body }: OperationRequest<'createPlant'>): Promise<OperationResult<'createPlant'>> {
    // Only the fields of the spec are kept: unknown properties are neither
    // stored nor echoed.
    const plant: StoredPlant = { id: body.id, name: body.name }
    if (body.tag !== undefined) plant.tag = body.tag
    const outcome = await this.#store.create(plant)
    if (outcome === 'conflict') throw new PlantConflictError(String(plant.id))
    if (outcome === 'created') this.#webhooks?.wake()
    return plant.tag === undefined ? { name: plant.name } : { name: plant.name, tag: plant.tag }
  }

  async getPlant ({ params }: OperationRequest<'getPlant'>): Promise<OperationResult<'getPlant'>> {
    const plant = await this.#store.get(params.id)
    if (plant === undefined) throw new PlantNotFoundError(String(params.id))
    return plant
  }

  async listPlants ({ query }: OperationRequest<'listPlants'>): Promise<OperationResult<'listPlants'> | JsonText<OperationResult<'listPlants'>>> {
    // The spec's default (100) fills in a missing limit before this runs.
    const options = { after: query.after, limit: query.limit! }
    return this.#store.listJson ? this.#store.listJson(options) : this.#store.list(options)
  }

  async deletePlant ({ params }: OperationRequest<'deletePlant'>): Promise<OperationResult<'deletePlant'>> {
    if (!await this.#store.delete(params.id)) throw new PlantNotFoundError(String(params.id))
  }

  async listSubscriptions (): Promise<OperationResult<'listSubscriptions'>> {
    return this.#outbox().storage.subscriptions()
  }

  async createSubscription ({ body }: OperationRequest<'createSubscription'>): Promise<OperationResult<'createSubscription'>> {
    const { storage, allowPrivateNetworks, subscribed } = this.#outbox()
    const problem = await urlProblem(body.url, allowPrivateNetworks)
    if (problem !== undefined) throw new WebhookUrlError(problem)
    const subscription: Subscription = {
      id: `sub_${randomBytes(16).toString('hex')}`,
      url: body.url,
      ...(body.description !== undefined && { description: body.description }),
      secret: newSecret(),
      createdAt: new Date().toISOString()
    }
    if (!await storage.subscribe(subscription, MAX_SUBSCRIPTIONS)) throw new SubscriptionLimitError(MAX_SUBSCRIPTIONS)
    subscribed()
    return subscription
  }

  async getSubscription ({ params }: OperationRequest<'getSubscription'>): Promise<OperationResult<'getSubscription'>> {
    const subscription = await this.#outbox().storage.subscription(params.id)
    if (subscription === undefined) throw new SubscriptionNotFoundError(params.id)
    return subscription
  }

  async deleteSubscription ({ params }: OperationRequest<'deleteSubscription'>): Promise<OperationResult<'deleteSubscription'>> {
    if (!await this.#outbox().storage.unsubscribe(params.id)) throw new SubscriptionNotFoundError(params.id)
  }

  async listDeliveries ({ params, query }: OperationRequest<'listDeliveries'>): Promise<OperationResult<'listDeliveries'>> {
    // The spec's default (100) fills in a missing limit before this runs.
    const page = await this.#outbox().storage.deliveries(params.id, {
      ...(query.after !== undefined && { after: deliverySeq(query.after) }),
      limit: query.limit!
    })
    if (page === undefined) throw new SubscriptionNotFoundError(params.id)
    return page.map(delivery)
  }

  async retryDelivery ({ params }: OperationRequest<'retryDelivery'>): Promise<OperationResult<'retryDelivery'>> {
    const { storage, subscribed } = this.#outbox()
    const retried = await storage.retry(params.id, deliverySeq(params.deliveryId), Date.now())
    if (retried === undefined) {
      if (await storage.subscription(params.id) === undefined) throw new SubscriptionNotFoundError(params.id)
      throw new DeliveryNotFoundError(params.id, params.deliveryId)
    }
    subscribed()
    return delivery(retried)
  }
}

// A delivery as the API shows it: its webhook-id, times in ISO 8601.
function delivery ({ seq, plantId, status, attempts, lastStatus, lastError, nextAttemptAt, deliveredAt }: DeliveryRecord): OperationResult<'listDeliveries'>[number] {
  return {
    id: deliveryId(seq),
    plantId,
    status,
    attempts,
    ...(lastStatus !== undefined && { lastStatus }),
    ...(lastError !== undefined && { lastError }),
    ...(nextAttemptAt !== undefined && { nextAttemptAt: new Date(nextAttemptAt).toISOString() }),
    ...(deliveredAt !== undefined && { deliveredAt: new Date(deliveredAt).toISOString() })
  }
}
