// Which cores a process may run on, the commands that place one, and the
// name Linux keeps of a thread.
// Linux says which cores this process was given (Cpus_allowed_list:
// taskset, a container's cpuset); os.cpus() lists the machine's, given or
// not, so the bench asks Linux where it can.
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { cpus } from 'node:os'

/** "0-2,5" → [0, 1, 2, 5]. */
export function parseCores (list: string): number[] {
  const cores = new Set<number>()
  for (const part of list.trim().split(',')) {
    const range = /^(\d+)(?:-(\d+))?$/.exec(part)
    const from = Number(range?.[1])
    const to = Number(range?.[2] ?? range?.[1])
    if (range === null || from > to) throw new Error(`not a list of cores: ${list}`)
    for (let core = from; core <= to; core++) cores.add(core)
  }
  return [...cores].sort((a, b) => a - b)
}

/** [0, 1, 2, 5] → "0-2,5", as Linux and taskset write them. */
export function formatCores (cores: number[]): string {
  const parts: string[] = []
  for (let i = 0; i < cores.length;) {
    let j = i
    while (j + 1 < cores.length && cores[j + 1] === cores[j]! + 1) j++
    parts.push(j === i ? String(cores[i]) : `${cores[i]}-${cores[j]}`)
    i = j + 1
  }
  return parts.join(',')
}

/**
 * The cores a process (a pid, 'self') or one of its threads
 * ('self/task/TID') may run on, as Linux writes them; undefined where
 * Linux does not say.
 */
export function coresOf (entry: number | 'self' | `self/task/${string}`): string | undefined {
  try {
    return /^Cpus_allowed_list:\s*(\S+)$/m.exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]
  } catch {
    return undefined
  }
}

/** A thread's name as Linux keeps it (its comm, which top -H, ps -L and perf show): the first 15 bytes, of the ASCII names here. */
export const threadComm = (name: string): string => name.slice(0, 15)

/** The cores this process may run on and that are online, in order. */
export function allowedCores (): number[] {
  const list = coresOf('self')
  if (list === undefined) return cpus().map((_, core) => core)
  // (The mask may name cores a VM could add but has not: not online.)
  let online: Set<number> | undefined
  try {
    online = new Set(parseCores(readFileSync('/sys/devices/system/cpu/online', 'utf8')))
  } catch {}
  return parseCores(list).filter((core) => online === undefined || online.has(core))
}

/** Pins every thread of this process (those it starts later too) to `cores`; false where that cannot be done. */
export function pinSelf (cores: number[]): boolean {
  try {
    execFileSync('taskset', ['-a', '-p', '-c', formatCores(cores), String(process.pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** `command` with `args`, to run on `cores` (taskset execs it: same pid). */
export function onCores (cores: number[], command: string, args: string[]): [string, string[]] {
  return ['taskset', ['-c', formatCores(cores), command, ...args]]
}
