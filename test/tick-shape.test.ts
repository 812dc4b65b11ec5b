// The command holds a nextTick record before anything else loads, so that
// full collections during warm-up leave the records' hidden classes (and
// the caches that build them fast) alone: lib/tick-shape.ts says why. What
// it saves is measured by `node bench/tick-shape.ts`, not here: a cost
// under a loaded test run is no test.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { setTimeout } from 'node:timers/promises'
import { promisify } from 'node:util'
import t from 'tap'
import { holdTickShape } from '../lib/tick-shape.ts'
import { WARM_UP } from '../bench/tick-shape-warm-up.ts'

const MODULE = new URL('../lib/tick-shape.ts', import.meta.url).href

// The warm-up (bench/tick-shape-warm-up.ts), the hold taken first; then
// whether a record made after it shares the held record's hidden class (V8's %HaveSameMap): the
// hold keeps a live record of the class new records get, which is what
// keeps that class alive. (That it is taken before the first collection is
// the command's load order, the test after this one.)
const SCRIPT = `
import { executionAsyncResource } from 'node:async_hooks'
import { holdTickShape } from ${JSON.stringify(MODULE)}
const hold = holdTickShape()
${WARM_UP}
const record = await new Promise((resolve) => process.nextTick(() => resolve(executionAsyncResource())))
console.log(JSON.stringify({ held: hold.held !== undefined, same: hold.held !== record && %HaveSameMap(hold.held, record) }))
`

t.test('the held object is a nextTick record', async (t) => {
  const hold = holdTickShape()
  t.teardown(() => hold.stop())
  await setTimeout(1)
  const keys = Object.getOwnPropertySymbols(hold.held).map((symbol) => symbol.description)
  t.ok(keys.includes('async_id_symbol') && keys.includes('trigger_async_id_symbol'), 'its async ids')
  t.ok('callback' in hold.held! && 'args' in hold.held!, 'its callback and arguments')
})

t.test('after ten full collections, the held record is of the hidden class new records get', async (t) => {
  // (Through env(1), which takes tap's coverage out of the environment: tap
  // adds it to every child it sees spawned, and it changes how V8 builds
  // the records.)
  const { stdout } = await promisify(execFile)('env', ['-u', 'NODE_OPTIONS', '-u', 'NODE_V8_COVERAGE', process.execPath, '--expose-gc', '--allow-natives-syntax', '--input-type=module', '-e', SCRIPT], { timeout: 60_000 })
  t.same(JSON.parse(stdout), { held: true, same: true })
})

t.test('the command loads the hold before it loads the server', async (t) => {
  // Modules are logged as they are resolved (the command imports them one
  // after another, and calls holdTickShape() as soon as it has it);
  // `--help` loads the server, which prints and exits.
  const hooks = `data:text/javascript,${encodeURIComponent(`
    import { registerHooks } from 'node:module'
    registerHooks({ resolve (specifier, context, next) {
      const resolved = next(specifier, context)
      if (resolved.url.includes('/dist/lib/')) process.stderr.write('resolved ' + resolved.url.split('/dist/lib/')[1] + '\\n')
      return resolved
    } })`)}`
  const bin = fileURLToPath(new URL('../dist/lib/bin.js', import.meta.url))
  const { stderr } = await promisify(execFile)(process.execPath, ['--import', hooks, bin, '--help'], { timeout: 60_000 })
  const order = stderr.split('\n').filter((line) => line.startsWith('resolved ')).map((line) => line.slice('resolved '.length))
  t.ok(order.includes('tick-shape.js') && order.includes('server.js'), 'both loaded')
  t.ok(order.indexOf('tick-shape.js') < order.indexOf('server.js'), 'the hold\'s module first')
})

t.test('a fresh record is taken every so often, and none after stop()', async (t) => {
  // (So that the hold follows the records when V8 moves them to a wider
  // hidden class: under its coverage, for one, async ids start as small
  // integers.)
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
