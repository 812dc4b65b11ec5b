// The standalone server in a real process on a real port, as users run it
// (`npm start`, the bin): started from dist/, which `npm test` builds first.
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { delimiter, dirname } from 'node:path'
import { setTimeout } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { onExit } from 'signal-exit'
import type { Test } from 'tap'
import { contractProblems } from './contract.ts'
import { inGroup } from './processes.ts'

export const SERVER = fileURLToPath(new URL('../dist/lib/bin.js', import.meta.url))

export interface Running {
  pid: number
  url: string
  stdout: () => string
  stderr: () => string
  stop: (signal?: NodeJS.Signals) => Promise<number | null>
  /** Resolves with the exit code. */
  exited: Promise<number | null>
}

export interface RunOptions {
  cwd?: string
  args?: string[]
  /** The process's file-descriptor limit (`ulimit -n`). */
  descriptors?: number
}

/** This test's Node first, for the shebang's `env` to find. */
export const PATH = [dirname(process.execPath), process.env.PATH].join(delimiter)

// Process groups this test process leads: each server leads one, so that
// a signal reaches it and its workers at once and what is left of it can be
// found. Their own session keeps them out of the terminal's Ctrl-C, and tap
// ends a timed-out file with SIGALRM, then SIGKILL half a second later,
// which a teardown waiting for leftovers outlasts: so when this process
// ends, however it ends (but SIGKILL), it kills what it started.
const groups = new Set<number>()
onExit(() => {
  for (const group of groups) try { process.kill(-group, 'SIGKILL') } catch {}
})

// How long a killed primary's workers may take to notice and exit.
const LEFTOVER_MS = 10_000

// The bin is executed, as `npm start` and an installed `plant-store` do:
// its shebang line picks Node's flags and environment. At the end of `t`
// it is killed if still running, and so is anything left of its group.
export function run (t: Test, env: NodeJS.ProcessEnv, { cwd, args = [], descriptors }: RunOptions = {}) {
  // The shell sets the limit, then becomes the server (same pid).
  const [command, ...prefix] = descriptors === undefined
    ? [SERVER]
    : ['/bin/sh', '-c', `ulimit -n ${descriptors} && exec "$0" "$@"`, SERVER]
  const child = spawn(command!, [...prefix, ...args], {
    cwd,
    detached: true,
    // No overload check unless a test asks: a loaded CI machine stalls
    // processes for a second at times, which would be a 503.
    env: { PATH, PORT: '0', DATABASE_URL: 'memory:', MAX_EVENT_LOOP_DELAY: '0', ...env }
  })
  const pid = child.pid!
  groups.add(pid)
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr += chunk })
  const exited = once(child, 'exit').then(([code]) => {
    // A group that emptied with its leader is not this process's to kill
    // any more: its number may come back as another's.
    if (inGroup(pid).length === 0) groups.delete(pid)
    return code as number | null
  })
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
    // A worker exits once its primary is gone (workers.test.ts checks it):
    // one still here would hold this file's pipes open until tap's
    // timeout, with nothing said. It is said, and killed.
    const deadline = Date.now() + LEFTOVER_MS
    let left = inGroup(pid)
    while (left.length > 0 && Date.now() < deadline) {
      await setTimeout(50)
      left = inGroup(pid)
    }
    if (left.length > 0) {
      t.comment(`process(es) ${left.join(', ')} of the server's group outlived it by ${LEFTOVER_MS} ms: killed`)
      try { process.kill(-pid, 'SIGKILL') } catch {}
    }
    groups.delete(pid)
  })
  return { child, exited, stdout: () => stdout, stderr: () => stderr }
}

export async function freePort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  return port
}

export async function start (t: Test, env: NodeJS.ProcessEnv = {}, options: RunOptions = {}): Promise<Running> {
  const port = await freePort()
  const proc = run(t, { PORT: String(port), ...env }, options)
  const url = `http://127.0.0.1:${port}`
  // Ready when it answers, whatever its log level.
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`server exited: ${proc.stderr()}`)
    // Plain fetch: readiness polls are not answers under test.
    if (await fetch(`${url}/docs/json`).then((res) => res.ok, () => false)) break
    await setTimeout(50)
  }
  const stop = async (signal: NodeJS.Signals = 'SIGTERM') => {
    if (proc.child.exitCode === null) proc.child.kill(signal)
    return proc.exited
  }
  return { pid: proc.child.pid!, url, stdout: proc.stdout, stderr: proc.stderr, stop, exited: proc.exited }
}

export async function call (t: Test, url: string, init: RequestInit = {}, operationId?: string) {
  const res = await fetch(url, init)
  const body = await res.text()
  t.same(contractProblems(operationId, res.status, body), [], `${init.method ?? 'GET'} ${url} → ${res.status} matches the spec`)
  return { status: res.status, headers: res.headers, body, json: () => JSON.parse(body) }
}
