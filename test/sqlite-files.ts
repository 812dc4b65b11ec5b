// What tests learn about an SQLite store from its files, as an operator
// could: the commits in its write-ahead log, and a file system that fills.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, renameSync, rmdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'

/**
 * Transactions committed to the WAL since it last restarted: frames of the
 * current generation (their salts match the header's) that end a commit.
 */
export function walCommits (databasePath: string): number {
  let wal: Buffer
  try {
    wal = readFileSync(`${databasePath}-wal`)
  } catch {
    return 0
  }
  if (wal.length < 32) return 0
  const pageSize = wal.readUInt32BE(8)
  const salts = wal.subarray(16, 24)
  let commits = 0
  for (let frame = 32; frame + 24 + pageSize <= wal.length; frame += 24 + pageSize) {
    if (!wal.subarray(frame + 8, frame + 16).equals(salts)) break
    if (wal.readUInt32BE(frame + 4) !== 0) commits++
  }
  return commits
}

// Whether this process may mount a file system (root with CAP_SYS_ADMIN, as in CI): tried once.
function canMount (): boolean {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-mount-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'ignore' })
    execFileSync('umount', [dir])
    return true
  } catch {
    return false
  } finally {
    rmdirSync(dir)
  }
}

/**
 * Why the disk-full tests cannot run here, or false when they can. CI sets
 * PLANT_STORE_REQUIRE_MOUNT=1, which turns the skip into a failure.
 */
export const NO_MOUNT: string | false = process.env.PLANT_STORE_REQUIRE_MOUNT === '1' || canMount()
  ? false
  : 'mounting a small file system (tmpfs) needs root with CAP_SYS_ADMIN; set PLANT_STORE_REQUIRE_MOUNT=1 to fail instead'

/** A directory on a tmpfs of `bytes`, gone after the test: a disk that fills. */
export function smallDisk (t: Test, bytes: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-disk-'))
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${bytes}`, 'tmpfs', dir])
  // Lazily: a store the test still holds open does not keep it mounted.
  t.teardown(() => {
    execFileSync('umount', ['-l', dir])
    rmdirSync(dir)
  })
  return dir
}

/** Puts a new empty file in the place of `path`, by a rename in its directory (as a restore of another file would). */
export function replaceWithEmpty (path: string): void {
  writeFileSync(`${path}.new`, '')
  renameSync(`${path}.new`, path)
}
