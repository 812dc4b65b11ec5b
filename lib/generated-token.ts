// The token of a server started without PLANT_STORE_TOKENS. With a SQLite
// file it is kept beside it (`<file>.token`, mode 0600), so that a restart
// keeps the token a browser's Swagger UI or a script already holds; with
// another store there is no place of ours to keep it, and each start makes
// a new one.
import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
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

// As a bearer token may be written (RFC 6750 b64token), and long enough to guess at no better than chance.
const TOKEN = /^[\w.~+/-]{16,512}=*$/

function newToken (): string {
  return randomBytes(24).toString('base64url')
}

/** A sentence saying what is wrong with a kept token file. */
export class TokenFileError extends Error {}

export function generatedToken (databaseFile: string | undefined): GeneratedToken {
  if (databaseFile === undefined) return { token: newToken(), created: true }
  const file = `${databaseFile}.token`
  for (;;) {
    try {
      const token = readFileSync(file, 'utf8').trim()
      if (!TOKEN.test(token)) throw new TokenFileError(`${file} does not hold a token: delete it to have a new one made, or set PLANT_STORE_TOKENS`)
      return { token, file, created: false, exposed: (statSync(file).mode & 0o077) !== 0 }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') {
        if (err instanceof TokenFileError) throw err
        throw new TokenFileError(`cannot read ${file}: ${(err as Error).message}`)
      }
    }
    const token = newToken()
    try {
      mkdirSync(dirname(file), { recursive: true })
      // Exclusively: a server starting at the same moment keeps its own
      // and this one reads it (the loop).
      writeFileSync(file, `${token}\n`, { mode: 0o600, flag: 'wx' })
      return { token, file, created: true }
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue
      return { token, created: true, notKept: `cannot write ${file}: ${(err as Error).message}` }
    }
  }
}
