// The token of a server started without PLANT_STORE_TOKENS. With a SQLite
// file it is kept beside it (`<file>.token`, mode 0600), so that a restart
// keeps the token a browser's Swagger UI or a script already holds; with
// another store there is no place of ours to keep it, and each start makes
// a new one.
import { randomBytes } from 'node:crypto'
import { closeSync, constants, fstatSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

export interface GeneratedToken {
  token: string
  /** Where it is kept, when it is. */
  file?: string
  /** Made by this start (rather than read from `file`). */
  created: boolean
  /** Why it could not be kept, when it could not. */
  notKept?: string
  /** The file is readable by others than its owner. */
  exposed?: boolean
}

// As a bearer token may be written (RFC 6750 b64token), and long enough to
// guess at no better than chance: 16 to 512 characters before any `=`.
// (The length is counted apart: a bounded repeat in the regex is more than
// the linear-time check in test/linear-regexes.test.ts can prove.)
const TOKEN = /^[\w.~+/-]+=*$/
const isToken = (text: string) => {
  const padding = text.indexOf('=')
  const characters = padding === -1 ? text.length : padding
  return characters >= 16 && characters <= 512 && TOKEN.test(text)
}
// A token file that appears and vanishes under us this often is not ours to fight over.
const ATTEMPTS = 3

function newToken (): string {
  return randomBytes(24).toString('base64url')
}

/** A sentence saying what is wrong with a kept token file. */
export class TokenFileError extends Error {}

const code = (err: unknown) => (err as NodeJS.ErrnoException).code

// The kept token, or undefined when there is no file. Only a regular file
// of this user, reached without following a link, is trusted.
function readKept (file: string): { token: string, exposed: boolean } | undefined {
  let fd: number
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW)
  } catch (err) {
    if (code(err) === 'ENOENT') return undefined
    if (code(err) === 'ELOOP') throw new TokenFileError(`${file} is a symbolic link: a kept token must be a file of its own`)
    throw err
  }
  try {
    const stats = fstatSync(fd)
    if (!stats.isFile()) throw new TokenFileError(`${file} is not a file`)
    if (process.getuid !== undefined && stats.uid !== process.getuid()) throw new TokenFileError(`${file} belongs to another user: a kept token must be this user's`)
    const token = readFileSync(fd, 'utf8').trim()
    if (!isToken(token)) throw new TokenFileError(`${file} does not hold a token: delete it to have a new one made, or set PLANT_STORE_TOKENS`)
    return { token, exposed: (stats.mode & 0o077) !== 0 }
  } finally {
    closeSync(fd)
  }
}

// Writes the token whole before it appears under its name (a temporary
// file, synced, then linked: a link fails if the name exists), so that a
// server starting at the same moment reads either nothing or all of it.
function keep (file: string, token: string): boolean {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`
  mkdirSync(dirname(file), { recursive: true })
  writeFileSync(temporary, `${token}\n`, { mode: 0o600, flag: 'wx' })
  try {
    const fd = openSync(temporary, 'r')
    fsyncSync(fd)
    closeSync(fd)
    linkSync(temporary, file)
    return true
  } catch (err) {
    if (code(err) === 'EEXIST') return false
    throw err
  } finally {
    rmSync(temporary, { force: true })
  }
}

export function generatedToken (databaseFile: string | undefined): GeneratedToken {
  // No file of ours to keep it beside (a directory will not open as a database either).
  if (databaseFile === undefined || statSync(databaseFile, { throwIfNoEntry: false })?.isDirectory()) return { token: newToken(), created: true }
  const file = `${databaseFile}.token`
  for (let attempt = 1; ; attempt++) {
    let kept
    try {
      kept = readKept(file)
    } catch (err) {
      if (err instanceof TokenFileError) throw err
      // Unreadable (permissions, I/O): this run still starts, as it would with an unwritable one.
      return { token: newToken(), created: true, notKept: `cannot read ${file}: ${(err as Error).message}` }
    }
    if (kept !== undefined) return { token: kept.token, file, created: false, exposed: kept.exposed }
    const token = newToken()
    try {
      if (keep(file, token)) return { token, file, created: true }
    } catch (err) {
      return { token, created: true, notKept: `cannot write ${file}: ${(err as Error).message}` }
    }
    // Another server kept one first: read it.
    if (attempt === ATTEMPTS) throw new TokenFileError(`${file} exists but cannot be read as a file (a dangling link?): delete it, or set PLANT_STORE_TOKENS`)
  }
}
