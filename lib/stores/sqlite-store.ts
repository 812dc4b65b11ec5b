// SQLite through Node's built-in node:sqlite (no native addon to build).
// Writes go to a worker thread that group-commits them (sqlite-writer.ts);
// reads run here on their own read-only connection, which WAL never makes
// wait for a commit. A database that cannot be written now (read-only,
// locked, missing directory) leaves the store answering 503 until it can:
// each connection is opened again once its error clears, no restart needed.
import { DatabaseSync } from 'node:sqlite'
import type { StatementSync } from 'node:sqlite'
import type { Worker } from 'node:worker_threads'
import type { FastifyBaseLogger } from 'fastify'
import { DatabasePathError, StoreUnavailableError } from '../errors.ts'
import { JsonText } from '../json-text.ts'
import { FILE_REPLACED, FILE_REPLACED_MESSAGE, FileIdentity, configureSqlite, makeDatabaseDirectory, needsNewConnection, unavailableReason } from './sqlite-schema.ts'
import { LIMIT_PARAMETER } from './sqlite-limit.ts'
import { OTHER_RESULT, OUTCOMES, isWriterThread, mustSync, writerThread } from './sqlite-writer.ts'
import type { BatchReply, OtherWrite, Write, WriteBatch, WriteError, WriteResult, WriterMessage } from './sqlite-writer.ts'
import { webhookReads } from './sqlite-webhooks.ts'
import type { WebhookReads, WebhookWrite, WebhookWrites } from './sqlite-webhooks.ts'
import type { AttemptOutcome, Backlog, ClaimOptions, DeliveryPage, DeliveryRecord, DueDelivery, Subscription, WebhookStorage } from './webhook-storage.ts'
import { pageSize, plantOf } from './plant-storage.ts'
import type { CreateOutcome, ListOptions, PlantStorage, StoreObserver, StoredPlant, WriteTiming } from './plant-storage.ts'

// After a connection failed to open, another try waits this long: a
// database that stays read-only must not cost a worker start per request.
const REOPEN_DELAY_MS = 1000

// The longest writes held after a synced batch was answered wait for more
// to share their commit (#send): the outbox's bookkeeping (claims,
// records) for creates, a few creates for the answered clients' next ones.
// (Joined by creates, bookkeeping then waits for their commit's fsync too,
// where alone it would not: under create load, fewer deliveries go out
// during the load, the rest after it.)
const HOLD_MS = 2

class FileReplacedError extends Error {}

function toStoreError (error: WriteError): Error {
  if (error.errcode === FILE_REPLACED) return new FileReplacedError(error.message)
  const reason = unavailableReason(error.errcode)
  return reason ? new StoreUnavailableError(reason) : new Error(error.message)
}

// Plant rows are read as arrays: node:sqlite builds row objects with a
// null prototype, whose properties read several times slower: a page of
// 100 costs far less decoded from arrays.
type Row = [id: bigint, name: string, tag: string | null]

function toPlant (row: Row): StoredPlant {
  return plantOf(row[0], row[1], row[2])
}

// A page of plants, from the first or after a cursor (`WHERE id > ?`).
const page = (where: string) => `SELECT id, name, tag FROM plants ${where} ORDER BY id ${LIMIT_PARAMETER}`

// The same page as SQLite writes it in JSON: each plant with the members
// plantOf gives it, in the order the answer's serializer writes them (and
// SQLite escapes text as JSON.stringify does), so the text is the one the
// serialized page would be. The aggregate takes the rows in the order the
// subquery gives them: SQLite runs it as a co-routine, which its documents
// do not promise (an ORDER BY of the aggregate's own would sort the rows
// once more); the store suite checks the order.
const PLANT_JSON = "CASE WHEN tag IS NULL THEN json_object('name', name, 'id', id) ELSE json_object('name', name, 'id', id, 'tag', tag) END"
const pageJson = (where: string) => `SELECT json_group_array(${PLANT_JSON}) FROM (${page(where)})`

interface Reader {
  db: DatabaseSync
  file: FileIdentity
  begin: StatementSync
  commit: StatementSync
  get: StatementSync
  list: StatementSync
  listAfter: StatementSync
  listJson: StatementSync
  listJsonAfter: StatementSync
  webhooks: WebhookReads
}

interface PendingWrite {
  resolve: (value: WriteResult) => void
  reject: (err: Error) => void
  timing?: WriteTiming
}

// The writes of the next batch, as the writer takes them (WriteBatch), and
// who waits for each.
class Outbox {
  readonly pending: PendingWrite[] = []
  readonly #creates: number[] = []
  readonly #ids: bigint[] = []
  readonly #names: string[] = []
  readonly #tags: Array<string | null> = []
  readonly #nows: number[] = []
  #traceparents: Array<string | null> | undefined
  readonly #others: OtherWrite[] = []
  /** The writes waiting that must be on the disk before they are answered (mustSync): creates, most often. */
  syncedWrites = 0

  /** Whether some write waiting must be on the disk before it is answered. */
  get synced (): boolean {
    return this.syncedWrites > 0
  }

  /** Adds a write; the number of writes now waiting. */
  add (write: Write, pending: PendingWrite): number {
    if (mustSync(write)) this.syncedWrites++
    if (write.op === 'create') {
      this.#creates.push(1)
      this.#ids.push(write.plant.id)
      this.#names.push(write.plant.name)
      this.#tags.push(write.plant.tag ?? null)
      this.#nows.push(write.now)
      if (write.traceparent !== undefined) {
        this.#traceparents ??= this.#ids.slice(0, -1).map(() => null)
        this.#traceparents.push(write.traceparent)
      } else {
        this.#traceparents?.push(null)
      }
    } else {
      this.#creates.push(0)
      this.#others.push(write)
    }
    return this.pending.push(pending)
  }

  batch (): WriteBatch {
    const batch: WriteBatch = { sync: this.synced, creates: Uint8Array.from(this.#creates), ids: this.#ids, names: this.#names, tags: this.#tags, nows: this.#nows, others: this.#others }
    if (this.#traceparents !== undefined) batch.traceparents = this.#traceparents
    return batch
  }
}

interface QueuedRead {
  query: (reader: Reader) => unknown
  resolve: (value: unknown) => void
  reject: (err: Error) => void
}

export interface SqliteStoreOptions {
  log?: FastifyBaseLogger
  /** Told of every commit (metrics). */
  observer?: StoreObserver
}

export class SqliteStore implements PlantStorage {
  readonly #path: string
  #worker: Promise<Worker> | undefined
  // The writer once it is ready, until it stops: a write then needs no await for it.
  #running: Worker | undefined
  #writerDown: { error: Error, until: number } | undefined
  #reader: Reader | undefined
  #readerDown: { error: Error, until: number } | undefined
  // Writes not yet sent, and those of the batches with the writer (oldest first).
  #outbox = new Outbox()
  #inFlight: PendingWrite[][] = []
  #reads: QueuedRead[] = []
  // A batch is with the writer, not yet answered; and how many of its
  // writes must be on the disk (creates, most often).
  #sending = false
  #sendingSynced = 0
  #sendScheduled = false
  // Writes waiting a moment, after a synced batch was answered, for the
  // creates that follow it (#send).
  #held: NodeJS.Timeout | undefined
  // Synced writes waiting that end a hold at once: 1 when bookkeeping waits
  // for any create, more when a few creates wait for many (#send).
  #gather = 1
  #closed = false
  #fileReplaced = false

  readonly #observer: StoreObserver | undefined

  private constructor (path: string, observer: StoreObserver | undefined) {
    this.#path = path
    this.#observer = observer
  }

  /**
   * Opens (creating when missing) the database file and its directory. A
   * database that is unavailable for now (read-only, locked) still opens:
   * its operations answer 503 until it is back.
   */
  static async open (path: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    const { store, ready } = await SqliteStore.start(path, options)
    await ready
    return store
  }

  /**
   * The store, and when it is ready: its writer thread has started and
   * brought the schema to date. Nothing may read it before. (The plugin
   * compiles its routes meanwhile: the thread boots on the other core.)
   */
  static async start (path: string, options: SqliteStoreOptions = {}): Promise<{ store: SqliteStore, ready: Promise<void> }> {
    // A writer thread that runs a whole app (a bundle that did not split
    // the store off its entry) would start writers without end.
    if (isWriterThread()) throw new Error('The SQLite writer was bundled into the app\'s entry file: bundle with code splitting (README: Bundling)')
    if (!makeDatabaseDirectory(path)) throw new DatabasePathError(path)
    const store = new SqliteStore(path, options.observer)
    // The writer creates and migrates the schema before anything reads it.
    const ready = store.#writer().then(() => {}, (err: unknown) => {
      if (!(err instanceof StoreUnavailableError)) throw err
      options.log?.warn({ path, reason: err.message }, 'the SQLite database cannot be written for now; writes answer 503 until it can')
    })
    return { store, ready }
  }

  // Started on first use and again after it stopped, so that the store heals.
  #writer (): Promise<Worker> {
    if (this.#writerDown !== undefined && Date.now() < this.#writerDown.until) return Promise.reject(this.#writerDown.error)
    if (this.#worker !== undefined) return this.#worker
    // (A thread started early replays what it said meanwhile once it is
    // this store's #worker: its exit, if it is gone, must clear that.)
    let replay = () => {}
    this.#worker = new Promise<Worker>((resolve, reject) => {
      const fail = (error: Error) => {
        this.#writerDown = { error, until: Date.now() + REOPEN_DELAY_MS }
        reject(error)
      }
      const thread = writerThread(this.#path)
      const worker = thread.worker
      replay = thread.replay
      worker.on('message', (message: WriterMessage) => {
        if (message.type === 'ready') {
          this.#writerDown = undefined
          this.#running = worker
          resolve(worker)
        } else if (message.type === 'failed') {
          fail(toStoreError(message.error))
        } else {
          this.#sending = false
          this.#observer?.commit(message.replies.reduce((writes, reply) => writes + reply.codes.length, 0), message.seconds, message.synced)
          this.#settle(message.replies, message.seconds)
          this.#send(worker, false, this.#sendingSynced)
        }
      })
      worker.on('error', (err) => fail(new StoreUnavailableError(`writer failed: ${err.message}`)))
      // A reply that cannot be read would leave its batch, and every write
      // held behind it, unanswered: the writer is stopped instead (its exit
      // fails them all, and the next write starts another).
      worker.on('messageerror', () => { worker.terminate().catch(() => {}) })
      worker.on('exit', () => {
        this.#worker = undefined
        this.#running = undefined
        // Its writes are rejected below, those not yet sent too.
        const lost = [...this.#inFlight.flat(), ...this.#outbox.pending]
        this.#outbox = new Outbox()
        this.#inFlight = []
        this.#sending = false
        // (A held batch's timer would send the next writer's writes to this one.)
        clearTimeout(this.#held)
        this.#held = undefined
        const error = new StoreUnavailableError('writer stopped')
        for (const { reject } of lost) reject(error)
        reject(error)
      })
    })
    const worker = this.#worker
    replay()
    return worker
  }

  #settle (replies: BatchReply[], seconds: number): void {
    const committed = Date.now()
    for (const { codes, results, errors } of replies) {
      const writes = this.#inFlight.shift() ?? []
      let result = 0
      let failure = 0
      for (let i = 0; i < writes.length; i++) {
        const { resolve, reject, timing } = writes[i]!
        if (timing !== undefined) Object.assign(timing, { committing: committed - seconds * 1000, committed })
        const code = codes[i]!
        if (code < OTHER_RESULT) {
          resolve(OUTCOMES[code]!)
        } else if (code === OTHER_RESULT) {
          resolve(results[result++]!)
        } else {
          const error = toStoreError(errors[failure++]!)
          if (error instanceof FileReplacedError) this.#fileReplaced = true
          reject(this.#unavailable() ?? error)
        }
      }
    }
  }

  // Sticky: the open files are no longer the database at the path.
  #unavailable (): Error | undefined {
    if (this.#closed) return new StoreUnavailableError('closing')
    if (this.#fileReplaced) return new StoreUnavailableError(FILE_REPLACED_MESSAGE)
    return undefined
  }

  async #write (request: Write, timing?: WriteTiming): Promise<WriteResult> {
    const unavailable = this.#unavailable()
    if (unavailable) throw unavailable
    const worker = this.#running ?? await this.#writer()
    return new Promise((resolve, reject) => {
      // Writes travel in batches, one structured clone and one wake-up of
      // the writer for each: those of one turn of the event loop, or, while
      // the writer commits a batch, all that arrive meanwhile (sent when it
      // answers, as it could not start on them sooner, or held a moment
      // longer for more: #send).
      const waiting = this.#outbox.add(request, { resolve, reject, timing })
      if (!this.#sending && (waiting === 1 || (this.#held !== undefined && this.#outbox.syncedWrites >= this.#gather)) && !this.#sendScheduled) {
        this.#sendScheduled = true
        setImmediate(() => {
          this.#sendScheduled = false
          this.#send(worker)
        })
      }
    })
  }

  // `force`: at close, what is left goes now, before the writer is told to
  // stop. `answered`: the synced writes of the batch just answered (not its
  // bookkeeping: no client waits on that). Their clients' next creates are
  // on their way, and what waits is held up to HOLD_MS for them:
  // bookkeeping alone until the first comes (it then shares its commit
  // rather than taking one ahead of it); creates fewer than half as many
  // until half have joined them (sent at once, they took a commit of their
  // own, so that under load commits alternated between a few writes and
  // many). Either way, under load, a commit saved per batch.
  #send (worker: Worker, force = false, answered = 0): void {
    if ((this.#sending && !force) || this.#outbox.pending.length === 0) return
    if (!force && answered > 0 && this.#held === undefined && this.#outbox.syncedWrites * 2 < answered) {
      this.#gather = this.#outbox.synced ? Math.ceil(answered / 2) : 1
      this.#held = setTimeout(() => this.#send(worker), HOLD_MS).unref()
      return
    }
    clearTimeout(this.#held)
    this.#held = undefined
    const outbox = this.#outbox
    this.#outbox = new Outbox()
    this.#sending = true
    this.#sendingSynced = outbox.syncedWrites
    this.#inFlight.push(outbox.pending)
    worker.postMessage(outbox.batch())
  }

  async create (plant: StoredPlant, traceparent?: string, timing?: WriteTiming): Promise<CreateOutcome> {
    return await this.#write(traceparent === undefined ? { op: 'create', plant, now: Date.now() } : { op: 'create', plant, now: Date.now(), traceparent }, timing) as CreateOutcome
  }

  /** The webhook outbox: changes through the writer, reads on the reading connection. */
  readonly webhooks: WebhookStorage = new SqliteWebhooks(
    async (name, ...args) => this.#write({ op: 'webhooks', name, args } as WebhookWrite),
    (query) => this.#read((reader) => query(reader.webhooks)))

  async delete (id: bigint): Promise<boolean> {
    return await this.#write({ op: 'delete', id }) as boolean
  }

  #openReader (): Reader {
    if (this.#readerDown !== undefined && Date.now() < this.#readerDown.until) throw this.#readerDown.error
    try {
      const db = new DatabaseSync(this.#path, { readOnly: true })
      configureSqlite(db, { writer: false })
      const prepare = (sql: string) => {
        const statement = db.prepare(sql)
        statement.setReadBigInts(true)
        return statement
      }
      const prepareRows = (sql: string) => {
        const statement = prepare(sql)
        statement.setReturnArrays(true)
        return statement
      }
      this.#readerDown = undefined
      return {
        db,
        file: new FileIdentity(this.#path),
        begin: db.prepare('BEGIN'),
        commit: db.prepare('COMMIT'),
        get: prepareRows('SELECT id, name, tag FROM plants WHERE id = ?'),
        list: prepareRows(page('')),
        listAfter: prepareRows(page('WHERE id > ?')),
        listJson: prepareRows(pageJson('')),
        listJsonAfter: prepareRows(pageJson('WHERE id > ?')),
        webhooks: webhookReads(prepare)
      }
    } catch (err) {
      const error = toStoreError(err as WriteError)
      this.#readerDown = { error, until: Date.now() + REOPEN_DELAY_MS }
      throw error
    }
  }

  #read<T> (query: (reader: Reader) => T): T {
    const unavailable = this.#unavailable()
    if (unavailable) throw unavailable
    const reader = this.#reader ??= this.#openReader()
    try {
      return query(reader)
    } catch (err) {
      if (needsNewConnection((err as WriteError).errcode)) {
        reader.db.close()
        this.#reader = undefined
      }
      throw toStoreError(err as WriteError)
    }
  }

  // The reads that arrived in one turn of the event loop share one read
  // transaction: beginning and ending one costs more than a small read
  // (two fcntl locks on the WAL index, and SQLite's own checks). Each still
  // sees every write acknowledged before it arrived: the transaction
  // begins after it arrived.
  #batchRead<T> (query: (reader: Reader) => T): Promise<T> {
    return new Promise((resolve, reject) => {
      if (this.#reads.push({ query, resolve, reject } as QueuedRead) === 1) setImmediate(this.#flushReads)
    })
  }

  readonly #flushReads = (): void => {
    const reads = this.#reads
    this.#reads = []
    if (reads.length > 1) {
      let reader: Reader | undefined
      try {
        if (this.#unavailable() === undefined) {
          reader = this.#reader ??= this.#openReader()
          reader.begin.run()
        }
      } catch {
        reader = undefined
      }
      if (reader !== undefined) {
        for (const read of reads) this.#settleRead(read)
        // (A read that failed may have closed this connection, or ended
        // its transaction.)
        if (this.#reader === reader) {
          try {
            if (reader.db.isTransaction) reader.commit.run()
          } catch {
            reader.db.close()
            this.#reader = undefined
          }
        }
        return
      }
    }
    for (const read of reads) this.#settleRead(read)
  }

  #settleRead (read: QueuedRead): void {
    let value
    try {
      value = this.#read(read.query)
    } catch (err) {
      read.reject(err as Error)
      return
    }
    read.resolve(value)
  }

  async get (id: bigint): Promise<StoredPlant | undefined> {
    const row = await this.#batchRead((reader) => reader.get.get(id)) as unknown as Row | undefined
    return row && toPlant(row)
  }

  async list ({ after, limit }: ListOptions): Promise<StoredPlant[]> {
    const size = pageSize(limit)
    const rows = await this.#batchRead((reader) => after === undefined ? reader.list.all(size) : reader.listAfter.all(after, size)) as unknown as Row[]
    return rows.map(toPlant)
  }

  // (A page of 100 as JSON: SQLite writes it in the time it takes to read
  // the rows out; serializing them cost as much again.)
  async listJson ({ after, limit }: ListOptions): Promise<JsonText<StoredPlant[]>> {
    const size = pageSize(limit)
    const [text] = await this.#batchRead((reader) => after === undefined ? reader.listJson.get(size) : reader.listJsonAfter.get(after, size)) as unknown as [string]
    return new JsonText(text)
  }

  /** Ready when the file is still the one opened, it reads, and the writer runs (or can start). */
  async ping (): Promise<void> {
    this.#read((reader) => {
      if (!reader.file.unchanged()) this.#fileReplaced = true
      return reader.get.get(0n)
    })
    const unavailable = this.#unavailable()
    if (unavailable) throw unavailable
    await this.#writer()
  }

  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    const worker = await this.#worker?.catch(() => undefined)
    if (worker) {
      // The writer commits what it holds before it stops.
      const exited = new Promise((resolve) => worker.once('exit', resolve))
      this.#send(worker, true)
      worker.postMessage('close')
      await exited
    }
    this.#reader?.db.close()
  }
}

type WriteCall = <Name extends keyof WebhookWrites>(name: Name, ...args: Parameters<WebhookWrites[Name]>) => Promise<WriteResult>

class SqliteWebhooks implements WebhookStorage {
  readonly #write: WriteCall
  readonly #read: <T>(query: (reads: WebhookReads) => T) => T
  // The last claim found deliveries.
  #claimsFound = false

  constructor (write: WriteCall, read: <T>(query: (reads: WebhookReads) => T) => T) {
    this.#write = write
    this.#read = read
  }

  async subscribe (subscription: Subscription, max: number): Promise<boolean> {
    return await this.#write('subscribe', subscription, max) as boolean
  }

  async subscriptions (): Promise<Subscription[]> {
    return this.#read((reads) => reads.subscriptions())
  }

  async subscription (id: string): Promise<Subscription | undefined> {
    return this.#read((reads) => reads.subscription(id))
  }

  async unsubscribe (id: string): Promise<boolean> {
    return await this.#write('unsubscribe', id) as boolean
  }

  async deliveries (subscriptionId: string, { after, limit }: DeliveryPage): Promise<DeliveryRecord[] | undefined> {
    return this.#read((reads) => reads.subscription(subscriptionId) && reads.deliveries(subscriptionId, after, limit))
  }

  async retry (subscriptionId: string, seq: bigint, now: number): Promise<DeliveryRecord | undefined> {
    return await this.#write('retry', subscriptionId, seq, now) as DeliveryRecord | undefined
  }

  async claim (options: ClaimOptions): Promise<DueDelivery[]> {
    // Most claims find nothing to do (no subscription, or every one at its
    // allowance): they are answered here, on the reading connection, rather
    // than as a transaction in the writer's queue. While claims keep finding
    // deliveries (a backlog), the next goes to the writer at once.
    if (!this.#claimsFound && !this.#read((reads) => reads.anyDue(options))) return []
    this.#claimsFound = false
    const claimed = await this.#write('claim', options) as DueDelivery[]
    this.#claimsFound = claimed.length > 0
    return claimed
  }

  async record (outcomes: readonly AttemptOutcome[]): Promise<void> {
    await this.#write('record', outcomes)
  }

  async release (seqs: readonly bigint[]): Promise<void> {
    await this.#write('release', seqs)
  }

  async backlog (): Promise<Backlog> {
    return this.#read((reads) => reads.backlog())
  }
}
