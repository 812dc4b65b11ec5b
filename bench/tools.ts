// Which measuring tools this machine has: one answer for the bench and for
// its smoke test.
import { execFileSync } from 'node:child_process'

/** Whether `command` runs; `present` lists exit codes that still mean it is installed. */
function runs (command: string, args: string[], present: number[] = []): boolean {
  try {
    execFileSync(command, args, { stdio: 'ignore' })
    return true
  } catch (err) {
    return present.includes((err as { status?: number }).status ?? -1)
  }
}

// (wrk --version exits 1 after printing its version.)
export const hasWrk = (): boolean => runs('wrk', ['--version'], [1])

/** valgrind's callgrind, and the command that switches its counting on and off. */
export const hasCallgrind = (): boolean => runs('valgrind', ['--version']) && runs('callgrind_control', ['-h'])

/** Linux's perf, allowed to sample this user's processes. */
export const hasPerf = (): boolean => runs('perf', ['record', '-q', '-o', '/dev/null', '--', 'true'])
