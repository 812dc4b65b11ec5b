// The SQLite database as both connections see it: its schema, created and
// migrated by version at start-up, its settings, the errors that mean "not
// now" rather than "wrong", and the identity of its files. Shared by the
// writer (which migrates and writes) and the store (which reads).
import { lstatSync, mkdirSync, realpathSync, statSync } from 'node:fs'
import { dirname } from 'node:path'
import type { DatabaseSync, SQLInputValue } from 'node:sqlite'
import { migrate } from './migrations.ts'
import { SQLITE_WEBHOOK_CREATED_AT, SQLITE_WEBHOOK_TRACEPARENT, SQLITE_WEBHOOK_DUE_INDEX, SQLITE_WEBHOOK_MIGRATION } from './sqlite-webhooks.ts'

/** Applied in order; a released migration is never edited, only added to. */
export const SQLITE_MIGRATIONS: readonly string[] = [
  `CREATE TABLE plants (
     id   INTEGER PRIMARY KEY,  -- a signed 64-bit integer: the whole int64 range
     name TEXT NOT NULL,
     tag  TEXT                  -- NULL: no tag; '' is a tag
   ) STRICT`,
  SQLITE_WEBHOOK_MIGRATION,
  SQLITE_WEBHOOK_DUE_INDEX,
  SQLITE_WEBHOOK_CREATED_AT,
  SQLITE_WEBHOOK_TRACEPARENT
]

/**
 * Brings the database to the latest version. BEGIN IMMEDIATE takes the write
 * lock first, so two processes starting at once apply each migration once.
 */
export async function migrateSqlite (db: DatabaseSync): Promise<void> {
  await migrate({
    run: (sql, params) => params ? db.prepare(sql).run(...(params as SQLInputValue[])) : db.exec(sql),
    value: (sql) => Object.values(db.prepare(sql).get() ?? {})[0]
  }, {
    begin: ['BEGIN IMMEDIATE'],
    createTable: 'CREATE TABLE IF NOT EXISTS plant_store_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)',
    record: "INSERT INTO plant_store_migrations (version, applied_at) VALUES (?, datetime('now'))"
  }, SQLITE_MIGRATIONS)
}

/**
 * The writer's page cache, in KiB: about half of SQLite's default (2,000).
 * GETs read through the reading connection, whose cache stays at the
 * default; the writer reads what its writes go through (the path to where
 * a plant goes, the end of the table while ids grow; the outbox's newest
 * rows), and a page it misses is most likely in the OS's cache, one pread
 * away. (A transaction that dirties more pages than the cache holds spills
 * them to the WAL before its commit, as past the default.)
 */
export const WRITER_CACHE_KIB = 1024

/**
 * Durable and concurrent: WAL, fsync on every commit, waiting for locks
 * rather than failing. The reader's connection is read-only: it never
 * creates the file nor changes its mode.
 */
export function configureSqlite (db: DatabaseSync, { writer }: { writer: boolean }): void {
  db.exec('PRAGMA busy_timeout = 5000')
  if (writer) {
    db.exec('PRAGMA journal_mode = WAL')
    db.exec('PRAGMA synchronous = FULL')
    // (Negative: a size in KiB rather than in pages.)
    db.exec(`PRAGMA cache_size = -${WRITER_CACHE_KIB}`)
  }
}

// SQLite result codes (the primary code, the low byte) that mean "not now"
// rather than "wrong": busy, locked, read-only, I/O error, full, cannot
// open. The database (or its permissions, disk, lock) may come back.
const UNAVAILABLE = new Map([[5, 'busy'], [6, 'locked'], [8, 'read-only'], [10, 'I/O error'], [13, 'full'], [14, 'cannot open']])

/** Why an SQLite error means the database is unavailable for now, if it does. */
export function unavailableReason (errcode: number | undefined): string | undefined {
  return errcode === undefined ? undefined : UNAVAILABLE.get(errcode & 0xff)
}

/**
 * Errors after which a connection should be opened anew: it may have been
 * opened read-only, or lost its file, and a new one sees the fixed state.
 */
export function needsNewConnection (errcode: number | undefined): boolean {
  const primary = (errcode ?? 0) & 0xff
  return primary === 8 || primary === 10 || primary === 14
}

/**
 * Makes the directory the database file goes in, before a writer opens it;
 * false, making nothing, where the path is a directory itself. (A path that
 * cannot be looked at is left to the writer's open to report.)
 */
export function makeDatabaseDirectory (path: string): boolean {
  let directory = false
  try {
    directory = statSync(path).isDirectory()
  } catch {}
  if (directory) return false
  mkdirSync(dirname(path), { recursive: true })
  return true
}

/** The code of the error a write gets when the database file is no longer the one that was opened. */
export const FILE_REPLACED = -1
export const FILE_REPLACED_MESSAGE = 'the database file was removed or replaced while open; restart the service to open the file now at its path'

// A stat of a file reads its timestamps, and since Linux 6.13 (multigrain
// timestamps) that gives the file's next write a new fine-grained ctime:
// its inode is dirty, and an fsync after that write commits ext4's journal
// as well as the data. Every commit writes and fsyncs the WAL, so the files
// are not looked at on every commit: their directory is. Removing,
// renaming or creating a file in it changes the directory's ctime, and the
// files are looked at again then, and at least this often otherwise. (A
// file mounted over the database or its WAL changes no directory: that is
// seen within this time.)
const LOOK_AGAIN_MS = 1000

// (No entry is the usual miss, answered without an exception; any other
// failure to look counts as not found.)
function identity (path: string): string | undefined {
  try {
    const stats = statSync(path, { throwIfNoEntry: false })
    return stats && `${stats.dev}:${stats.ino}`
  } catch {
    return undefined
  }
}

// A ctime this near the clock is no stamp yet: with coarse timestamps
// (before Linux 6.13, or other file systems) a change within the same
// clock tick would leave it as it is. (Both ways: a clock stepped back puts
// it ahead.)
const SETTLED_NS = 50_000_000n

// The directory's identity and when its entries last changed; undefined
// when that cannot tell the next change.
function entriesStamp (directory: string): string | undefined {
  try {
    const stats = statSync(directory, { bigint: true, throwIfNoEntry: false })
    if (stats === undefined) return undefined
    const { dev, ino, ctimeNs } = stats
    // A whole-millisecond ctime is a file system's coarse one (a second:
    // ext4 with 128-byte inodes, HFS+; FAT's 10 ms): changes a second apart
    // may share it.
    if (ctimeNs % 1_000_000n === 0n) return undefined
    const age = BigInt(Date.now()) * 1_000_000n - ctimeNs
    if (age < SETTLED_NS && age > -SETTLED_NS) return undefined
    return `${dev}:${ino}:${ctimeNs}`
  } catch {
    return undefined
  }
}

// A link's target is in another directory, whose changes the stamp does not show.
function isLink (path: string): boolean {
  try {
    return lstatSync(path, { throwIfNoEntry: false })?.isSymbolicLink() ?? true
  } catch {
    return true
  }
}

function resolved (path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

/**
 * The identity (device and inode) of the database file and its WAL as they
 * were opened. A file removed or replaced under an open connection keeps
 * taking writes that a restart would not find: this tells.
 */
export class FileIdentity {
  readonly #path: string
  readonly #directory: string
  readonly #database: string | undefined
  readonly #walPath: string
  #wal: string | undefined
  // The directory's stamp when the files were last found unchanged, and when.
  #stamp: string | undefined
  #lookedAt = 0

  constructor (path: string) {
    this.#path = path
    this.#directory = dirname(path)
    this.#database = identity(path)
    // SQLite's WAL is beside the file the path resolves to (it follows links).
    this.#walPath = `${resolved(path)}-wal`
    this.#wal = identity(this.#walPath)
  }

  /** Whether the files at the path are still the ones opened. */
  unchanged (): boolean {
    // (The stamp first: a change while the files are looked at shows next time.)
    const stamp = entriesStamp(this.#directory)
    const now = performance.now()
    if (stamp !== undefined && stamp === this.#stamp && now - this.#lookedAt < LOOK_AGAIN_MS) return true
    if (this.#database === undefined || identity(this.#path) !== this.#database) return false
    const wal = identity(this.#walPath)
    // The WAL appears with the first write, and lives while a connection is open.
    if (this.#wal === undefined) this.#wal = wal
    if (wal !== this.#wal) return false
    // (Until the WAL exists, and while either file is a link, they are looked at each time.)
    if (wal !== undefined && stamp !== undefined && !isLink(this.#path) && !isLink(this.#walPath)) {
      this.#stamp = stamp
      this.#lookedAt = now
    }
    return true
  }
}
