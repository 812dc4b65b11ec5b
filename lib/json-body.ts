// Request bodies: read within their limit, decoded as strict UTF-8, parsed
// as JSON no deeper than MAX_DEPTH, with int64 members kept digit for digit.
// The cost is linear in the body, and the same whatever the body holds: the
// exact int64 reading is paid only for the members that are int64s.
import type { Readable } from 'node:stream'
import { TextDecoder } from 'node:util'
import contentTypeModule from 'fast-content-type-parse'
import secureJson from 'secure-json-parse'
import type { FastifyRequest } from 'fastify'
import {
  BodyIncompleteError, BodyNestedTooDeepError, BodyRequiredError, BusyError, InvalidJsonError, InvalidUtf8Error,
  PayloadTooLargeError, UnsupportedCharsetError, UnsupportedEncodingError, UnsupportedMediaTypeError, clip
} from './errors.ts'
import type { MemoryBudget } from './socket-bounds.ts'
import { NOT_AN_INT64, int64FromJsonNumber } from './int64.ts'
import { duplicateHeader } from './raw-headers.ts'
import { RouteFacts } from './route-facts.ts'

// fast-content-type-parse is CommonJS; its named export arrives on the default.
const { parse: parseContentType } = contentTypeModule as unknown as typeof import('fast-content-type-parse')

/** Arrays and objects may nest this deep in a body; deeper is a 400. */
export const MAX_DEPTH = 16

// `fatal`: invalid UTF-8 is refused rather than read as U+FFFD, which would
// store something other than what the client sent. A leading BOM is dropped.
const utf8 = new TextDecoder('utf-8', { fatal: true })

const COLON = 0x3a
const EMPTY: ReadonlySet<string> = new Set()
const PARSE_OPTIONS = { protoAction: 'error', constructorAction: 'error' } as const

const BOM = 0xfeff
const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_BRACE = 0x7b
const OPEN_BRACKET = 0x5b
const CLOSE_BRACE = 0x7d
const CLOSE_BRACKET = 0x5d

const MINUS = 0x2d
const isJsonSpace = (char: number) => char === 0x20 || char === 0x09 || char === 0x0a || char === 0x0d
const isDigit = (char: number) => char >= 0x30 && char <= 0x39
// Digits, `.`, `e`, `E`, `+` and `-`.
const isNumberChar = (char: number) => isDigit(char) || char === 0x2e || char === 0x65 || char === 0x45 || char === 0x2b || char === MINUS

// A member's value when it is a number, from `from` (after its colon): its
// token, `-?[0-9][0-9.eE+-]*` after JSON's whitespace. (JSON.parse
// validates the token itself.) A loop rather than a sticky regex, which
// cost more than the rest of a small body's scan.
function numberToken (text: string, from: number): string | undefined {
  const length = text.length
  let i = from
  while (i < length && isJsonSpace(text.charCodeAt(i))) i++
  const start = i
  if (text.charCodeAt(i) === MINUS) i++
  if (!isDigit(text.charCodeAt(i))) return undefined
  while (++i < length && isNumberChar(text.charCodeAt(i)));
  return text.slice(start, i)
}

// The index just after the closing quote of the string that opens at `open`,
// or -1 when it never closes (JSON.parse then refuses the body).
function stringEnd (text: string, open: number): number {
  let quote = text.indexOf('"', open + 1)
  while (quote !== -1) {
    let slashes = 0
    while (text.charCodeAt(quote - 1 - slashes) === BACKSLASH) slashes++
    if (slashes % 2 === 0) return quote + 1
    quote = text.indexOf('"', quote + 1)
  }
  return -1
}

// A body's int64 member names as the scan matches them: in place against
// the text when a name is written without escapes (no copy, no hashing);
// `longest` bounds a name written with escapes (six characters each).
interface MemberNames {
  names: readonly string[]
  set: ReadonlySet<string>
  longest: number
  // Each name in its quotes, when every name is free of `"`, `\\`, `,`
  // and `:` (flatScan); undefined otherwise.
  quoted: readonly string[] | undefined
}
const memberNames = new WeakMap<ReadonlySet<string>, MemberNames>()

function namesOf (set: ReadonlySet<string>): MemberNames {
  let found = memberNames.get(set)
  if (found === undefined) {
    const names = [...set]
    const quoted = names.every((name) => !/["\\,:]/.test(name)) ? names.map((name) => `"${name}"`) : undefined
    found = { names, set, longest: Math.max(0, ...names.map((name) => name.length * 6)), quoted }
    memberNames.set(set, found)
  }
  return found
}

// The int64 member that the member name text[from, to) names, if any; null
// when its escapes are malformed (JSON.parse then refuses the whole body).
function memberNamed (text: string, from: number, to: number, members: MemberNames): string | undefined | null {
  let escaped = false
  for (let k = from; k < to && !escaped; k++) escaped = text.charCodeAt(k) === BACKSLASH
  if (!escaped) {
    for (const name of members.names) if (name.length === to - from && text.startsWith(name, from)) return name
    return undefined
  }
  let name: string
  try {
    name = JSON.parse(`"${text.slice(from, to)}"`) as string
  } catch {
    return null
  }
  return members.set.has(name) ? name : undefined
}

/**
 * Whether the text is of the usual kind: one object at most, no array, no
 * backslash (so no escapes), told by a few searches for one character,
 * which V8 makes with memchr, instead of a loop over every character. Such
 * a text is never too deep, and each name in it is written as it reads.
 */
function isFlat (text: string): boolean {
  if (text.includes('\\') || text.includes('[')) return false
  const open = text.indexOf('{')
  return open === -1 || !text.includes('{', open + 1)
}

/**
 * What scan finds, in a flat text, or false when a name is not plain. Once
 * JSON.parse has accepted the text (the tokens are used only then), each
 * `"name"` in it is a whole string: between two strings JSON puts a `,` or
 * a `:`, which no plain name holds. The string is a member name when a `:`
 * follows it.
 */
function flatScan (text: string, members: MemberNames): Array<string | undefined> | undefined | false {
  const quoted = members.quoted
  if (quoted === undefined) return false
  let found: Array<string | undefined> | undefined
  for (let n = 0; n < quoted.length; n++) {
    const name = quoted[n]!
    // Where the value of the last member of the name starts, as JSON.parse
    // keeps the last of duplicates. (Forward: lastIndexOf is no fast builtin.)
    let value = -1
    for (let at = text.indexOf(name); at !== -1; at = text.indexOf(name, at + name.length)) {
      let next = at + name.length
      while (isJsonSpace(text.charCodeAt(next))) next++
      if (text.charCodeAt(next) === COLON) value = next + 1
    }
    if (value !== -1) {
      found ??= []
      found.push(members.names[n], numberToken(text, value))
    }
  }
  return found
}

/**
 * One pass over the text that refuses nesting past MAX_DEPTH and finds the
 * number token of each top-level member named in `int64Members` (the last
 * one, as JSON.parse keeps the last of duplicate names). A plain loop over
 * the characters: strings are skipped with indexOf.
 */
function scan (text: string, members: MemberNames): Array<string | undefined> | undefined {
  // Pairs of name and token, one per name. (An array: iterating a Map's
  // entries cost more than the rest of a small body's parse.)
  let found: Array<string | undefined> | undefined
  let depth = 0
  const length = text.length
  for (let i = 0; i < length; i++) {
    const char = text.charCodeAt(i)
    if (char === QUOTE) {
      const end = stringEnd(text, i)
      if (end === -1) return found
      // (Longer names are none of the members: they are skipped without being read.)
      if (depth === 1 && end - i - 2 <= members.longest) {
        let next = end
        while (next < length && text.charCodeAt(next) <= 0x20) next++
        if (text.charCodeAt(next) === COLON) { // a member name, not a string value
          const name = memberNamed(text, i + 1, end - 1, members)
          if (name === null) return found
          if (name !== undefined) {
            const token = numberToken(text, next + 1)
            found ??= []
            let at = 0
            while (at < found.length && found[at] !== name) at += 2
            found[at] = name
            found[at + 1] = token
          }
        }
      }
      i = end - 1
    } else if (char === OPEN_BRACE || char === OPEN_BRACKET) {
      if (++depth > MAX_DEPTH) throw new BodyNestedTooDeepError(MAX_DEPTH)
    } else if (char === CLOSE_BRACE || char === CLOSE_BRACKET) {
      depth--
    }
  }
  return found
}

/**
 * Parses a JSON body. Top-level members named in `int64Members` that hold a
 * number become bigints (or NOT_AN_INT64 when not a whole int64), read from
 * their digits; `__proto__` and `constructor.prototype` keys are refused, as
 * Fastify's own parser does.
 */
export function parseJsonBody (text: string, int64Members: ReadonlySet<string> = EMPTY): unknown {
  const members = namesOf(int64Members)
  const flat = isFlat(text)
  let tokens = flat ? flatScan(text, members) : false
  if (tokens === false) tokens = scan(text, members)
  let parsed: unknown
  try {
    // secure-json-parse refuses `__proto__` members, and `constructor`
    // ones holding a `prototype`, however escaped; it finds them by two
    // regexes over the text, which cost as much as JSON.parse. A flat text
    // holds one object at most (no `constructor` holds another), whose
    // names read as written: it is asked only when that object has a
    // `__proto__` of its own. (It also drops a leading BOM, which
    // JSON.parse refuses.)
    parsed = flat && text.charCodeAt(0) !== BOM ? JSON.parse(text) : secureJson.parse(text, undefined, PARSE_OPTIONS)
    if (flat && typeof parsed === 'object' && parsed !== null && Object.hasOwn(parsed, '__proto__')) secureJson.parse(text, undefined, PARSE_OPTIONS)
  } catch (err) {
    throw new InvalidJsonError(text.trim() === '' ? 'the body is empty' : (err as Error).message)
  }
  if (tokens !== undefined && typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
    const object = parsed as Record<string, unknown>
    for (let i = 0; i < tokens.length; i += 2) {
      const name = tokens[i]!
      const token = tokens[i + 1]
      if (token !== undefined && typeof object[name] === 'number') object[name] = int64FromJsonNumber(token) ?? NOT_AN_INT64
    }
  }
  return parsed
}

// The content types nearly every client sends, accepted without parsing.
const PLAIN_JSON: ReadonlySet<string> = new Set(['application/json', 'application/json; charset=utf-8', 'application/json;charset=utf-8'])

// A parameter value compared without case: `charset=UTF-8`, `charset="utf8"`.
function isUtf8 (charset: string | undefined): boolean {
  return charset === undefined || /^utf-?8$/i.test(charset)
}

export interface BodyParserOptions {
  bodyLimit: number
  /** What bodies being read may hold in all, with the answers being written. */
  memory: MemoryBudget
}

type Done = (err: Error | null, body?: unknown) => void

type ReadEnd = (err: 'too-large' | 'incomplete' | undefined, body?: Buffer) => void

/**
 * Reads a request body of at most `limit` bytes, and of `length` bytes
 * when the request declared one. Fastify's own reader, with one callback
 * and none of raw-body's generality: reading a small body that way cost
 * more than parsing it. Ends once, on the last byte, past the limit, or
 * when the stream fails or closes first (the client went away).
 */
function readBody (stream: NodeJS.ReadableStream, length: number | undefined, limit: number, end: ReadEnd): void {
  // Gone before anything read it (an embedding app's async hook ran
  // meanwhile, and the client left): its close has been and gone.
  if ((stream as Readable).destroyed || !stream.readable) return end('incomplete')
  const chunks: Buffer[] = []
  let received = 0
  const finish = (err: 'too-large' | 'incomplete' | undefined) => {
    stream.removeListener('data', onData)
    stream.removeListener('end', onEnd)
    stream.removeListener('error', onFail)
    stream.removeListener('close', onFail)
    if (err !== undefined) return end(err)
    end(undefined, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received))
  }
  const onData = (chunk: Buffer) => {
    received += chunk.length
    if (received > limit) {
      // (As raw-body did: the rest is left unread; the answer closes the connection.)
      stream.pause()
      return finish('too-large')
    }
    chunks.push(chunk)
  }
  const onEnd = () => finish(length === undefined || received === length ? undefined : 'incomplete')
  const onFail = () => finish('incomplete')
  stream.on('data', onData)
  stream.on('end', onEnd)
  stream.on('error', onFail)
  stream.on('close', onFail)
  stream.resume()
}

/**
 * Bodies of the operations that take one: UTF-8 JSON only, read within the
 * limit. An operation that takes no body gets none: its body, if any, is
 * left unread (the answer then closes the connection).
 */
export function createBodyParser ({ bodyLimit, memory }: BodyParserOptions) {
  return {
    /**
     * For preParsing: why the body will not be read, if it will not, known
     * before the client sends a byte of it (and before a 100 Continue).
     */
    refusal (request: FastifyRequest): Error | undefined {
      const header = request.headers['content-type']
      const length = request.headers['content-length']
      const hasBody = request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
      if (!RouteFacts.takesBody(request)) return undefined
      // (Fastify reads no body, nor validates one, without a content type
      // or a byte of it: a required one must not arrive undefined.)
      if (header === undefined && !hasBody) return RouteFacts.of(request).bodyRequired === true ? new BodyRequiredError() : undefined
      const duplicate = duplicateHeader(request.raw, 'Content-Type')
      if (duplicate !== undefined) return duplicate
      if (header === undefined || !PLAIN_JSON.has(header)) {
        let mediaType
        try {
          mediaType = parseContentType(header ?? '')
        } catch {
          return new UnsupportedMediaTypeError(clip(header ?? ''))
        }
        if (mediaType.type !== 'application/json') return new UnsupportedMediaTypeError(clip(header ?? ''))
        if (!isUtf8(mediaType.parameters.charset)) return new UnsupportedCharsetError(clip(mediaType.parameters.charset ?? ''))
      }
      const encoding = request.headers['content-encoding']
      if (encoding !== undefined && !/^\s*identity\s*$/i.test(encoding)) return new UnsupportedEncodingError(clip(encoding))
      if (Number(length) > bodyLimit) return new PayloadTooLargeError(bodyLimit)
      return undefined
    },

    /** The content-type parser: reads and parses what `refusal` let through. */
    parse (request: FastifyRequest, payload: NodeJS.ReadableStream, done: Done): void {
      if (!RouteFacts.takesBody(request)) return done(null, undefined)
      // What the body may take is held from the start, so that bodies read
      // slowly by many connections cannot add up past the budget.
      // (A declared length past the limit was refused before: `refusal`.)
      const header = request.headers['content-length']
      const length = header === undefined ? undefined : Number(header)
      const held = length === undefined ? bodyLimit : Math.min(length, bodyLimit)
      if (!memory.reserve(held)) return done(new BusyError())
      readBody(payload, length, bodyLimit, (err, buffer) => {
        memory.release(held)
        if (err !== undefined) return done(err === 'too-large' ? new PayloadTooLargeError(bodyLimit) : new BodyIncompleteError())
        let text: string
        try {
          text = utf8.decode(buffer)
        } catch {
          return done(new InvalidUtf8Error())
        }
        try {
          done(null, parseJsonBody(text, RouteFacts.int64Members(request)))
        } catch (parseError) {
          done(parseError as Error)
        }
      })
    }
  }
}
