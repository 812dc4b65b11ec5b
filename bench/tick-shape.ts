// What the command's nextTick hold (lib/tick-shape.ts) saves: the CPU time
// of 300,000 nextTicks after a warm-up with full collections, in a fresh
// process with the hold and in one without, interleaved; the median of the
// per-round ratios. A measurement, not a test: `node bench/tick-shape.ts
// [rounds]`.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { WARM_UP } from './tick-shape-warm-up.ts'

const MODULE = new URL('../lib/tick-shape.ts', import.meta.url).href

// The warm-up (tick-shape-warm-up.ts), the hold taken before it or not at
// all; then the CPU time of 300,000 nextTicks.
const SCRIPT = `
import { holdTickShape } from ${JSON.stringify(MODULE)}
if (process.argv[1] === 'held') holdTickShape()
${WARM_UP}
const start = process.cpuUsage()
for (let round = 0; round < 300; round++) await batch()
const { user, system } = process.cpuUsage(start)
console.log(user + system)
`

async function cpu (mode: 'held' | 'none'): Promise<number> {
  // (Without NODE_V8_COVERAGE: coverage widens the records' fields.)
  const env = { ...process.env }
  delete env.NODE_V8_COVERAGE
  delete env.NODE_OPTIONS
  const { stdout } = await promisify(execFile)(process.execPath, ['--expose-gc', '--input-type=module', '-e', SCRIPT, mode], { env, timeout: 60_000 })
  return Number(stdout)
}

const rounds = Number(process.argv[2] ?? 5)
const ratios: number[] = []
for (let round = 0; round < rounds; round++) {
  const [first, second] = round % 2 === 0 ? ['held', 'none'] as const : ['none', 'held'] as const
  const times = { [first]: await cpu(first), [second]: await cpu(second) }
  ratios.push(times.none! / times.held!)
  console.log(`round ${round + 1}: ${times.held} µs with the hold, ${times.none} µs without (${(times.none! / times.held!).toFixed(2)}x)`)
}
const median = ratios.toSorted((x, y) => x - y)[Math.floor(ratios.length / 2)]!
console.log(`CPU time of 300,000 nextTicks without the hold / with it, median of ${rounds}: ${median.toFixed(2)}x`)
