// The package as an app installs it: `npm pack`, then the tarball
// installed into a fresh Fastify app (npm only, from the registry's cache),
// type-checked as TypeScript, run as an ES module and as CommonJS.
import { execFile } from 'node:child_process'
import { copyFile, cp, readFile, readdir, rename, stat, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'

const run = promisify(execFile)
const root = fileURLToPath(new URL('..', import.meta.url))
const tsc = fileURLToPath(import.meta.resolve('typescript/bin/tsc'))
// npm runs with the Node.js it came with; the apps run with this one.
const npm = (args: string[], cwd: string) => run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, env: { ...process.env, NODE_OPTIONS: '' } })

t.setTimeout(240_000)

const dir = t.testdir({
  app: {
    'package.json': JSON.stringify({ name: 'host-app', private: true, type: 'module' }),
    'host.ts': `import Fastify from 'fastify'
import plantStore from 'plant-store'
import type { PlantStoreOptions } from 'plant-store'
import { createPlantStoreClient } from 'plant-store/client'

const options: PlantStoreOptions = { tokens: ['host-token'], database: 'memory:' }
const app = Fastify()
await app.register(plantStore, { prefix: '/api', ...options })
const url = await app.listen({ port: 0, host: '127.0.0.1' })
const client = createPlantStoreClient({ baseUrl: url + '/api', token: 'host-token' })
const created = await client.POST('/plants', { body: { id: 9007199254740993n, name: 'Fern' } })
const read = await client.GET('/plants/{id}', { params: { path: { id: 9007199254740993n } } })
const id: bigint | undefined = read.data?.id
console.log(created.response.status, JSON.stringify(created.data), String(id))
await app.close()
`,
    'host.cjs': `const Fastify = require('fastify')
const plantStore = require('plant-store').default

async function main () {
  const app = Fastify()
  await app.register(plantStore, { prefix: '/api', tokens: ['host-token'], database: 'memory:' })
  const res = await app.inject({ method: 'POST', url: '/api/plants', headers: { authorization: 'Bearer host-token', 'content-type': 'application/json' }, payload: '{"id":9007199254740993,"name":"Fern"}' })
  console.log(res.statusCode, res.body, app.hasPlugin('plant-store'))
  await app.close()
}
main()
`,
    // Installed under another name, bundled: nothing may find its files by
    // the package's name or its layout. On SQLite, so that the writer
    // thread has to be found too.
    'sqlite-host.mjs': `import Fastify from 'fastify'
import plantStore from '%PACKAGE%'
import { DatabaseSync } from 'node:sqlite'

const file = process.argv[2]
const app = Fastify()
await app.register(plantStore, { prefix: '/api', tokens: ['host-token'], database: 'file:' + file, docs: false })
const res = await app.inject({ method: 'POST', url: '/api/plants', headers: { authorization: 'Bearer host-token', 'content-type': 'application/json' }, payload: '{"id":9007199254740993,"name":"Fern"}' })
await app.close()
const db = new DatabaseSync(file, { readOnly: true })
const stored = db.prepare('SELECT CAST(id AS TEXT) AS id, name FROM plants').all().map((row) => row.id + ' ' + row.name)
console.log(res.statusCode, res.body, stored.join())
`
  }
})
const app = join(dir, 'app')

t.test('npm pack: the built package, nothing of its tests or benchmark', async (t) => {
  // --ignore-scripts: the test run already built dist/ (prepack would
  // rebuild it under the other test files' feet).
  const { stdout } = await npm(['pack', '--ignore-scripts', '--json', '--pack-destination', dir], root)
  const [{ files, filename }] = JSON.parse(stdout) as [{ filename: string, files: Array<{ path: string }> }]
  const paths = files.map(({ path }) => path)
  for (const needed of ['package.json', 'README.md', 'spec/plant-store.yaml', 'dist/lib/plugin.js', 'dist/lib/plugin.d.ts', 'dist/lib/client.js', 'dist/lib/client.d.ts', 'dist/lib/bin.js', 'dist/lib/stores/sqlite-writer.js']) {
    t.ok(paths.includes(needed), needed)
  }
  t.same(paths.filter((path) => !/^(dist\/|spec\/plant-store\.yaml$|package\.json$|README\.md$|LICENSE)/.test(path)), [], 'nothing else')
  t.same(paths.filter((path) => /^dist\/(test|bench)\/|\.ts$/.test(path) && !path.endsWith('.d.ts')), [], 'no tests, no benchmark, no sources')
  t.notOk(paths.includes('dist/.tsbuildinfo'), 'not the incremental build\'s record')
  // Twice: as itself, and renamed (an alias, as a fork or a scoped copy would be).
  await npm(['install', '--prefer-offline', join(dir, filename), `renamed-plants@file:${join(dir, filename)}`, 'fastify@^5'], app)
  t.ok((await readdir(join(app, 'node_modules'))).includes('plant-store'), 'installed into a fresh app')
})

// prepack deletes dist/ and builds again. The incremental build's record
// lives in dist/, so that it goes with it: kept elsewhere, it said that
// nothing had changed, tsc wrote nothing, and the build failed (no
// dist/lib/bin.js to chmod). (In a copy of the sources: this checkout's
// dist/ is in use by the other tests.)
t.test('prepack in a checkout built before: dist/ deleted and built again, bin included', async (t) => {
  const checkout = t.testdir({})
  for (const name of ['package.json', 'tsconfig.json', 'tsconfig.build.json']) await copyFile(join(root, name), join(checkout, name))
  // (The sources the build compiles: its own `include`.)
  const { include } = JSON.parse(await readFile(join(root, 'tsconfig.build.json'), 'utf8')) as { include: string[] }
  for (const name of include) await cp(join(root, name), join(checkout, name), { recursive: true })
  await symlink(join(root, 'node_modules'), join(checkout, 'node_modules'), 'dir')
  await npm(['run', 'build'], checkout)
  await npm(['run', 'prepack'], checkout)
  const bin = await stat(join(checkout, 'dist/lib/bin.js'))
  t.ok((bin.mode & 0o111) !== 0, 'dist/lib/bin.js built again, executable')
  t.ok((await stat(join(checkout, 'dist/lib/plugin.js'))).isFile(), 'and the plugin')
})

t.test('a TypeScript host app type-checks against it and runs under /api', async (t) => {
  await writeFile(join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, noEmit: true, target: 'es2024', module: 'nodenext', allowImportingTsExtensions: true, types: ['node'], typeRoots: [join(root, 'node_modules/@types')], skipLibCheck: false }
  }))
  await t.resolves(run(process.execPath, [tsc, '-p', app], { cwd: app, env: { ...process.env, NODE_OPTIONS: '' } }), 'tsc accepts the host app')
  const { stdout } = await run(process.execPath, ['host.ts'], { cwd: app })
  t.equal(stdout.trim(), '200 {"name":"Fern"} 9007199254740993', 'a create and a read through the typed client, id exact')
})

t.test('a CommonJS host app requires it', async (t) => {
  const { stdout } = await run(process.execPath, ['host.cjs'], { cwd: app })
  t.equal(stdout.trim(), '200 {"name":"Fern"} true')
})

t.test('the bin installed with it', async (t) => {
  const { stdout } = await run(process.execPath, [join(app, 'node_modules/plant-store/dist/lib/bin.js'), '--help'], { cwd: app })
  t.match(stdout, /^Usage: plant-store/)
})

const sqliteHost = async (name: string, file: string) => {
  await writeFile(file, (await readFile(join(app, 'sqlite-host.mjs'), 'utf8')).replace('%PACKAGE%', name))
  return file
}

t.test('installed under another name, it finds its spec and its SQLite writer', async (t) => {
  const script = await sqliteHost('renamed-plants', join(app, 'renamed-host.mjs'))
  const { stdout } = await run(process.execPath, [script, join(dir, 'renamed.db')], { cwd: app })
  t.equal(stdout.trim(), '200 {"name":"Fern"} 9007199254740993 Fern', 'created, and in the file')
})

t.test('bundled with the host app (esbuild, split at dynamic imports), without its package on disk', async (t) => {
  const script = await sqliteHost('plant-store', join(app, 'bundled-host.mjs'))
  // Its own code is bundled; its dependencies stay packages, as they read
  // files of their own (fastify-openapi-glue its schemas, Swagger UI its assets).
  const { dependencies } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
  const esbuild = fileURLToPath(new URL('../node_modules/.bin/esbuild', import.meta.url))
  const out = join(app, 'bundle')
  await run(esbuild, [script, '--bundle', '--splitting', '--format=esm', '--platform=node', `--outdir=${out}`, '--log-level=warning',
    ...Object.keys(dependencies).map((name) => `--external:${name}`)])
  t.ok((await readdir(out)).some((file) => file.startsWith('sqlite-store-')), 'the store is a chunk of its own')
  // Out of reach: the bundle may not read the installed package's files.
  await rename(join(app, 'node_modules/plant-store'), join(dir, 'plant-store-away'))
  t.teardown(() => rename(join(dir, 'plant-store-away'), join(app, 'node_modules/plant-store')))
  const { stdout } = await run(process.execPath, [join(out, 'bundled-host.js'), join(dir, 'bundled.db')], { cwd: app })
  t.equal(stdout.trim(), '200 {"name":"Fern"} 9007199254740993 Fern', 'created, and in the file')
})
