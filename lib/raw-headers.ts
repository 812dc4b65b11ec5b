// How often a header came: request.headers keeps one copy of most (or
// joins them), the raw headers keep each, for the rules on duplicates.
import type { IncomingMessage } from 'node:http'
import { DuplicateHeaderError } from './errors.ts'

// An ASCII letter's code in lower case (upper case is 0x20 below it).
const lower = (code: number) => code >= 0x41 && code <= 0x5a ? code + 0x20 : code

// Whether two header names are the same in any case of their ASCII
// letters, compared in place: a lower-cased copy of each name would be a
// string per header.
function sameName (text: string, name: string): boolean {
  if (text.length !== name.length) return false
  for (let i = 0; i < name.length; i++) if (lower(text.charCodeAt(i)) !== lower(name.charCodeAt(i))) return false
  return true
}

/** How many times the header `name` came, in any case. */
export function headerCount (request: IncomingMessage, name: string): number {
  let found = 0
  const raw = request.rawHeaders
  for (let i = 0; i < raw.length; i += 2) if (sameName(raw[i]!, name)) found++
  return found
}

/**
 * The rule for a header that must come once (Host, Authorization,
 * Content-Type: Node keeps the first, a proxy may read the last, so a
 * request that sends two is judged by neither): its 400 when it came more
 * than once. `name` as the answer shows it.
 */
export function duplicateHeader (request: IncomingMessage, name: string): Error | undefined {
  return headerCount(request, name) > 1 ? new DuplicateHeaderError(name) : undefined
}
