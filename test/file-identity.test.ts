// The SQLite files' identity check runs before every commit; it must not
// read the WAL's attributes each time (lib/stores/sqlite-schema.ts: that
// costs a journal commit per fsync on Linux 6.13 and later).
import fs from 'node:fs'
import { join } from 'node:path'
import { syncBuiltinESMExports } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import t from 'tap'
import type { Test } from 'tap'
import { FileIdentity } from '../lib/stores/sqlite-schema.ts'
import { replaceWithEmpty } from './sqlite-files.ts'

// Counts the stats of each path, through the named import the module uses;
// `ctime` changes the ctime a directory's stat shows.
function countStats (t: Test, ctime?: (ns: bigint) => bigint): Map<string, number> {
  const stats = new Map<string, number>()
  const statSync = fs.statSync
  t.capture(fs, 'statSync', ((path: fs.PathLike, ...rest: unknown[]) => {
    stats.set(String(path), (stats.get(String(path)) ?? 0) + 1)
    const found = (statSync as (...args: unknown[]) => unknown)(path, ...rest) as fs.BigIntStats | undefined
    if (ctime === undefined || !found?.isDirectory()) return found
    return { dev: found.dev, ino: found.ino, ctimeNs: ctime(found.ctimeNs) }
  }) as typeof fs.statSync)
  syncBuiltinESMExports()
  t.teardown(syncBuiltinESMExports)
  return stats
}

// Past the moment the directory's last change is too recent to go by.
const settle = () => sleep(100)

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
  replaceWithEmpty(`${path}-wal`)
  t.equal(identity.unchanged(), false, 'the WAL replaced')
})

t.test('a second on, the files are looked at again though the directory did not change', async (t) => {
  const { path } = await files(t)
  const identity = new FileIdentity(path)
  t.equal(identity.unchanged(), true)
  const stats = countStats(t)
  t.equal(identity.unchanged(), true)
  t.equal(stats.get(`${path}-wal`), undefined, 'not at once')
  await sleep(1100)
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

t.test('a directory ctime of a whole millisecond (a file system\'s coarse one) is no stamp: the files are looked at each time', async (t) => {
  const { path } = await files(t)
  const identity = new FileIdentity(path)
  const stats = countStats(t, (ns) => ns - ns % 1_000_000n)
  for (let i = 0; i < 3; i++) t.equal(identity.unchanged(), true)
  t.equal(stats.get(`${path}-wal`), 3)
})

t.test('a directory ctime ahead of the clock (stepped back) is still a stamp', async (t) => {
  const { path } = await files(t)
  const identity = new FileIdentity(path)
  const stats = countStats(t, (ns) => ns + 3_600_000_000_000n + 1n)
  for (let i = 0; i < 3; i++) t.equal(identity.unchanged(), true)
  t.equal(stats.get(`${path}-wal`), 1)
})

t.test('a database path that is a link: the WAL is the one beside its target, and both are looked at each time', async (t) => {
  const dir = t.testdir({ disk: { 'plants.db': 'db', 'plants.db-wal': 'wal' }, here: {} })
  await settle()
  const path = join(dir, 'here', 'plants.db')
  fs.symlinkSync(join(dir, 'disk', 'plants.db'), path)
  await settle()
  const identity = new FileIdentity(path)
  const stats = countStats(t)
  for (let i = 0; i < 3; i++) t.equal(identity.unchanged(), true)
  const wal = join(dir, 'disk', 'plants.db-wal')
  t.equal(stats.get(wal), 3, 'the target\'s WAL, each time')
  replaceWithEmpty(wal)
  t.equal(identity.unchanged(), false, 'replaced beside the target')
})
