// The SQLite files' identity check runs before every commit; it must not
// read the WAL's attributes each time (lib/stores/sqlite-schema.ts: that
// costs a journal commit per fsync on Linux 6.13 and later).
import fs from 'node:fs'
import { join } from 'node:path'
import { syncBuiltinESMExports } from 'node:module'
import t from 'tap'
import type { Test } from 'tap'
import { FileIdentity } from '../lib/stores/sqlite-schema.ts'

// Counts the stats of each path, through the named import the module uses.
function countStats (t: Test): Map<string, number> {
  const stats = new Map<string, number>()
  const statSync = fs.statSync
  t.capture(fs, 'statSync', ((path: fs.PathLike, ...rest: unknown[]) => {
    stats.set(String(path), (stats.get(String(path)) ?? 0) + 1)
    return (statSync as (...args: unknown[]) => unknown)(path, ...rest)
  }) as typeof fs.statSync)
  syncBuiltinESMExports()
  t.teardown(syncBuiltinESMExports)
  return stats
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 100))

async function files (t: Test) {
  const dir = t.testdir({ 'plants.db': 'db', 'plants.db-wal': 'wal' })
  await settle()
  return { dir, path: join(dir, 'plants.db') }
}

t.test('while their directory is unchanged, the files are looked at once, then only the directory', async (t) => {
  const { path } = await files(t)
  const identity = new FileIdentity(path)
  const stats = countStats(t)
  for (let i = 0; i < 100; i++) t.equal(identity.unchanged(), true)
  t.equal(stats.get(`${path}-wal`), 1, 'the WAL once')
  t.equal(stats.get(path), 1, 'the database file once')
})

t.test('a change in the directory has the files looked at again; a file replaced is found', async (t) => {
  const { dir, path } = await files(t)
  const identity = new FileIdentity(path)
  t.equal(identity.unchanged(), true)
  const stats = countStats(t)
  fs.writeFileSync(join(dir, 'unrelated'), '')
  t.equal(identity.unchanged(), true, 'another file: the same files')
  t.equal(stats.get(`${path}-wal`), 1, 'looked at again')
  fs.writeFileSync(join(dir, 'other-wal'), '')
  fs.renameSync(join(dir, 'other-wal'), `${path}-wal`)
  t.equal(identity.unchanged(), false, 'the WAL replaced')
})

t.test('a second on, the files are looked at again though the directory did not change', async (t) => {
  const { path } = await files(t)
  const identity = new FileIdentity(path)
  t.equal(identity.unchanged(), true)
  const stats = countStats(t)
  t.equal(identity.unchanged(), true)
  t.equal(stats.get(`${path}-wal`), undefined, 'not at once')
  await new Promise((resolve) => setTimeout(resolve, 1100))
  t.equal(identity.unchanged(), true)
  t.equal(stats.get(`${path}-wal`), 1, 'after a second')
})

t.test('right after the directory changed, its ctime is no stamp: the files are looked at each time', async (t) => {
  const dir = t.testdir({ 'plants.db': 'db', 'plants.db-wal': 'wal' })
  const path = join(dir, 'plants.db')
  const identity = new FileIdentity(path)
  const stats = countStats(t)
  for (let i = 0; i < 3; i++) t.equal(identity.unchanged(), true)
  t.equal(stats.get(`${path}-wal`), 3)
})
