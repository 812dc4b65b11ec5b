// How often a header came: request.headers keeps one copy of most (or
// joins them), the raw headers keep each, for the rules on duplicates.
import type { IncomingMessage } from 'node:http'

// Whether `text` is `lower` in any case of its ASCII letters, compared in
// place: a lower-cased copy of each name would be a string per header.
function sameName (text: string, lower: string): boolean {
  if (text.length !== lower.length) return false
  for (let i = 0; i < lower.length; i++) {
    const char = text.charCodeAt(i)
    const expected = lower.charCodeAt(i)
    // (A lower-case letter's upper case is 0x20 below it.)
    if (char !== expected && !(expected >= 0x61 && expected <= 0x7a && char === expected - 0x20)) return false
  }
  return true
}

/** How many times the header `name` (given in lower case) came, in any case. */
export function headerCount (request: IncomingMessage, name: string): number {
  let found = 0
  const raw = request.rawHeaders
  for (let i = 0; i < raw.length; i += 2) if (sameName(raw[i]!, name)) found++
  return found
}
