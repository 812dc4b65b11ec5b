// The SQLite store's writer, in a worker thread: it owns the only write
// connection, so that fsyncs never block the server's event loop, and it
// commits every write that arrived meanwhile in one transaction (group
// commit): one fsync for many creates. One write's failure is its own: the
// others of its transaction still commit.
//
// The store starts this module's own file (WRITER_URL) as the worker: no
// file name to derive. Bundled, this module's code runs when its chunk is
// loaded: a bundler must split at the store's dynamic import (Rollup and
// webpack do; esbuild with --splitting), so that the worker loads the
// store's chunk and not the host app.
import { closeSync, fsyncSync, openSync } from 'node:fs'
import { DatabaseSync } from 'node:sqlite'
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import type { MessagePort } from 'node:worker_threads'
import { FILE_REPLACED, FILE_REPLACED_MESSAGE, FileIdentity, configureSqlite, makeDatabaseDirectory, migrateSqlite, needsNewConnection } from './sqlite-schema.ts'
import { outcomeOver } from './plant-storage.ts'
import { webhookWrites } from './sqlite-webhooks.ts'
import type { WebhookWrite, WebhookWrites } from './sqlite-webhooks.ts'
import { BOOKKEEPING, newPlantPayload } from './webhook-storage.ts'
import type { CreateOutcome, PlantContent, StoredPlant } from './plant-storage.ts'

export type Write = { op: 'create', plant: StoredPlant, now: number, traceparent?: string } | { op: 'delete', id: bigint } | WebhookWrite
/** Writes other than creates, as they travel to the writer. */
export type OtherWrite = Exclude<Write, { op: 'create' }>

/** What a write answers: a create's outcome, whether a delete found its row, or an outbox change's result. */
export type WriteResult = CreateOutcome | boolean | ReturnType<WebhookWrites[keyof WebhookWrites]>

export interface WriteError { message: string, errcode?: number }

/**
 * Writes in the order they were made, as one message. Creates, nearly all
 * of them, travel as columns of primitives (a structured clone of objects
 * names every property and builds every object again on the other side):
 * `creates` marks which writes are creates; the other writes are
 * `others`, in order.
 */
export interface WriteBatch {
  /** Whether some write of the batch must be on the disk before it is answered (mustSync). */
  sync: boolean
  creates: Uint8Array
  ids: bigint[]
  names: string[]
  /** null: no tag. */
  tags: Array<string | null>
  nows: number[]
  /** Only when some create of the batch has one. */
  traceparents?: Array<string | null>
  others: OtherWrite[]
}

/** A create's outcome, or what else a write's reply is, one byte per write. */
export const OUTCOMES: readonly CreateOutcome[] = ['created', 'replayed', 'conflict']
export const OTHER_RESULT = 3
export const FAILED = 4

/**
 * What a batch's writes did, in order: `codes` has a byte per write (an
 * index into OUTCOMES, OTHER_RESULT or FAILED); `results` holds, in order,
 * what the others answered, and `errors` why the failed ones failed.
 */
export interface BatchReply {
  codes: Uint8Array
  results: WriteResult[]
  errors: WriteError[]
}

export type WriterMessage =
  | { type: 'ready' }
  | { type: 'failed', error: WriteError }
  | { type: 'written', replies: BatchReply[], seconds: number, synced: boolean }

const ROLE = 'plant-store:sqlite-writer'

interface WriterData {
  role: typeof ROLE
  path: string
}

/** What the store starts as its writer thread: this file, wherever it is. */
const WRITER_URL = new URL(import.meta.url)

/** Whether this thread is a writer: a store opened here was bundled into the writer's chunk. */
export function isWriterThread (): boolean {
  return !isMainThread && (workerData as WriterData | undefined)?.role === ROLE
}

/** The writer thread's name, as `top -H`, `ps -L` and perf show it (Linux keeps its first 15 bytes). */
export const WRITER_THREAD_NAME = ROLE

function spawn (path: string): Worker {
  return new Worker(WRITER_URL, { name: WRITER_THREAD_NAME, workerData: { role: ROLE, path } satisfies WriterData })
}

// What a writer thread emits, as its store listens for it.
const EVENTS = ['message', 'error', 'messageerror', 'exit'] as const

interface EarlyWriter {
  worker: Worker
  // What it emitted before its store took it, in order.
  missed: Array<[typeof EVENTS[number], unknown[]]>
  listeners: Array<[typeof EVENTS[number], (...args: unknown[]) => void]>
}

// Writer threads started ahead of their store, by database path.
const early = new Map<string, EarlyWriter>()

/**
 * Starts the writer thread of the database at `path` ahead of the store
 * that will take it (writerThread): the standalone server starts it before
 * it loads its own modules, so that the thread boots and brings the schema
 * to date on another core meanwhile, rather than after. Where the store
 * would refuse the path (a directory) or fail to make its directory or
 * thread, nothing starts (undefined): the store's own start says why.
 * Until taken, the thread does not hold the process open.
 */
export function startWriterEarly (path: string): Worker | undefined {
  if (early.has(path) || isWriterThread()) return undefined
  let worker: Worker
  try {
    if (!makeDatabaseDirectory(path)) return undefined
    worker = spawn(path)
  } catch {
    return undefined
  }
  worker.unref()
  const started: EarlyWriter = { worker, missed: [], listeners: [] }
  for (const name of EVENTS) {
    const listener = (...args: unknown[]) => { started.missed.push([name, args]) }
    worker.on(name, listener)
    started.listeners.push([name, listener])
  }
  early.set(path, started)
  return worker
}

/**
 * The writer thread of the database at `path`: the one started early for
 * it, or a new one. `replay` emits again what an early one emitted before
 * it was taken: called once the caller listens, and has recorded the thread
 * as its own (an `exit` among them says it is gone).
 */
export function writerThread (path: string): { worker: Worker, replay: () => void } {
  const started = early.get(path)
  if (started === undefined) return { worker: spawn(path), replay: () => {} }
  early.delete(path)
  const { worker, missed, listeners } = started
  for (const [name, listener] of listeners) worker.off(name, listener)
  worker.ref()
  return { worker, replay: () => { for (const [name, args] of missed) worker.emit(name, ...args) } }
}

/** Whether a write must be on the disk before it is answered: any write but the outbox's bookkeeping. */
export function mustSync (write: Write): boolean {
  return write.op !== 'webhooks' || !BOOKKEEPING.has(write.name)
}

function syncWal (path: string): void {
  try {
    const fd = openSync(`${path}-wal`, 'r')
    try {
      fsyncSync(fd)
    } finally {
      closeSync(fd)
    }
  } catch {
    // No log to sync.
  }
}

function describe (err: unknown): WriteError {
  const { message, errcode } = err as WriteError
  return { message, errcode }
}

async function serve (port: MessagePort, path: string): Promise<void> {
  let db: DatabaseSync
  let file: FileIdentity
  try {
    db = new DatabaseSync(path)
    configureSqlite(db, { writer: true })
    await migrateSqlite(db)
    // A file SQLite could only open read-only still opens, and even begins
    // transactions: a write that changes nothing proves it can be written.
    const { user_version: version } = db.prepare('PRAGMA user_version').get() as { user_version: number }
    db.exec(`PRAGMA user_version = ${version}`)
    file = new FileIdentity(path)
  } catch (err) {
    port.postMessage({ type: 'failed', error: describe(err) } satisfies WriterMessage)
    process.exit(1)
  }

  // Every statement reads integers as bigints: run() reports the last
  // inserted rowid, an id, which Node 26 refuses to turn into a number
  // past 2^53 (Node 24 rounds it silently).
  const prepare = (sql: string) => {
    const statement = db.prepare(sql)
    statement.setReadBigInts(true)
    return statement
  }
  // The connection's safety level as SQLite has it, FULL being 2. (Prepared
  // each time: a prepared PRAGMA may answer the level it was prepared at.)
  const fullSync = () => (db.prepare('PRAGMA synchronous').get() as { synchronous: number }).synchronous >= 2
  // Bookkeeping may go without an fsync only in WAL mode, where a later
  // fsync carries it and a lost tail costs nothing but that tail.
  const wal = (db.prepare('PRAGMA journal_mode').get() as { journal_mode: string }).journal_mode === 'wal'
  const insert = prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING')
  const select = prepare('SELECT name, tag FROM plants WHERE id = ?')
  const remove = prepare('DELETE FROM plants WHERE id = ?')

  const webhooks = webhookWrites(prepare)

  // A created plant and its deliveries, one per subscription, in one
  // transaction: when the deliveries cannot be written the plant is taken
  // out again (the batch's other writes still commit), so that no plant is
  // without its events.
  // Whether the transaction under way has subscriptions to write deliveries
  // for: looked up once per transaction rather than once per create, and
  // again after a subscription change in it. (Other processes cannot change
  // them meanwhile: the transaction holds the write lock.)
  let subscribed: boolean | undefined
  // Whether the connection is at PRAGMA synchronous FULL (configureSqlite),
  // as read back from SQLite; NORMAL for a transaction of bookkeeping
  // alone, which WAL then writes without an fsync: the next synced commit's
  // fsync (or a checkpoint's) carries it to the disk with its own.
  let synchronous = true

  function create (plant: StoredPlant, now: number, traceparent: string | undefined): CreateOutcome {
    if (Number(insert.run(plant.id, plant.name, plant.tag ?? null).changes) === 0) {
      return outcomeOver(select.get(plant.id) as unknown as PlantContent, plant)
    }
    try {
      subscribed ??= webhooks.anySubscription()
      if (!subscribed) return 'created'
      webhooks.enqueue(plant.id, newPlantPayload(plant), now, traceparent)
    } catch (err) {
      if (db.isTransaction) remove.run(plant.id)
      throw err
    }
    return 'created'
  }

  function other (write: OtherWrite): WriteResult {
    switch (write.op) {
      case 'delete': return Number(remove.run(write.id).changes) === 1
      case 'webhooks':
        // (Claims, records and retries, batched with creates, change no subscription.)
        if (write.name === 'subscribe' || write.name === 'unsubscribe') subscribed = undefined
        return (webhooks[write.name] as (...args: unknown[]) => WriteResult)(...write.args)
    }
  }

  // Applies a batch's writes in order, a byte per write in its reply.
  function apply (batch: WriteBatch, reply: BatchReply): void {
    const { creates, ids, names, tags, nows, traceparents, others } = batch
    let nextCreate = 0
    let nextOther = 0
    for (let i = 0; i < creates.length; i++) {
      try {
        if (creates[i] === 1) {
          const at = nextCreate++
          const tag = tags[at]
          const outcome = create(tag === null ? { id: ids[at]!, name: names[at]! } : { id: ids[at]!, name: names[at]!, tag: tag! }, nows[at]!, traceparents?.[at] ?? undefined)
          reply.codes[i] = OUTCOMES.indexOf(outcome)
        } else {
          reply.results.push(other(others[nextOther++]!))
          reply.codes[i] = OTHER_RESULT
        }
      } catch (err) {
        if (!db.isTransaction) throw err
        reply.codes[i] = FAILED
        reply.errors.push(describe(err))
      }
    }
  }

  // Every write of the batches in one transaction. A write that fails alone
  // (a constraint, a value the database refuses) leaves the transaction
  // open: SQLite undoes just that statement, and the others commit. An error
  // that ends the transaction (disk full, I/O) fails every write of it.
  function commit (batches: WriteBatch[], sync: boolean): BatchReply[] {
    const replies = batches.map((batch) => ({ codes: new Uint8Array(batch.creates.length), results: [], errors: [] } as BatchReply))
    const failAll = (error: WriteError) => {
      for (const reply of replies) {
        reply.codes.fill(FAILED)
        reply.results = []
        reply.errors = Array.from(reply.codes, () => error)
      }
      return replies
    }
    if (!file.unchanged()) return failAll({ message: FILE_REPLACED_MESSAGE, errcode: FILE_REPLACED })
    try {
      if (sync !== synchronous) {
        db.exec(`PRAGMA synchronous = ${sync ? 'FULL' : 'NORMAL'}`)
        synchronous = fullSync()
        // (Never a write that must reach the disk without its fsync.)
        if (sync && !synchronous) throw new Error('PRAGMA synchronous = FULL did not take')
      }
      db.exec('BEGIN IMMEDIATE')
      subscribed = undefined
      batches.forEach((batch, i) => apply(batch, replies[i]!))
      db.exec('COMMIT')
      return replies
    } catch (err) {
      if (db.isTransaction) db.exec('ROLLBACK')
      return failAll(describe(err))
    }
  }

  let queue: WriteBatch[] = []

  function flush (): void {
    const batches = queue
    if (batches.length === 0) return
    queue = []
    const start = performance.now()
    const replies = commit(batches, !wal || batches.some((batch) => batch.sync))
    port.postMessage({ type: 'written', replies, seconds: (performance.now() - start) / 1000, synced: synchronous } satisfies WriterMessage)
    // A connection opened read-only, or whose file went away, stays so: the
    // store starts a new writer for the next write, which sees the fix.
    if (replies.some((reply) => reply.errors.some((error) => needsNewConnection(error.errcode)))) {
      db.close()
      process.exit(1)
    }
  }

  port.on('message', (batch: WriteBatch | 'close') => {
    if (batch === 'close') {
      flush()
      // A clean stop leaves nothing unsynced: the reading connection may
      // still be open, so closing this one is no checkpoint.
      if (!synchronous) syncWal(path)
      db.close()
      port.close()
      return
    }
    const idle = queue.length === 0
    queue.push(batch)
    // Batches that arrive before the next turn of the loop join this transaction.
    if (idle) setImmediate(flush)
  })

  port.postMessage({ type: 'ready' } satisfies WriterMessage)
}

// (In the store's thread this module only lends its URL and types.)
if (isWriterThread()) {
  serve(parentPort!, (workerData as WriterData).path).catch((err: Error) => {
    parentPort!.postMessage({ type: 'failed', error: describe(err) } satisfies WriterMessage)
    process.exit(1)
  })
}
