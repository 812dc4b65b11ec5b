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
// which cost each request about 1,500 more instructions (callgrind, main
// thread, the median of repeated runs outside the bench); symbol keys cost
// as much. A logger serialized (JSON, pino's safe-stable-stringify) or
// shown (util.inspect) shows none of them: its bindings may name the
// request.
class LazyChildLogger {
  private declare readonly parent: PinoLogger
  private declare readonly makeChild: MakeChild
  private declare readonly childBindings: Bindings
  private declare readonly childOptions: ChildLoggerOptions
  private declare madeChild: PinoLogger | undefined

  constructor (parent: PinoLogger, makeChild: MakeChild, bindings: Bindings, options: ChildLoggerOptions) {
    this.madeChild = undefined
    this.parent = parent
    this.makeChild = makeChild
    this.childBindings = bindings
    this.childOptions = options
  }

  private childLogger (): PinoLogger {
    this.madeChild ??= this.makeChild.call(this.parent, this.childBindings, this.childOptions)
    return this.madeChild
  }

  private writeAt (level: Level, args: LogArgs): void {
    // The child has its parent's level (one asked for a level of its own was made at once).
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

/**
 * Makes `logger`'s children (a Fastify app's request loggers, given
 * `app.log`) on first use, and its children's children, which pino makes
 * from it. Only a pino logger with the standard levels alone defers
 * (false otherwise); a child asked for with a level or levels of its own
 * (a route's log level) is made at once. What a deferred child changes:
 * pino's `onChild` runs when it is made, if ever.
 */
export function deferChildLoggers (logger: FastifyBaseLogger): boolean {
  if (!saysLevels(logger) || !Object.keys(logger.levels?.values ?? {}).every((level) => STANDARD_LEVELS.includes(level))) return false
  const makeChild = logger.child as MakeChild
  logger.child = function lazyChild (this: PinoLogger, bindings: Bindings, options?: ChildLoggerOptions) {
    if (options?.level !== undefined || (options as { customLevels?: unknown } | undefined)?.customLevels !== undefined) {
      return makeChild.call(this, bindings, options)
    }
    return new LazyChildLogger(this, makeChild, bindings, options) as unknown as FastifyBaseLogger
  }
  return true
}
