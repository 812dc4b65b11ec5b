// Request loggers made on first use. Fastify gives every request a child
// logger, and pino's child() serializes its bindings each time: a cost per
// request that buys nothing when, as usual, the request writes no line at
// a level the logger keeps. The child is made only when a line is written
// at a kept level, or when someone asks for more than writing lines.
//
// The deferral is the logger's own child(), not a child logger factory:
// Fastify checks whatever a factory other than its default makes, every
// request (seven methods looked up by name, twice), which cost as much as
// the deferral saved. A logger's owner opts in (the server does, for its
// own); the plugin leaves an embedding app's logger as it is.
import { inspect } from 'node:util'
import type { FastifyBaseLogger } from 'fastify'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type Bindings = Parameters<FastifyBaseLogger['child']>[0]
type ChildLoggerOptions = Parameters<FastifyBaseLogger['child']>[1]
type LogArgs = Parameters<FastifyBaseLogger['info']>

// What a pino logger has beyond Fastify's base logger type, as far as a
// request's logger is asked for it.
interface PinoLogger extends FastifyBaseLogger {
  isLevelEnabled: (level: string) => boolean
  bindings: () => Bindings
  setBindings: (bindings: Bindings) => void
  flush: (callback?: (err?: Error) => void) => void
  levels: { values: Record<string, number> }
  levelVal: number
  msgPrefix?: string
}

type MakeChild = (this: PinoLogger, bindings: Bindings, options?: ChildLoggerOptions) => PinoLogger

// The fields are made in the constructor alone: class fields (private ones
// or any not `declare`d) are made by the class's field initializer first,
// which costs each request more instructions (callgrind, main thread);
// symbol keys cost as much. A logger serialized (JSON, pino's safe-stable-stringify) or
// shown (util.inspect) shows none of them (its parent, the whole root
// logger, among them).
class LazyChildLogger {
  private declare readonly parent: PinoLogger
  private declare readonly makeChild: MakeChild
  private declare readonly childBindings: Bindings
  private declare madeChild: PinoLogger | undefined

  constructor (parent: PinoLogger, makeChild: MakeChild, bindings: Bindings) {
    this.madeChild = undefined
    this.parent = parent
    this.makeChild = makeChild
    this.childBindings = bindings
  }

  private childLogger (): PinoLogger {
    this.madeChild ??= this.makeChild.call(this.parent, this.childBindings)
    return this.madeChild
  }

  private writeAt (level: Level, args: LogArgs): void {
    // The child has its parent's level (one asked for with options was made at once).
    if (this.madeChild === undefined && !this.parent.isLevelEnabled(level)) return
    this.childLogger()[level](...args)
  }

  toJSON (): object {
    return {}
  }

  [inspect.custom] (): string {
    return 'LazyChildLogger {}'
  }

  fatal (...args: LogArgs): void { this.writeAt('fatal', args) }
  error (...args: LogArgs): void { this.writeAt('error', args) }
  warn (...args: LogArgs): void { this.writeAt('warn', args) }
  info (...args: LogArgs): void { this.writeAt('info', args) }
  debug (...args: LogArgs): void { this.writeAt('debug', args) }
  trace (...args: LogArgs): void { this.writeAt('trace', args) }
  silent (): void {}

  get level (): FastifyBaseLogger['level'] { return this.childLogger().level }
  set level (level: FastifyBaseLogger['level']) { this.childLogger().level = level }

  isLevelEnabled (level: string): boolean {
    return (this.madeChild ?? this.parent).isLevelEnabled(level)
  }

  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.childLogger().child(bindings, options)
  }

  // The rest of pino's logger, for what a host's hooks may call.
  bindings (): Bindings { return this.childLogger().bindings() }
  setBindings (bindings: Bindings): void { this.childLogger().setBindings(bindings) }
  flush (callback?: (err?: Error) => void): void { this.childLogger().flush(callback) }
  get levels (): PinoLogger['levels'] { return this.childLogger().levels }
  get levelVal (): number { return this.childLogger().levelVal }
  get msgPrefix (): string | undefined { return this.childLogger().msgPrefix }
}

const STANDARD_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']

// A logger that can say which levels it keeps: pino's.
function saysLevels (logger: FastifyBaseLogger): logger is PinoLogger {
  return typeof (logger as Partial<PinoLogger>).isLevelEnabled === 'function'
}

// The child() methods deferChildLoggers gave, so that it gives none twice.
const deferring = new WeakSet<MakeChild>()

// Whether a child's options say nothing: Fastify asks for each request's
// child with an empty object, unless the route has a level or serializers
// of its own.
function saysNothing (options: ChildLoggerOptions): boolean {
  if (options === undefined || options === null) return false
  // (Stops at the first key, inherited ones too: no array made per request.)
  // eslint-disable-next-line no-unreachable-loop
  for (const _ in options) return false
  return true
}

/**
 * Makes the request loggers of a Fastify app, given its `app.log`, on first
 * use: the children asked for with empty options (as Fastify asks for a
 * request's), of `logger` and of its children (pino makes them from it).
 * Any other child (no options, a level, levels or serializers of its own)
 * is pino's own, made at once. Only a pino logger with the standard levels
 * alone defers (false otherwise). What a deferred child changes: its
 * bindings are serialized, and pino's `onChild` runs, when it is made.
 */
export function deferChildLoggers (logger: FastifyBaseLogger): boolean {
  if (logger instanceof LazyChildLogger || !saysLevels(logger)) return false
  if (!Object.keys(logger.levels?.values ?? {}).every((level) => STANDARD_LEVELS.includes(level))) return false
  const makeChild = logger.child as MakeChild
  if (deferring.has(makeChild)) return true
  const lazyChild: MakeChild = function (this: PinoLogger, bindings: Bindings, options?: ChildLoggerOptions) {
    if (!saysNothing(options)) return makeChild.call(this, bindings, options)
    return new LazyChildLogger(this, makeChild, bindings) as unknown as PinoLogger
  }
  deferring.add(lazyChild)
  logger.child = lazyChild as FastifyBaseLogger['child']
  return true
}
