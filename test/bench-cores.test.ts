// bench/cores.ts: the bench places its processes on the cores Linux gave
// it (taskset, a container's cpuset), which os.cpus() does not know.
import { execFileSync } from 'node:child_process'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { allowedCores, canPlace, formatCores, onCores, parseCores } from '../bench/cores.ts'

const CORES = fileURLToPath(new URL('../bench/cores.ts', import.meta.url))

t.test('core lists read and written as Linux writes them', async (t) => {
  for (const [list, cores] of [['0', [0]], ['0-1', [0, 1]], ['0-2,5', [0, 1, 2, 5]], ['1,3,5-7', [1, 3, 5, 6, 7]]] as const) {
    t.same(parseCores(list), cores, list)
    t.equal(formatCores([...cores]), list, `${list} written back`)
  }
  t.same(parseCores('3,1-2\n'), [1, 2, 3], 'sorted, the line\'s end ignored')
  for (const bad of ['a', '2-1', '1-', '0-x']) t.throws(() => parseCores(bad), /not a list of cores/, bad)
})

t.test('a process given one core sees that core alone, whatever the machine has', { skip: process.platform !== 'linux' || !canPlace() || allowedCores().length < 2 ? 'Linux with taskset and two cores only' : false }, async (t) => {
  const last = allowedCores().at(-1)!
  const [command, args] = onCores([last], process.execPath, ['--input-type=module', '-e',
    `import { allowedCores } from ${JSON.stringify(CORES)}; console.log(JSON.stringify(allowedCores()))`])
  t.same(JSON.parse(execFileSync(command, args, { encoding: 'utf8' })), [last], `given core ${last} of the ${cpus().length} the machine lists`)
})
