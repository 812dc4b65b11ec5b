// SQLite through Node's built-in node:sqlite (no native addon to build).
// Writes go to a worker thread that group-commits them (sqlite-writer.ts);
// reads run here on their own connection, which WAL never makes wait for a
// commit.
import { mkdir } from 'node:fs/promises'
import { dirname, extname } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import type { StatementSync } from 'node:sqlite'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { StoreUnavailableError } from '../errors.ts'
import { configureSqlite } from './sqlite-schema.ts'
import type { Write, WriteReply, WriteRequest, WriterData, WriterMessage } from './sqlite-writer.ts'
import type { CreateOutcome, ListOptions, PlantStore, StoredPlant } from './plant-store.ts'

// From the sources the writer is sqlite-writer.ts, from dist sqlite-writer.js.
const WRITER = new URL(`./sqlite-writer${extname(fileURLToPath(import.meta.url))}`, import.meta.url)

// SQLite result codes (the primary code, the low byte) that mean "not now"
// rather than "wrong": busy, locked, I/O error, full, cannot open, read-only.
const UNAVAILABLE = new Map([[5, 'busy'], [6, 'locked'], [8, 'read-only'], [10, 'I/O error'], [13, 'full'], [14, 'cannot open']])

function toStoreError (error: { message: string, errcode?: number }): Error {
  const reason = error.errcode === undefined ? undefined : UNAVAILABLE.get(error.errcode & 0xff)
  return reason ? new StoreUnavailableError(reason) : new Error(error.message)
}

interface Row { id: bigint, name: string, tag: string | null }

function toPlant ({ id, name, tag }: Row): StoredPlant {
  return tag === null ? { id, name } : { id, name, tag }
}

export interface SqliteStoreOptions {
  /** Extra PRAGMAs for both connections, e.g. { max_page_count: 100 }. */
  pragmas?: Record<string, string | number>
}

export class SqliteStore implements PlantStore {
  readonly #path: string
  readonly #options: SqliteStoreOptions
  readonly #pending = new Map<number, { resolve: (value: CreateOutcome | boolean) => void, reject: (err: Error) => void }>()
  #worker: Promise<Worker> | undefined
  #outbox: WriteRequest[] = []
  #seq = 0
  #commits = 0
  #closed = false
  #reader!: DatabaseSync
  #get!: StatementSync
  #list!: StatementSync
  #listAfter!: StatementSync

  private constructor (path: string, options: SqliteStoreOptions) {
    this.#path = path
    this.#options = options
  }

  /** Opens (creating when missing) the database file and its directory. */
  static async open (path: string, options: SqliteStoreOptions = {}): Promise<SqliteStore> {
    await mkdir(dirname(path), { recursive: true })
    const store = new SqliteStore(path, options)
    // The writer creates and migrates the schema before anything reads it.
    await store.#writer()
    store.#reader = new DatabaseSync(path)
    configureSqlite(store.#reader, options.pragmas)
    const prepare = (sql: string) => {
      const statement = store.#reader.prepare(sql)
      statement.setReadBigInts(true)
      return statement
    }
    store.#get = prepare('SELECT id, name, tag FROM plants WHERE id = ?')
    store.#list = prepare('SELECT id, name, tag FROM plants ORDER BY id LIMIT ?')
    store.#listAfter = prepare('SELECT id, name, tag FROM plants WHERE id > ? ORDER BY id LIMIT ?')
    return store
  }

  /** Transactions committed so far: fewer than writes when group commit works. */
  get commits (): number {
    return this.#commits
  }

  // Started on first use and again after a crash, so that the store heals.
  #writer (): Promise<Worker> {
    this.#worker ??= new Promise<Worker>((resolve, reject) => {
      const worker = new Worker(WRITER, { workerData: { path: this.#path, pragmas: this.#options.pragmas } satisfies WriterData })
      worker.on('message', (message: WriterMessage) => {
        if (message.type === 'ready') resolve(worker)
        else if (message.type === 'failed') reject(toStoreError(message.error))
        else this.#settle(message.replies, message.commits)
      })
      worker.on('error', (err) => reject(err))
      worker.on('exit', () => {
        this.#worker = undefined
        const error = new StoreUnavailableError('writer stopped')
        for (const { reject } of this.#pending.values()) reject(error)
        this.#pending.clear()
        reject(error)
      })
    })
    return this.#worker
  }

  #settle (replies: WriteReply[], commits: number): void {
    this.#commits = commits
    for (const reply of replies) {
      const pending = this.#pending.get(reply.seq)
      this.#pending.delete(reply.seq)
      if ('error' in reply) pending?.reject(toStoreError(reply.error))
      else pending?.resolve(reply.result)
    }
  }

  async #write (request: Write): Promise<CreateOutcome | boolean> {
    if (this.#closed) throw new StoreUnavailableError('closing')
    const worker = await this.#writer()
    const seq = ++this.#seq
    return new Promise((resolve, reject) => {
      this.#pending.set(seq, { resolve, reject })
      // Writes of one turn of the event loop travel as one message: one
      // structured clone and one wake-up of the writer for all of them.
      this.#outbox.push({ ...request, seq })
      if (this.#outbox.length === 1) setImmediate(() => this.#send(worker))
    })
  }

  #send (worker: Worker): void {
    const batch = this.#outbox
    this.#outbox = []
    worker.postMessage(batch)
  }

  async create (plant: StoredPlant): Promise<CreateOutcome> {
    return await this.#write({ op: 'create', plant }) as CreateOutcome
  }

  async delete (id: bigint): Promise<boolean> {
    return await this.#write({ op: 'delete', id }) as boolean
  }

  async get (id: bigint): Promise<StoredPlant | undefined> {
    const row = this.#read(() => this.#get.get(id)) as Row | undefined
    return row && toPlant(row)
  }

  async list ({ after, limit }: ListOptions): Promise<StoredPlant[]> {
    const rows = this.#read(() => after === undefined ? this.#list.all(limit) : this.#listAfter.all(after, limit)) as unknown as Row[]
    return rows.map(toPlant)
  }

  async ping (): Promise<void> {
    this.#read(() => this.#get.get(0n))
  }

  #read<T> (query: () => T): T {
    if (this.#closed) throw new StoreUnavailableError('closing')
    try {
      return query()
    } catch (err) {
      throw toStoreError(err as { message: string, errcode?: number })
    }
  }

  async close (): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    const worker = await this.#worker?.catch(() => undefined)
    if (worker) {
      // The writer commits what it holds before it stops.
      const exited = new Promise((resolve) => worker.once('exit', resolve))
      if (this.#outbox.length > 0) this.#send(worker)
      worker.postMessage('close')
      await exited
    }
    this.#reader?.close()
  }
}
