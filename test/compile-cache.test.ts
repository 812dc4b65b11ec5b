// The command's compile cache: a directory of this user's alone, or none.
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { compileCacheDirectory } from '../lib/compile-cache.ts'

function home (t: { teardown: (fn: () => void) => void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-home-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

t.test('made private under ~/.cache, or under XDG_CACHE_HOME', async (t) => {
  const dir = home(t)
  const cache = compileCacheDirectory({}, dir)
  t.equal(cache, join(dir, '.cache', 'plant-store', 'compile-cache'))
  t.equal(statSync(cache!).mode & 0o777, 0o700, 'only its owner may use it')
  t.equal(compileCacheDirectory({}, dir), cache, 'found again')
  const xdg = home(t)
  t.equal(compileCacheDirectory({ XDG_CACHE_HOME: xdg }, dir), join(xdg, 'plant-store', 'compile-cache'))
  t.equal(compileCacheDirectory({ XDG_CACHE_HOME: 'relative' }, dir), cache, 'a relative XDG_CACHE_HOME is ignored')
})

t.test('none when others may write there, when it is a link, or when Node has its own orders', async (t) => {
  const shared = home(t)
  mkdirSync(join(shared, '.cache', 'plant-store', 'compile-cache'), { recursive: true })
  chmodSync(join(shared, '.cache', 'plant-store', 'compile-cache'), 0o777)
  t.equal(compileCacheDirectory({}, shared), undefined, 'writable by others')

  const linked = home(t)
  const elsewhere = home(t)
  mkdirSync(join(linked, '.cache', 'plant-store'), { recursive: true, mode: 0o700 })
  symlinkSync(elsewhere, join(linked, '.cache', 'plant-store', 'compile-cache'))
  t.equal(compileCacheDirectory({}, linked), undefined, 'a symbolic link')

  const parent = home(t)
  mkdirSync(join(parent, '.cache', 'plant-store'), { recursive: true })
  chmodSync(join(parent, '.cache', 'plant-store'), 0o777)
  t.equal(compileCacheDirectory({}, parent), undefined, 'a parent writable by others')

  const file = home(t)
  t.equal(compileCacheDirectory({}, join(file, 'missing', '\0')), undefined, 'a path that cannot be made')

  const fresh = home(t)
  t.equal(compileCacheDirectory({ NODE_COMPILE_CACHE: '/somewhere' }, fresh), undefined, 'NODE_COMPILE_CACHE: Node uses that one')
  t.equal(compileCacheDirectory({ NODE_DISABLE_COMPILE_CACHE: '1' }, fresh), undefined, 'turned off')
})
