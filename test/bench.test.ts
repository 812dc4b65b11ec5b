// Keeps `npm run bench` from rotting: runs it for a moment against every
// system and checks that it reports. No timing is asserted here; speed lives
// in the benchmark itself.
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'

// Six servers start, are seeded and loaded briefly: more than tap's default.
t.setTimeout(240_000)

t.test('npm run bench -- --smoke runs every system and writes its table', async (t) => {
  const out = join(t.testdir(), 'results.md')
  const bench = fileURLToPath(new URL('../bench/bench.ts', import.meta.url))
  const { stdout } = await promisify(execFile)(process.execPath, [bench, '--smoke', '--out', out], { timeout: 200_000 })
  const written = await readFile(out, 'utf8')
  t.equal(stdout, written, 'the table printed is the table written')
  for (const system of ['service, memory store', 'service, SQLite (durable)', 'baseline: bare Fastify + Map', 'baseline: raw node:http + Map', 'peer: Express 5 + express-openapi-validator']) {
    t.match(written, new RegExp(`^\\| ${system.replace(/[()+.]/g, '\\$&')} \\| [\\d,]+ · `, 'm'), `${system} was measured`)
  }
  t.match(written, /^\| service, memory ≥ 0\.90 × bare Fastify \(creates\) \| [\d.]+ \| (yes|\*\*no\*\*) \|$/m, 'the targets are reported')
  t.match(written, /^\| start-up to listening ≤ 1 s/m)
})
