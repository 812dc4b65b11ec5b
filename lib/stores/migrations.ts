// The one migration runner of every SQL store: each store names its
// migrations, how it takes the lock that makes instances starting together
// migrate once, and how it runs a statement; the runner does the rest.

export interface MigrationSession {
  /** Runs one statement, with parameters when given. */
  run (sql: string, params?: unknown[]): unknown
  /** The first column of the first row a query returns. */
  value (sql: string): unknown
}

export interface MigrationDialect {
  /** Statements that begin the transaction and take the migration lock. */
  begin: readonly string[]
  /** Creates the table that records applied versions, if missing. */
  createTable: string
  /** Records one applied version (its one parameter). */
  record: string
}

/**
 * Applies, in one transaction, the migrations past the recorded version.
 * A released migration is never edited, only added to: its index (from 1)
 * is its version.
 */
export async function migrate (session: MigrationSession, dialect: MigrationDialect, migrations: readonly string[]): Promise<void> {
  for (const sql of dialect.begin) await session.run(sql)
  try {
    await session.run(dialect.createTable)
    const current = Number(await session.value('SELECT COALESCE(MAX(version), 0) FROM plant_store_migrations'))
    for (let version = current + 1; version <= migrations.length; version++) {
      await session.run(migrations[version - 1]!)
      await session.run(dialect.record, [version])
    }
    await session.run('COMMIT')
  } catch (err) {
    try {
      await session.run('ROLLBACK')
    } catch {
      // The transaction already ended with the error.
    }
    throw err
  }
}
