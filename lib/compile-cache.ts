// Where the command keeps Node's compile cache (later starts skip parsing
// the modules). V8 trusts the code it reads back, so the directory must
// be writable by this user alone: never a shared temporary directory, which
// anyone could have made first.
import { lstatSync, mkdirSync } from 'node:fs'
import { homedir } from 'node:os'
import { isAbsolute, join } from 'node:path'

function private_ (path: string, uid: number): boolean {
  const stats = lstatSync(path)
  return stats.isDirectory() && stats.uid === uid && (stats.mode & 0o022) === 0
}

/**
 * The cache directory under the user's cache home (`$XDG_CACHE_HOME` or
 * `~/.cache`), made private if new; undefined when Node already has one
 * (NODE_COMPILE_CACHE), when turned off (NODE_DISABLE_COMPILE_CACHE), or
 * when the directory is not this user's alone.
 */
export function compileCacheDirectory (env: NodeJS.ProcessEnv = process.env, home = homedir()): string | undefined {
  if (env.NODE_COMPILE_CACHE || env.NODE_DISABLE_COMPILE_CACHE) return undefined
  const uid = process.getuid?.()
  if (uid === undefined) return undefined
  const base = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(home, '.cache')
  const ours = join(base, 'plant-store')
  const dir = join(ours, 'compile-cache')
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    return private_(ours, uid) && private_(dir, uid) ? dir : undefined
  } catch {
    return undefined
  }
}
