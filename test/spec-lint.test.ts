// The spec passes the OWASP API security rules (Spectral) in `npm run
// lint`, and the rules still bite: a copy of the spec with one limit
// taken away fails them.
import { execFile } from 'node:child_process'
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import type { Test } from 'tap'

const root = fileURLToPath(new URL('..', import.meta.url))
const spectral = join(root, 'node_modules/@stoplight/spectral-cli/dist/index.js')

async function lint (dir: string) {
  return promisify(execFile)(process.execPath, [spectral, 'lint', '--fail-severity=warn', '--format=json', 'spec/plant-store.yaml'], { cwd: dir })
    .then(() => [], (err: { stdout: string }) => (JSON.parse(err.stdout) as Array<{ code: string }>).map(({ code }) => code))
}

async function copyWith (t: Test, change: (spec: string) => string): Promise<string> {
  const dir = t.testdir()
  await mkdir(join(dir, 'spec'))
  await copyFile(join(root, '.spectral.yaml'), join(dir, '.spectral.yaml'))
  const spec = await readFile(join(root, 'spec/plant-store.yaml'), 'utf8')
  const changed = change(spec)
  t.not(changed, spec, 'the copy was changed')
  await writeFile(join(dir, 'spec/plant-store.yaml'), changed)
  return dir
}

t.test('the spec passes the OWASP ruleset', async (t) => {
  t.same(await lint(root), [])
})

t.test('without the limit on name, or on a page, the ruleset fails', async (t) => {
  const unbounded = await copyWith(t, (spec) => spec.replace(/(description: The name of the plant\n\s+type: string\n)\s+maxLength: 256\n/, '$1'))
  t.match(await lint(unbounded), ['owasp:api4:2023-string-limit'])
  const endless = await copyWith(t, (spec) => spec.replace(/\n\s+maxItems: 1000/, ''))
  t.match(await lint(endless), ['owasp:api4:2023-array-limit'])
})
