// PostgreSQL through a pg connection pool: for several instances of the
// service on one database. Every write is one autocommitted statement, so a
// 200 means committed; concurrent creates share a statement.
import pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { DEFAULT_POOL_SIZE } from '../defaults.ts'
import { StoreUnavailableError } from '../errors.ts'
import { JsonText } from '../json-text.ts'
import { migrate } from './migrations.ts'
import { outcomeOver, pageSize, plantOf } from './plant-storage.ts'
import type { CreateOutcome, ListOptions, PlantStorage, PoolCounts, StoredPlant } from './plant-storage.ts'
import { POSTGRES_WEBHOOK_CREATED_AT, POSTGRES_WEBHOOK_TRACEPARENT, POSTGRES_WEBHOOK_DUE_INDEX, POSTGRES_WEBHOOK_MIGRATION, PostgresWebhooks, WEBHOOK_STATEMENTS } from './postgres-webhooks.ts'
import type { WebhookStatement } from './postgres-webhooks.ts'
import { newPlantPayload } from './webhook-storage.ts'
import type { WebhookStorage } from './webhook-storage.ts'

/** Applied in order; a released migration is never edited, only added to. */
const POSTGRES_MIGRATIONS: readonly string[] = [
  `CREATE TABLE plants (
     id   BIGINT PRIMARY KEY,
     name TEXT NOT NULL,
     tag  TEXT              -- NULL: no tag; '' is a tag
   )`,
  POSTGRES_WEBHOOK_MIGRATION,
  POSTGRES_WEBHOOK_DUE_INDEX,
  POSTGRES_WEBHOOK_CREATED_AT,
  POSTGRES_WEBHOOK_TRACEPARENT
]

// Any key will do, as long as every instance uses the same one.
const MIGRATION_LOCK = 7_263_548_913

// Errors that mean "the database is not there right now", not "wrong".
const UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EMFILE', 'ENFILE'])

function isUnavailable (err: { code?: string, message?: string }): boolean {
  const code = err.code ?? ''
  return UNAVAILABLE_CODES.has(code) ||
    code.startsWith('08') || // connection exception
    code.startsWith('53') || // insufficient resources: disk full, out of memory, too many connections
    code.startsWith('57P') || // operator intervention: shutdown, cannot connect now
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout|Client was closed and is not queryable|Cannot use a pool after calling end/i.test(err.message ?? '')
}

// A page of plants, from the first or after a cursor (`WHERE id > $1`).
const page = (where: string, limit: string) => `SELECT id, name, tag FROM plants ${where} ORDER BY id LIMIT ${limit}`

// The same page as PostgreSQL writes it in JSON: each plant with the
// members plantOf gives it (as text: node-postgres would parse json).
const PLANT_JSON = "CASE WHEN tag IS NULL THEN json_build_object('id', id, 'name', name) ELSE json_build_object('id', id, 'name', name, 'tag', tag) END"
const pageJson = (where: string, limit: string) => `SELECT coalesce(json_agg(${PLANT_JSON} ORDER BY id)::text, '[]') AS page FROM (${page(where, limit)}) p`

// Every statement, under a prepared-statement name of its own: short (the
// server keeps 63 bytes of a name), unique and the same in every release.
const STATEMENTS = {
  plant_store_get: 'SELECT id, name, tag FROM plants WHERE id = $1',
  plant_store_list: page('', '$1'),
  plant_store_list_after: page('WHERE id > $1', '$2'),
  plant_store_list_json: pageJson('', '$1'),
  plant_store_list_json_after: pageJson('WHERE id > $1', '$2'),
  plant_store_delete: 'DELETE FROM plants WHERE id = $1',
  // ON CONFLICT waits for a racing insert of the same id to commit, so of
  // two instances creating one id exactly one inserts it. Within a batch,
  // the first of several rows with one id is the one inserted. The same
  // statement writes each inserted plant's webhook deliveries, one per
  // subscription: a plant and its events commit together. The batch comes
  // as one JSON array of rows, [id, name, tag, payload, traceparent]:
  // V8's JSON.stringify writes it natively, where node-postgres would write
  // an array literal per column, escaping each element with two regex
  // replaces.
  plant_store_insert: `WITH batch AS (
      SELECT (r->>0)::bigint AS id, r->>1 AS name, r->>2 AS tag, r->>3 AS payload, r->>4 AS traceparent, n
        FROM json_array_elements($1::json) WITH ORDINALITY AS b (r, n)
    ), inserted AS (
      INSERT INTO plants (id, name, tag) SELECT id, name, tag FROM batch ORDER BY n
      ON CONFLICT (id) DO NOTHING RETURNING id
    ), events AS (
      INSERT INTO webhook_deliveries (subscription_seq, plant_id, payload, next_attempt_at, created_at, traceparent)
      SELECT s.seq, i.id, first.payload, $2, $2, first.traceparent FROM inserted i
        CROSS JOIN LATERAL (SELECT payload, traceparent FROM batch WHERE batch.id = i.id ORDER BY n LIMIT 1) first
        CROSS JOIN webhook_subscriptions s
    )
    SELECT id FROM inserted`,
  plant_store_select_many: 'SELECT id, name, tag FROM plants WHERE id = ANY($1::bigint[])',
  plant_store_ping: 'SELECT 1',
  ...WEBHOOK_STATEMENTS
} as const

// How long a subscription change waits for creates in progress.
const EXCLUSIVE_WAIT_MS = 1000
const LOCK_NOT_AVAILABLE = '55P03'

// After the schema could not be set up (the database was away), another
// try waits this long, so that a database that stays away costs little.
const RETRY_DELAY_MS = 1000

interface Row { id: string, name: string, tag: string | null }

function toPlant ({ id, name, tag }: Row): StoredPlant {
  // int8 arrives as text, which BigInt reads exactly.
  return plantOf(BigInt(id), name, tag)
}

export interface PostgresStoreOptions {
  log?: FastifyBaseLogger
  /** Connections in the pool. Default DEFAULT_POOL_SIZE (10). */
  poolSize?: number
}

export class PostgresStore implements PlantStorage {
  readonly #pool: pg.Pool
  readonly #poolSize: number
  #batch: Array<{ plant: StoredPlant, traceparent: string | undefined, resolve: (outcome: CreateOutcome) => void, reject: (err: Error) => void }> = []
  #migrated = false
  #migrating: Promise<void> | undefined
  #migrationFailure: { error: Error, until: number } | undefined

  /** The webhook outbox: its deliveries are written by the statement that creates a plant. */
  readonly webhooks: WebhookStorage

  poolCounts (): PoolCounts {
    return { total: this.#pool.totalCount, idle: this.#pool.idleCount, waiting: this.#pool.waitingCount }
  }

  private constructor (pool: pg.Pool, poolSize: number) {
    this.#pool = pool
    this.#poolSize = poolSize
    type Result<R> = Promise<{ rows: R[], rowCount: number | null }>
    this.webhooks = new PostgresWebhooks(
      async <R>(name: WebhookStatement, values: unknown[]) => this.#query(name, values) as unknown as Result<R>,
      async <R>(name: WebhookStatement, values: unknown[]) => this.#exclusive(name, values) as unknown as Result<R>)
  }

  /**
   * Connects, and creates or migrates the schema (safe when instances start
   * at once). A database that cannot be reached yet is no start-up error:
   * operations answer 503 until it can, then the schema is set up.
   */
  static async open (url: string, { log, poolSize = DEFAULT_POOL_SIZE }: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const pool = new pg.Pool({
      connectionString: url,
      max: poolSize,
      connectionTimeoutMillis: 5_000,
      // A query on a connection that died silently fails instead of hanging.
      query_timeout: 10_000,
      keepAlive: true
    })
    // An idle connection that breaks (the server restarts) must not crash
    // the process; the pool replaces it on next use.
    pool.on('error', (err) => log?.warn({ err }, 'idle PostgreSQL connection lost'))
    const store = new PostgresStore(pool, poolSize)
    try {
      await store.#ready()
    } catch (err) {
      if (!(err instanceof StoreUnavailableError)) {
        await pool.end()
        throw err
      }
      log?.warn({ reason: err.message }, 'PostgreSQL cannot be reached yet; requests answer 503 until it can')
    }
    return store
  }

  // The schema is set up once; until then every operation tries it first.
  #ready (): Promise<void> {
    if (this.#migrated) return Promise.resolve()
    const failure = this.#migrationFailure
    if (failure !== undefined && Date.now() < failure.until) return Promise.reject(failure.error)
    this.#migrating ??= this.#migrate().then(() => {
      this.#migrated = true
      this.#migrationFailure = undefined
    }, (err: Error) => {
      this.#migrating = undefined
      const error = isUnavailable(err) ? new StoreUnavailableError('unreachable') : err
      this.#migrationFailure = { error, until: Date.now() + RETRY_DELAY_MS }
      throw error
    })
    return this.#migrating
  }

  async #migrate (): Promise<void> {
    const client = await this.#pool.connect()
    try {
      await migrate({
        run: (sql, params) => client.query(sql, params),
        value: async (sql) => Object.values((await client.query(sql)).rows[0] ?? {})[0]
      }, {
        // Instances starting together wait on the lock, then find the work done.
        begin: ['BEGIN', `SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`],
        createTable: 'CREATE TABLE IF NOT EXISTS plant_store_migrations (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())',
        record: 'INSERT INTO plant_store_migrations (version) VALUES ($1)'
      }, POSTGRES_MIGRATIONS)
    } finally {
      client.release()
    }
  }

  async #query<R extends pg.QueryResultRow> (name: keyof typeof STATEMENTS, values: unknown[]): Promise<pg.QueryResult<R>> {
    await this.#ready()
    try {
      return await this.#pool.query<R>({ name, text: STATEMENTS[name], values })
    } catch (err) {
      throw this.#storeError(err as Error)
    }
  }

  /**
   * A statement in a transaction that first takes the subscriptions table
   * for itself: creates, whose statement reads the subscriptions, wait, so
   * that each sees a subscription added or deleted wholly before or after it
   * (and a delivery never references a subscription deleted meanwhile).
   */
  async #exclusive<R extends pg.QueryResultRow> (name: keyof typeof STATEMENTS, values: unknown[]): Promise<pg.QueryResult<R>> {
    await this.#ready()
    let client: pg.PoolClient
    try {
      client = await this.#pool.connect()
    } catch (err) {
      throw this.#storeError(err as Error)
    }
    try {
      await client.query('BEGIN')
      // Waiting for the lock holds up every create queued behind it: past
      // a second (a long report or an idle transaction reading the table),
      // the change is refused with a 503 instead.
      await client.query(`SET LOCAL lock_timeout = '${EXCLUSIVE_WAIT_MS}ms'`)
      await client.query('LOCK TABLE webhook_subscriptions IN ACCESS EXCLUSIVE MODE')
      const result = await client.query<R>({ name, text: STATEMENTS[name], values })
      await client.query('COMMIT')
      return result
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      throw this.#storeError(err as Error)
    } finally {
      client.release()
    }
  }

  #storeError (err: Error): Error {
    if ((err as { code?: string }).code === LOCK_NOT_AVAILABLE) return new StoreUnavailableError('busy')
    if (!isUnavailable(err)) return err
    // Every connection of the pool busy past the wait is load, not an outage.
    const busy = this.#pool.totalCount >= this.#poolSize && /timeout exceeded when trying to connect/.test(err.message)
    return new StoreUnavailableError(busy ? 'busy' : 'unreachable')
  }

  /**
   * Creates that arrive in one turn of the event loop go to PostgreSQL as
   * one statement: one round trip and one commit for all of them.
   */
  async create (plant: StoredPlant, traceparent?: string): Promise<CreateOutcome> {
    return new Promise((resolve, reject) => {
      this.#batch.push({ plant, traceparent, resolve, reject })
      if (this.#batch.length === 1) setImmediate(() => this.#flush())
    })
  }

  async #flush (): Promise<void> {
    const batch = this.#batch
    this.#batch = []
    try {
      const outcomes = await this.#createAll(batch)
      batch.forEach(({ resolve }, i) => resolve(outcomes[i]!))
    } catch (err) {
      // The database is away: every create of the batch gets its 503.
      if (err instanceof StoreUnavailableError || batch.length === 1) {
        for (const { reject } of batch) reject(err as Error)
        return
      }
      // One row the database refused must not fail the others: each is
      // tried again alone, and only the bad one fails.
      await Promise.all(batch.map((write) =>
        this.#createAll([write]).then((outcomes) => write.resolve(outcomes[0]!), write.reject)))
    }
  }

  async #createAll (writes: Array<{ plant: StoredPlant, traceparent: string | undefined }>): Promise<CreateOutcome[]> {
    const plants = writes.map(({ plant }) => plant)
    // (Validated text: no NUL, no unpaired surrogate, which PostgreSQL's text refuses.)
    const batch = JSON.stringify(writes.map(({ plant, traceparent }) => [plant.id.toString(), plant.name, plant.tag ?? null, newPlantPayload(plant), traceparent ?? null]))
    const inserted = await this.#query<{ id: string }>('plant_store_insert', [batch, Date.now()])
    const fresh = new Set(inserted.rows.map(({ id }) => id))
    const outcomes: Array<CreateOutcome | undefined> = plants.map(({ id }) => {
      const key = id.toString()
      if (!fresh.has(key)) return undefined
      fresh.delete(key) // a later row with the same id compares with this one
      return 'created'
    })
    const undecided = plants.filter((_, i) => outcomes[i] === undefined)
    if (undecided.length === 0) return outcomes as CreateOutcome[]
    const { rows } = await this.#query<Row>('plant_store_select_many', [undecided.map(({ id }) => id.toString())])
    const stored = new Map(rows.map((row) => [row.id, row]))
    const retry: number[] = []
    plants.forEach((plant, i) => {
      if (outcomes[i] !== undefined) return
      const row = stored.get(plant.id.toString())
      if (row === undefined) retry.push(i) // deleted since the insert: try again
      else outcomes[i] = outcomeOver(row, plant)
    })
    if (retry.length > 0) {
      const again = await this.#createAll(retry.map((i) => writes[i]!))
      retry.forEach((i, j) => { outcomes[i] = again[j] })
    }
    return outcomes as CreateOutcome[]
  }

  async get (id: bigint): Promise<StoredPlant | undefined> {
    const { rows } = await this.#query<Row>('plant_store_get', [id.toString()])
    return rows[0] && toPlant(rows[0])
  }

  async list ({ after, limit }: ListOptions): Promise<StoredPlant[]> {
    const size = pageSize(limit)
    const { rows } = after === undefined
      ? await this.#query<Row>('plant_store_list', [size])
      : await this.#query<Row>('plant_store_list_after', [after.toString(), size])
    return rows.map(toPlant)
  }

  async listJson ({ after, limit }: ListOptions): Promise<JsonText<StoredPlant[]>> {
    const size = pageSize(limit)
    const { rows } = after === undefined
      ? await this.#query<{ page: string }>('plant_store_list_json', [size])
      : await this.#query<{ page: string }>('plant_store_list_json_after', [after.toString(), size])
    return new JsonText(rows[0]!.page)
  }

  async delete (id: bigint): Promise<boolean> {
    return (await this.#query('plant_store_delete', [id.toString()])).rowCount === 1
  }

  async ping (): Promise<void> {
    await this.#query('plant_store_ping', [])
  }

  async close (): Promise<void> {
    await this.#pool.end()
  }
}
