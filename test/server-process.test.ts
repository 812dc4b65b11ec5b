// The test harness's own rules for the server processes it starts
// (server-process.ts, processes.ts): what it calls alive, and that a test
// process stopped before its teardowns still takes its servers with it.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { until } from './helper.ts'
import { alive, children, inGroup, state } from './processes.ts'

const HOLDER = fileURLToPath(new URL('./holds-a-server.ts', import.meta.url))

t.test('a zombie (exited, not reaped) takes signal 0 but is not alive, nor a child', async (t) => {
  // The shell starts a child, then becomes a sleep that never reaps it; the
  // child ends only once its parent is that sleep. (A child that ended
  // sooner could be reaped by the shell itself before its exec: that one
  // never became a zombie, under CI's load.)
  const parent = spawn('/bin/sh', ['-c', 'sh -c "until grep -q ^sleep /proc/$$/comm; do sleep 0.01; done" & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] })
  t.teardown(() => { parent.kill('SIGKILL') })
  const zombie = await new Promise<number>((resolve) => parent.stdout.setEncoding('utf8').once('data', (line: string) => resolve(Number(line))))
  await until(() => state(zombie) === 'Z', 'the child is a zombie')
  t.doesNotThrow(() => process.kill(zombie, 0), 'still there for signal 0')
  t.notOk(alive(zombie), 'not alive')
  t.same(children(parent.pid!), [], 'not among its parent\'s children')
  t.ok(alive(parent.pid!), 'while its parent runs')
  t.same(inGroup(parent.pid!), [], 'a process in no group of its own leads none')
})

for (const signal of ['SIGINT', 'SIGTERM', 'SIGALRM'] as const) {
  t.test(`a test process stopped by ${signal} before its teardowns takes its server and workers with it`, async (t) => {
    const holder = spawn(process.execPath, [HOLDER], { stdio: ['ignore', 'ignore', 'pipe'] })
    t.teardown(() => { holder.kill('SIGKILL') })
    let stderr = ''
    const pid = await new Promise<number>((resolve, reject) => {
      holder.stderr.setEncoding('utf8').on('data', (chunk: string) => {
        stderr += chunk
        const found = /^server (\d+)$/m.exec(stderr)
        if (found) resolve(Number(found[1]))
      })
      holder.once('exit', () => reject(new Error(`the holder exited: ${stderr}`)))
    })
    // (Should the rule fail, what it left must not outlive this test.)
    t.teardown(() => { if (inGroup(pid).length > 0) process.kill(-pid, 'SIGKILL') })
    await until(() => children(pid).length === 2, 'its two workers')
    const group = inGroup(pid)
    t.equal(group.length, 3, 'a primary and two workers in the server\'s group')
    // (SIGINT: as the terminal's Ctrl-C reaches the test, not the server's own session.)
    holder.kill(signal)
    await until(() => !group.some(alive), 'the server and its workers gone', 10_000)
    t.same(group.filter(alive), [], 'none left')
  })
}
