// The command holds a nextTick record before anything else loads, so that
// full collections during warm-up leave the records' hidden classes (and
// the caches that build them fast) alone: lib/tick-shape.ts says why.
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { setTimeout } from 'node:timers/promises'
import { promisify } from 'node:util'
import t from 'tap'
import { holdTickShape } from '../lib/tick-shape.ts'
import { medianRatio } from './cpu-time.ts'

const MODULE = new URL('../lib/tick-shape.ts', import.meta.url).href

// A warm-up of nextTicks interleaved with full collections, as a server's
// start has (ten of them, after 100,000 nextTicks had the code optimized),
// the hold taken before it or not at all; then the CPU time of 300,000
// nextTicks.
const SCRIPT = `
import { holdTickShape } from ${JSON.stringify(MODULE)}
if (process.argv[1] === 'held') holdTickShape()
function batch () {
  return new Promise((resolve) => {
    for (let i = 0; i < 1000; i++) process.nextTick(() => {})
    setImmediate(resolve)
  })
}
for (let round = 0; round < 200; round++) {
  await batch()
  if (round % 20 === 10) globalThis.gc()
}
const start = process.cpuUsage()
for (let round = 0; round < 300; round++) await batch()
const { user, system } = process.cpuUsage(start)
console.log(user + system)
`

// (Through env(1), which takes tap's coverage out of the environment: tap
// adds it to every child it sees spawned, and it changes how V8 builds
// the records.)
async function cpu (mode: 'held' | 'none'): Promise<number> {
  const { stdout } = await promisify(execFile)('env', ['-u', 'NODE_OPTIONS', '-u', 'NODE_V8_COVERAGE', process.execPath, '--expose-gc', '--input-type=module', '-e', SCRIPT, mode], { timeout: 60_000 })
  return Number(stdout)
}

t.test('with the hold, nextTicks after full collections cost less (CPU time, interleaved, median)', async (t) => {
  // Without it they cost some 2-7x as much on this machine: the records are
  // built in V8's runtime. No absolute time: the two are compared.
  const ratio = await medianRatio(3, () => cpu('held'), () => cpu('none'))
  t.comment(`CPU time of 300,000 nextTicks without the hold / with it, median of 3: ${ratio.toFixed(2)}`)
  t.ok(ratio > 1.4, `the hold saves (${ratio.toFixed(2)}x)`)
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
