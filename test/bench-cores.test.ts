// bench/cores.ts: the bench places its processes on the cores Linux gave
// it (taskset, a container's cpuset), which os.cpus() does not know.
import { execFileSync, spawnSync } from 'node:child_process'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { allowedCores, formatCores, onCores, parseCores } from '../bench/cores.ts'

const CORES = fileURLToPath(new URL('../bench/cores.ts', import.meta.url))
const SKIP = process.platform !== 'linux' || spawnSync('taskset', ['-p', String(process.pid)]).status !== 0 || allowedCores().length < 2
  ? 'Linux with taskset and two cores only'
  : false

t.test('core lists read and written as Linux writes them', async (t) => {
  for (const [list, cores] of [['0', [0]], ['0-1', [0, 1]], ['0-2,5', [0, 1, 2, 5]], ['1,3,5-7', [1, 3, 5, 6, 7]]] as const) {
    t.same(parseCores(list), cores, list)
    t.equal(formatCores([...cores]), list, `${list} written back`)
  }
  t.same(parseCores('3,1-2\n'), [1, 2, 3], 'sorted, the line\'s end ignored')
  for (const bad of ['a', '2-1', '1-', '0-x', '-1', '1-2-3', '1,,2', '']) t.throws(() => parseCores(bad), /not a list of cores/, bad)
})

t.test('a process given one core sees that core alone, whatever the machine has', { skip: SKIP }, async (t) => {
  const last = allowedCores().at(-1)!
  const [command, args] = onCores([last], process.execPath, ['--input-type=module', '-e',
    `import { allowedCores } from ${JSON.stringify(CORES)}; console.log(JSON.stringify(allowedCores()))`])
  t.same(JSON.parse(execFileSync(command, args, { encoding: 'utf8' })), [last], `given core ${last} of the ${cpus().length} the machine lists`)
})

t.test('a process that pins itself moves every thread it has, and those it starts after', { skip: SKIP }, async (t) => {
  const first = allowedCores()[0]!
  // Each thread's cores (/proc/self/task), once a worker thread started after the pin is running.
  const script = `import { readdirSync } from 'node:fs'
    import { Worker } from 'node:worker_threads'
    import { coresOf, pinSelf } from ${JSON.stringify(CORES)}
    const pinned = pinSelf([${first}])
    const worker = new Worker('setTimeout(() => {}, 10000)', { eval: true })
    worker.once('online', () => {
      const lists = readdirSync('/proc/self/task').map((task) => coresOf('self/task/' + task))
      console.log(JSON.stringify({ pinned, threads: lists.length, lists: [...new Set(lists)] }))
      worker.terminate()
    })`
  const seen = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { pinned: boolean, threads: number, lists: string[] }
  t.ok(seen.pinned, 'pinned')
  t.same(seen.lists, [String(first)], `all ${seen.threads} threads on core ${first}`)
})
