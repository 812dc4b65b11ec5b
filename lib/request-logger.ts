// Request loggers made on first use. Fastify gives every request a child
// logger, and pino's child() serializes its bindings each time: a cost per
// request that buys nothing when, as usual, the request writes no line at
// a level the logger keeps. The child is made only when a line is written
// at a kept level, or when someone asks for more than writing lines.
import { inspect } from 'node:util'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type Factory = FastifyInstance['childLoggerFactory']
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

type FactoryOptions = Parameters<Factory>[2]
type RawRequest = Parameters<Factory>[3]

// What the factory is called with is kept as fields, not in a closure: one
// object per request rather than three. The fields are made in the
// constructor alone: class fields (private ones or any not `declare`d) are
// made by the class's field initializer first, which cost each request
// about 1,500 more instructions (callgrind, main thread, the median of
// repeated runs outside the bench); symbol keys cost as much. They hold
// the raw request, its token included: a logger serialized (JSON, pino's
// safe-stable-stringify) or shown (util.inspect) shows none of them.
class LazyRequestLogger {
  private declare readonly parent: PinoLogger
  private declare readonly factory: Factory
  private declare readonly instance: FastifyInstance
  private declare readonly childBindings: Bindings
  private declare readonly childOptions: FactoryOptions
  private declare readonly rawRequest: RawRequest
  private declare madeChild: PinoLogger | undefined

  constructor (parent: PinoLogger, factory: Factory, instance: FastifyInstance, bindings: Bindings, options: FactoryOptions, rawRequest: RawRequest) {
    this.madeChild = undefined
    this.parent = parent
    this.factory = factory
    this.instance = instance
    this.childBindings = bindings
    this.childOptions = options
    this.rawRequest = rawRequest
  }

  private childLogger (): PinoLogger {
    this.madeChild ??= this.factory.call(this.instance, this.parent, this.childBindings, this.childOptions, this.rawRequest) as PinoLogger
    return this.madeChild
  }

  private writeAt (level: Level, args: LogArgs): void {
    // The child has its parent's level (a route's own level makes the child at once).
    if (this.madeChild === undefined && !this.parent.isLevelEnabled(level)) return
    this.childLogger()[level](...args)
  }

  toJSON (): object {
    return {}
  }

  [inspect.custom] (): string {
    return 'LazyRequestLogger {}'
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

/**
 * Whether requests' loggers may be made lazily without a host noticing:
 * Fastify's own factory (a host's may do more than make a child, or give
 * it a level of its own), and a pino logger with only the standard levels.
 */
export function deferrable (logger: FastifyBaseLogger, factory: Factory): boolean {
  return factory.name === 'defaultChildLoggerFactory' && saysLevels(logger) &&
    Object.keys(logger.levels?.values ?? {}).every((level) => STANDARD_LEVELS.includes(level))
}

// A logger that can say which levels it keeps: pino's.
function saysLevels (logger: FastifyBaseLogger): logger is PinoLogger {
  return typeof (logger as Partial<PinoLogger>).isLevelEnabled === 'function'
}

/**
 * A child logger factory that defers the factory it wraps (the app's own,
 * or Fastify's) until a request's logger is used. Loggers that cannot say
 * which levels they keep, and routes with a level of their own, get their
 * child at once.
 */
export function lazyChildLoggerFactory (inherited: Factory): Factory {
  return function lazyChildLogger (this: FastifyInstance, logger, bindings, options, rawRequest) {
    if (!saysLevels(logger) || options.level !== undefined) {
      return inherited.call(this, logger, bindings, options, rawRequest)
    }
    return new LazyRequestLogger(logger, inherited, this, bindings, options, rawRequest) as unknown as FastifyBaseLogger
  }
}
