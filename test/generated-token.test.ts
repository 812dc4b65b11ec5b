// The generated token kept beside the SQLite file: one token for every
// server that starts on the file, and never one taken from a file that is
// not this user's own.
import { execFile } from 'node:child_process'
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { TokenFileError, generatedToken } from '../lib/generated-token.ts'

const run = promisify(execFile)

t.test('made once, kept 0600, read back', async (t) => {
  const db = join(t.testdir(), 'plants.db')
  const first = generatedToken(db)
  t.match(first, { file: `${db}.token`, created: true, token: /^[\w-]{32}$/ })
  t.equal(statSync(`${db}.token`).mode & 0o777, 0o600)
  t.same(generatedToken(db), { token: first.token, file: `${db}.token`, created: false, exposed: false })
  t.same(readdirSync(t.testdirName), ['plants.db.token'], 'no temporary file left behind')
})

t.test('servers starting at once on one file all get the same token', async (t) => {
  const db = join(t.testdir(), 'plants.db')
  const script = `import { generatedToken } from ${JSON.stringify(new URL('../lib/generated-token.ts', import.meta.url).href)}; console.log(generatedToken(process.argv[1]).token)`
  const outputs = await Promise.all(Array.from({ length: 8 }, () => run(process.execPath, ['--input-type=module', '-e', script, db])))
  const tokens = new Set(outputs.map(({ stdout }) => stdout.trim()))
  t.equal(tokens.size, 1, 'one token for all eight')
  t.equal(generatedToken(db).token, [...tokens][0])
})

t.test('a file that is not a plain token file of this user is refused with a sentence', async (t) => {
  const dir = t.testdir()
  symlinkSync('/nowhere', join(dir, 'dangling.db.token'))
  symlinkSync(join(dir, 'real'), join(dir, 'linked.db.token'))
  writeFileSync(join(dir, 'real'), 'a'.repeat(32))
  writeFileSync(join(dir, 'empty.db.token'), '')
  mkdirSync(join(dir, 'folder.db.token'))
  const cases: Array<[string, RegExp]> = [
    ['dangling.db', /dangling\.db\.token is a symbolic link/],
    ['linked.db', /linked\.db\.token is a symbolic link/],
    ['empty.db', /empty\.db\.token does not hold a token: delete it/],
    ['folder.db', /folder\.db\.token is not a file/]
  ]
  if (process.getuid?.() === 0) {
    writeFileSync(join(dir, 'foreign.db.token'), 'b'.repeat(32))
    chownSync(join(dir, 'foreign.db.token'), 65534, 65534)
    cases.push(['foreign.db', /foreign\.db\.token belongs to another user/])
  }
  for (const [db, message] of cases) {
    let error: unknown
    try {
      generatedToken(join(dir, db))
    } catch (err) {
      error = err
    }
    t.ok(error instanceof TokenFileError, `${db}: refused`)
    t.match((error as Error | undefined)?.message, message, db)
  }
})

t.test('a kept token is 16 to 512 characters of a b64token, then any padding', async (t) => {
  const dir = t.testdir()
  const cases: Array<[string, boolean]> = [
    ['a'.repeat(15), false], ['a'.repeat(16), true], ['A-._~+/9'.repeat(64), true], ['a'.repeat(513), false],
    [`${'a'.repeat(16)}==`, true], [`${'a'.repeat(15)}==`, false], [`${'a'.repeat(8)}=${'a'.repeat(8)}`, false],
    [`${'a'.repeat(16)} b`, false], [`${'a'.repeat(16)}é`, false], ['='.repeat(32), false]
  ]
  for (const [i, [token, kept]] of cases.entries()) {
    writeFileSync(join(dir, `${i}.db.token`), token, { mode: 0o600 })
    let read: string | undefined
    try {
      read = generatedToken(join(dir, `${i}.db`)).token
    } catch (err) {
      t.ok(err instanceof TokenFileError, 'refused with a sentence')
    }
    t.equal(read, kept ? token : undefined, `${token.slice(0, 20)}… (${token.length}): ${kept ? 'kept' : 'refused'}`)
  }
})

t.test('readable by others: used, and said', async (t) => {
  const db = join(t.testdir(), 'plants.db')
  const { token } = generatedToken(db)
  chmodSync(`${db}.token`, 0o644)
  t.same(generatedToken(db), { token, file: `${db}.token`, created: false, exposed: true })
})

t.test('where it cannot be kept, this run still gets a token', { skip: process.getuid?.() === 0 ? false : 'needs root to make a directory unwritable for the test and back' }, async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-locked-'))
  // (Root writes anywhere: an immutable directory stands for one it may not write.)
  await run('chattr', ['+i', dir])
  t.teardown(async () => {
    await run('chattr', ['-i', dir])
    rmSync(dir, { recursive: true })
  })
  const result = generatedToken(join(dir, 'plants.db'))
  t.match(result, { created: true, token: /^[\w-]{32}$/, notKept: /cannot write .*plants\.db\.token/ })
  t.notOk('file' in result)
})

t.test('no file for a database path that is a directory, or for another store', async (t) => {
  const dir = t.testdir()
  t.same(Object.keys(generatedToken(dir)), ['token', 'created'])
  t.same(Object.keys(generatedToken(undefined)), ['token', 'created'])
  t.same(readdirSync(join(dir, '..')).filter((name) => name.endsWith('.token')), [])
})
