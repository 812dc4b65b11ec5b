// The SQLite store's writer, in a worker thread: it owns the only write
// connection, so that fsyncs never block the server's event loop, and it
// commits every write that arrived meanwhile in one transaction (group
// commit): one fsync for many creates.
import { DatabaseSync } from 'node:sqlite'
import { parentPort, workerData } from 'node:worker_threads'
import { configureSqlite, migrateSqlite } from './sqlite-schema.ts'
import type { CreateOutcome, StoredPlant } from './plant-store.ts'

export type Write = { op: 'create', plant: StoredPlant } | { op: 'delete', id: bigint }
export type WriteRequest = Write & { seq: number }

export type WriteReply =
  | { seq: number, result: CreateOutcome | boolean }
  | { seq: number, error: { message: string, errcode?: number } }

export type WriterMessage =
  | { type: 'ready' }
  | { type: 'failed', error: { message: string, errcode?: number } }
  | { type: 'written', replies: WriteReply[], commits: number }

export interface WriterData {
  path: string
  pragmas?: Record<string, string | number>
}

const port = parentPort!
const { path, pragmas } = workerData as WriterData

function describe (err: unknown) {
  const { message, errcode } = err as { message: string, errcode?: number }
  return { message, errcode }
}

let db: DatabaseSync
try {
  db = new DatabaseSync(path)
  configureSqlite(db, pragmas)
  migrateSqlite(db)
} catch (err) {
  port.postMessage({ type: 'failed', error: describe(err) } satisfies WriterMessage)
  process.exit(1)
}

const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?) ON CONFLICT (id) DO NOTHING')
const select = db.prepare('SELECT name, tag FROM plants WHERE id = ?')
const remove = db.prepare('DELETE FROM plants WHERE id = ?')
let commits = 0

function create (plant: StoredPlant): CreateOutcome {
  if (insert.run(plant.id, plant.name, plant.tag ?? null).changes === 1) return 'created'
  const existing = select.get(plant.id) as { name: string, tag: string | null }
  return existing.name === plant.name && (existing.tag ?? undefined) === plant.tag ? 'replayed' : 'conflict'
}

function apply (request: WriteRequest): CreateOutcome | boolean {
  return request.op === 'create' ? create(request.plant) : remove.run(request.id).changes === 1
}

let queue: WriteRequest[] = []

function flush (): void {
  const batch = queue
  if (batch.length === 0) return
  queue = []
  let replies: WriteReply[]
  try {
    db.exec('BEGIN IMMEDIATE')
    replies = batch.map((request) => ({ seq: request.seq, result: apply(request) }))
    db.exec('COMMIT')
    commits++
  } catch (err) {
    // All or nothing: the batch is rolled back and every request in it fails.
    if (db.isTransaction) db.exec('ROLLBACK')
    const error = describe(err)
    replies = batch.map((request) => ({ seq: request.seq, error }))
  }
  port.postMessage({ type: 'written', replies, commits } satisfies WriterMessage)
}

port.on('message', (requests: WriteRequest[] | 'close') => {
  if (requests === 'close') {
    flush()
    db.close()
    port.close()
    return
  }
  const idle = queue.length === 0
  queue.push(...requests)
  // Requests that arrive before the next turn of the loop join this batch.
  if (idle) setImmediate(flush)
})

port.postMessage({ type: 'ready' } satisfies WriterMessage)
