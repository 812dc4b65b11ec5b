// Processes as Linux lists them (/proc): whether one is alive, a process's
// children, a process group's members. One that exited but was not yet
// reaped (a zombie: its parent, or init in a container, has not waited for
// it) still takes signal 0, yet runs nothing and holds nothing open: it is
// not alive here.
import { existsSync, readFileSync, readdirSync } from 'node:fs'
import { threadComm } from '../bench/cores.ts'

interface Entry { pid: number, state: string, ppid: number, pgrp: number }

function entry (pid: number): Entry | undefined {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    // No such process; or no /proc, which must not read as "none".
    if (!existsSync('/proc/self/stat')) throw new Error('processes.ts reads /proc: Linux only')
    return undefined
  }
  // After the command name (which may hold spaces and parentheses).
  const [state, ppid, pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return { pid, state: state!, ppid: Number(ppid), pgrp: Number(pgrp) }
}

const running = (entry: Entry | undefined): entry is Entry => entry !== undefined && entry.state !== 'Z' && entry.state !== 'X'

function all (): Entry[] {
  return readdirSync('/proc').filter((name) => /^\d+$/.test(name)).map((name) => entry(Number(name))).filter(running)
}

/** A process's state letter as Linux gives it (R, S, Z…); undefined when it is gone. */
export const state = (pid: number): string | undefined => entry(pid)?.state

/** Whether a process runs (not gone, not a zombie). */
export const alive = (pid: number): boolean => running(entry(pid))

/** A process's running children (a WORKERS primary's workers), by pid. */
export const children = (pid: number): number[] => all().filter(({ ppid }) => ppid === pid).map(({ pid }) => pid)

/** The running processes of a process group. */
export const inGroup = (pgid: number): number[] => all().filter(({ pgrp }) => pgrp === pgid).map(({ pid }) => pid)

/** How many threads of this process carry a name (as Linux keeps it). */
export function threadsNamed (name: string): number {
  return readdirSync('/proc/self/task').filter((task) => {
    try {
      return readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trimEnd() === threadComm(name)
    } catch {
      // (Ended while listed.)
      return false
    }
  }).length
}
