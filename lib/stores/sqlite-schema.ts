// The SQLite schema, created and migrated by version at start-up. Shared by
// the writer (which migrates) and the store (which reads).
import type { DatabaseSync } from 'node:sqlite'

/** Applied in order; a released migration is never edited, only added to. */
export const SQLITE_MIGRATIONS: readonly string[] = [
  `CREATE TABLE plants (
     id   INTEGER PRIMARY KEY,  -- a signed 64-bit integer: the whole int64 range
     name TEXT NOT NULL,
     tag  TEXT                  -- NULL: no tag; '' is a tag
   ) STRICT`
]

/**
 * Brings the database to the latest version. BEGIN IMMEDIATE takes the write
 * lock first, so two processes starting at once apply each migration once.
 */
export function migrateSqlite (db: DatabaseSync): void {
  db.exec('BEGIN IMMEDIATE')
  try {
    db.exec('CREATE TABLE IF NOT EXISTS plant_store_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)')
    const row = db.prepare('SELECT COALESCE(MAX(version), 0) AS version FROM plant_store_migrations').get() as { version: number }
    const record = db.prepare("INSERT INTO plant_store_migrations (version, applied_at) VALUES (?, datetime('now'))")
    for (let version = row.version + 1; version <= SQLITE_MIGRATIONS.length; version++) {
      db.exec(SQLITE_MIGRATIONS[version - 1]!)
      record.run(version)
    }
    db.exec('COMMIT')
  } catch (err) {
    db.exec('ROLLBACK')
    throw err
  }
}

/** Durable and concurrent: WAL, fsync on every commit, waiting for locks rather than failing. */
export function configureSqlite (db: DatabaseSync, pragmas: Record<string, string | number> = {}): void {
  db.exec('PRAGMA busy_timeout = 5000')
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = FULL')
  for (const [name, value] of Object.entries(pragmas)) db.exec(`PRAGMA ${name} = ${value}`)
}
