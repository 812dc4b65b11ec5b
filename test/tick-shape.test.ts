// The command holds a nextTick record, so that full collections leave the
// records' hidden classes (and the caches that build them fast) alone
// (lib/tick-shape.ts says why). V8's own state is read with its natives
// syntax, in a process of its own.
import { execFile } from 'node:child_process'
import { setTimeout } from 'node:timers/promises'
import { promisify } from 'node:util'
import t from 'tap'
import { holdTickShape } from '../lib/tick-shape.ts'

const MODULE = new URL('../lib/tick-shape.ts', import.meta.url).href

// A load of nextTicks interleaved with full collections, as a server's
// warm-up has; then, once the hold has had time to take a fresh record, a
// record made now is compared with the one held.
const SCRIPT = `
import { executionAsyncResource } from 'node:async_hooks'
import { setTimeout } from 'node:timers/promises'
import { holdTickShape } from ${JSON.stringify(MODULE)}
const hold = holdTickShape(20)
function batch () {
  return new Promise((resolve) => {
    for (let i = 0; i < 200; i++) process.nextTick(() => {})
    setImmediate(resolve)
  })
}
for (let round = 0; round < 60; round++) {
  await batch()
  if (round % 10 === 5) globalThis.gc()
}
await setTimeout(100)
globalThis.gc()
const fresh = await new Promise((resolve) => process.nextTick(() => resolve(executionAsyncResource())))
const held = hold.held
hold.stop()
// (The class first: reading the held record's keys could move it to the
// records' current class.)
const sameClass = held !== undefined && %HaveSameMap(held, fresh)
console.log(JSON.stringify({ sameClass, symbols: held === undefined ? 0 : Object.getOwnPropertySymbols(held).length }))
`

// (Through env(1), which takes tap's coverage out of the environment: tap
// adds it to every child it sees spawned.)
async function run () {
  const { stdout } = await promisify(execFile)('env', ['-u', 'NODE_OPTIONS', '-u', 'NODE_V8_COVERAGE', process.execPath, '--expose-gc', '--allow-natives-syntax', '--input-type=module', '-e', SCRIPT], { timeout: 30_000 })
  return JSON.parse(stdout) as { sameClass: boolean, symbols: number }
}

t.test('a record is held through full collections, and later records keep its hidden class', async (t) => {
  const seen = await run()
  t.ok(seen.symbols >= 2, 'a nextTick record is held (async ids under symbol keys)')
  t.equal(seen.sameClass, true, 'a record made after the collections has the held one\'s hidden class')
})

t.test('a fresh record is taken every so often, to follow the records to a wider class', async (t) => {
  const hold = holdTickShape(10)
  t.teardown(() => hold.stop())
  await setTimeout(5)
  const first = hold.held
  t.ok(first, 'held from the first tick')
  await setTimeout(50)
  t.ok(hold.held, 'still held')
  t.not(hold.held, first, 'a fresh one since')
  hold.stop()
  const last = hold.held
  await setTimeout(50)
  t.equal(hold.held, last, 'none after stop()')
})
