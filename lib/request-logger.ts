// Request loggers made on first use. Fastify gives every request a child
// logger, and pino's child() serializes its bindings each time: a cost per
// request that buys nothing when, as usual, the request writes no line at
// a level the logger keeps. The child is made only when a line is written
// at a kept level, or when someone asks for more than writing lines.
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

// (What the factory is called with is kept as fields, not in a closure: one
// object per request rather than three.)
class LazyRequestLogger {
  readonly #parent: PinoLogger
  readonly #factory: Factory
  readonly #instance: FastifyInstance
  readonly #bindings: Bindings
  readonly #options: FactoryOptions
  readonly #rawRequest: RawRequest
  #child: PinoLogger | undefined

  constructor (parent: PinoLogger, factory: Factory, instance: FastifyInstance, bindings: Bindings, options: FactoryOptions, rawRequest: RawRequest) {
    this.#parent = parent
    this.#factory = factory
    this.#instance = instance
    this.#bindings = bindings
    this.#options = options
    this.#rawRequest = rawRequest
  }

  #real (): PinoLogger {
    this.#child ??= this.#factory.call(this.#instance, this.#parent, this.#bindings, this.#options, this.#rawRequest) as PinoLogger
    return this.#child
  }

  #write (level: Level, args: LogArgs): void {
    // The child has its parent's level (a route's own level makes the child at once).
    if (this.#child === undefined && !this.#parent.isLevelEnabled(level)) return
    this.#real()[level](...args)
  }

  fatal (...args: LogArgs): void { this.#write('fatal', args) }
  error (...args: LogArgs): void { this.#write('error', args) }
  warn (...args: LogArgs): void { this.#write('warn', args) }
  info (...args: LogArgs): void { this.#write('info', args) }
  debug (...args: LogArgs): void { this.#write('debug', args) }
  trace (...args: LogArgs): void { this.#write('trace', args) }
  silent (): void {}

  get level (): FastifyBaseLogger['level'] { return this.#real().level }
  set level (level: FastifyBaseLogger['level']) { this.#real().level = level }

  isLevelEnabled (level: string): boolean {
    return (this.#child ?? this.#parent).isLevelEnabled(level)
  }

  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options)
  }

  // The rest of pino's logger, for what a host's hooks may call.
  bindings (): Bindings { return this.#real().bindings() }
  setBindings (bindings: Bindings): void { this.#real().setBindings(bindings) }
  flush (callback?: (err?: Error) => void): void { this.#real().flush(callback) }
  get levels (): PinoLogger['levels'] { return this.#real().levels }
  get levelVal (): number { return this.#real().levelVal }
  get msgPrefix (): string | undefined { return this.#real().msgPrefix }
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
