// On a Node.js release the package does not run on, every entry point
// says so in one sentence, not with whichever newer feature it lacks.
import { execFile, execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { unsupportedNode } from '../lib/node-version.ts'

t.test('the rule', async (t) => {
  t.equal(unsupportedNode('20.20.2'), 'plant-store needs Node.js 24 or newer; this is Node.js 20.20.2')
  t.equal(unsupportedNode('22.12.0'), 'plant-store needs Node.js 24 or newer; this is Node.js 22.12.0')
  t.equal(unsupportedNode('24.0.0'), undefined)
  t.equal(unsupportedNode('26.1.0'), undefined)
})

// The machine's own Node.js, where it is an older one (Debian's is 20).
const older = ['/usr/bin/node', '/usr/local/bin/node'].find((path) => {
  try {
    return Number(execFileSync(path, ['-p', 'process.versions.node.split(".")[0]'], { encoding: 'utf8', env: { PATH: '' } }).trim()) < 24
  } catch {
    return false
  }
})

t.test('the built entry points, under an older Node.js', { skip: older === undefined && 'no Node.js older than 24 on this machine' }, async (t) => {
  const dist = (file: string) => fileURLToPath(new URL(`../dist/lib/${file}`, import.meta.url))
  const bin = await promisify(execFile)(older!, [dist('bin.js')], { env: { PATH: '' } }).then(() => undefined, (err: { code: number, stdout: string, stderr: string }) => err)
  t.equal(bin?.code, 1, 'the command exits 1')
  t.match(bin?.stderr, /^plant-store: needs Node\.js 24 or newer; this is Node\.js \d+\.\d+\.\d+\n$/, 'with one line saying why')
  t.equal(bin?.stdout, '')
  for (const entry of ['plugin.js', 'client.js']) {
    const { stdout } = await promisify(execFile)(older!, ['-e', `import(${JSON.stringify(dist(entry))}).then(() => console.log('loaded'), (err) => console.log(err.message))`], { env: { PATH: '' } })
    t.match(stdout.trim(), /^plant-store needs Node\.js 24 or newer; this is Node\.js \d+/, `importing ${entry} fails with the sentence`)
  }
})
