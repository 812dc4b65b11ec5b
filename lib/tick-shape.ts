// Keeps one of Node's `process.nextTick` records alive for the life of the
// process, so that every later record is built at full speed.
//
// Why: a record is an object literal with three symbol keys (Node's
// lib/internal/process/task_queues.js). V8 keeps the hidden classes such a
// literal builds only while some object still has them, and a record lives
// for microseconds: a full garbage collection finds none alive and drops
// them. The next records build new hidden classes, and after a few such
// collections the literal's stores give up on their caches for good
// (megamorphic): from then on every record is built in V8's runtime, at
// several times the cost, and a request takes several records. One record
// that stays alive keeps the classes. It has to be held before the first
// full collection: once the caches have given up, holding one no longer
// helps. And a fresh one is taken every so often:
// when a field of the records widens (an async id that is no longer a
// small integer, as under V8's coverage), V8 moves new records to a new
// hidden class, and the hold has to follow them there.
import { executionAsyncResource } from 'node:async_hooks'

export interface TickShapeHold {
  /** The record held now; undefined until the first tick has run. */
  readonly held: object | undefined
  stop (): void
}

/**
 * Call it at the top level of the process's entry point: a record keeps the
 * async context it was made in, so one taken inside a request's context
 * would keep that context's data alive.
 */
export function holdTickShape (everyMs = 1000): TickShapeHold {
  let held: object | undefined
  // (Inside a nextTick callback, the execution resource is its record.)
  const take = () => process.nextTick(() => { held = executionAsyncResource() })
  take()
  const timer = setInterval(take, everyMs).unref()
  return {
    get held () { return held },
    stop () { clearInterval(timer) }
  }
}
