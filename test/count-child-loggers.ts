// Loaded into a server process under test (NODE_OPTIONS=--import): writes
// `child logger made` to stdout each time the process makes a pino child
// logger. pino's loggers share one prototype, whose child() every logger
// calls, a deferred request logger included once it is made.
import { writeSync } from 'node:fs'
import pino from 'pino'

// (Each logger's own prototype inherits from the shared one that has child().)
let prototype = Object.getPrototypeOf(pino({ enabled: false }))
while (!Object.hasOwn(prototype, 'child')) prototype = Object.getPrototypeOf(prototype)
const child = prototype.child
prototype.child = function (this: unknown, ...args: unknown[]) {
  // (At once: an asynchronous write to the pipe could come after the answer.)
  writeSync(1, 'child logger made\n')
  return child.apply(this, args)
}
