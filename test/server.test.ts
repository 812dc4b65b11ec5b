// The standalone server as users run it: configuration, tokens, docs, signals.
import { execFile } from 'node:child_process'
import { chmodSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import t from 'tap'
import { PATH, SERVER, call, run, start } from './server-process.ts'

t.test('out of the box: a generated token, printed once, and a working API', async (t) => {
  const server = await start(t)
  const token = /generated token\s+(\S+)/.exec(server.stderr())?.[1]
  t.ok(token, 'the token is printed')
  t.match(server.stderr(), /set PLANT_STORE_TOKENS=/, 'with a hint on setting one')

  const created = await call(t, `${server.url}/plants`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"id":9223372036854775807,"name":"Fern","tag":"green"}'
  }, 'createPlant')
  t.equal(created.status, 200)
  t.same(created.json(), { name: 'Fern', tag: 'green' })

  const refused = await call(t, `${server.url}/plants`, {
    method: 'POST', headers: { authorization: 'Bearer nope', 'content-type': 'application/json' }, body: '{"id":1,"name":"x"}'
  }, 'createPlant')
  t.equal(refused.status, 401)
  t.equal(refused.headers.get('www-authenticate'), 'Bearer realm="plant-store", error="invalid_token"')

  const invalid = await call(t, `${server.url}/plants`, {
    method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: '{"id":"12","name":"x"}'
  }, 'createPlant')
  t.equal(invalid.status, 400)
  t.match(invalid.json().message, /body\/id must be an integer/)

  t.equal(await server.stop('SIGTERM'), 0, 'SIGTERM exits 0')
  t.notOk(server.stdout().includes(token!), 'the token is not in the log')
  t.match(server.stdout(), /"msg":"shutting down"/)
})

t.test('configured tokens, Swagger UI at /docs and the spec at /docs/json', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: 'one,two', LOG_LEVEL: 'warn' })
  t.notMatch(server.stderr(), /generated token/)
  const created = await call(t, `${server.url}/plants`, {
    method: 'POST', headers: { authorization: 'Bearer two', 'content-type': 'application/json' }, body: '{"id":1,"name":"Fern"}'
  }, 'createPlant')
  t.equal(created.status, 200)
  t.notMatch(server.stdout(), /incoming request/, 'LOG_LEVEL=warn leaves out the request lines')

  const ui = await fetch(`${server.url}/docs`)
  t.equal(ui.status, 200)
  t.match(await ui.text(), /swagger-ui/i)
  const json = await (await fetch(`${server.url}/docs/json`)).json()
  t.match(json, { openapi: '3.1.0', info: { title: 'OpenAPI Plant Store' }, servers: [{ url: '/' }] })
  t.equal(await server.stop('SIGINT'), 0, 'SIGINT exits 0')
})

t.test('the body limit comes from BODY_LIMIT', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: 'tok', BODY_LIMIT: '64' })
  const res = await call(t, `${server.url}/plants`, {
    method: 'POST', headers: { authorization: 'Bearer tok', 'content-type': 'application/json' }, body: JSON.stringify({ id: 1, name: 'x'.repeat(100) })
  }, 'createPlant')
  t.equal(res.status, 413)
})

t.test('a bad configuration stops the server with one line that names the variable', async (t) => {
  for (const [env, variable] of [[{ PORT: 'abc' }, 'PORT'], [{ DATABASE_URL: 'mongodb://x' }, 'DATABASE_URL'],
    [{ LOG_LEVEL: 'chatty' }, 'LOG_LEVEL'], [{ BODY_LIMIT: '-5' }, 'BODY_LIMIT'], [{ PLANT_STORE_TOKENS: ',' }, 'PLANT_STORE_TOKENS']] as const) {
    const proc = run(t, env)
    t.equal(await proc.exited, 1, `${variable}: exit code 1`)
    const lines = proc.stderr().trim().split('\n')
    t.equal(lines.length, 1, `${variable}: one line`)
    t.match(lines[0], new RegExp(`^plant-store: configuration error: ${variable} `), `${variable}: named`)
    t.notMatch(proc.stderr(), /\n\s+at /, `${variable}: no stack trace`)
  }
})

t.test('start-up errors say what to change, with the value given', async (t) => {
  const dir = t.testdir()
  const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{ PORT: 'abc' }, /^plant-store: configuration error: PORT must be integer \(got "abc"\)\n$/],
    [{ DATABASE_URL: `file:${dir}/` }, /^plant-store: configuration error: DATABASE_URL file:.*\/ names a directory: name a file in it, such as file:.*\/plants\.db\n$/],
    [{ DATABASE_URL: `file:${dir}` }, /^plant-store: cannot start: DATABASE_URL: The database path .* is a directory/],
    // A server that refuses the login is not "unavailable for now": retrying cannot help.
    [{ DATABASE_URL: 'postgres://nobody:secret@127.0.0.1:5432/no_such_db' }, /^plant-store: cannot start: DATABASE_URL: Cannot open the database postgres:\/\/nobody:\*\*\*@127\.0\.0\.1:5432\/no_such_db: .+\n$/]
  ]
  for (const [env, message] of cases) {
    const proc = run(t, { PLANT_STORE_TOKENS: 'tok', ...env })
    t.equal(await proc.exited, 1, JSON.stringify(env))
    t.match(proc.stderr(), message)
    t.notMatch(proc.stderr(), /secret|\n\s+at /, 'no password, no stack trace')
  }
})

t.test('PostgreSQL unreachable at start: it starts, names the database in the log, answers 503 until it can reach it', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: 'tok', DATABASE_URL: 'postgres://u:secret@127.0.0.1:1/x' })
  const res = await fetch(`${server.url}/plants`, { headers: { authorization: 'Bearer tok' } })
  t.equal(res.status, 503)
  await server.stop()
  t.match(server.stdout(), /"database":"postgres:\/\/u:\*\*\*@127\.0\.0\.1:1\/x".*cannot be reached yet/)
  t.notMatch(server.stdout(), /secret/)
})

t.test('the log says where the data file is, resolved from the working directory', async (t) => {
  const dir = t.testdir()
  const server = await start(t, { PLANT_STORE_TOKENS: 'tok', DATABASE_URL: 'file:./data/plants.db' }, { cwd: dir })
  await server.stop()
  t.match(server.stdout(), `"database":"${realpathSync(dir)}/data/plants.db"`)
})

t.test('a generated token is kept beside the SQLite file, for its owner only, and survives a restart', async (t) => {
  const dir = t.testdir()
  const env = { DATABASE_URL: `file:${dir}/plants.db` }
  const first = await start(t, env)
  const token = /\n\n {4}(\S+)\n\n/.exec(first.stderr())?.[1]
  t.match(first.stderr(), `generated a token and kept it in ${dir}/plants.db.token`)
  await first.stop()
  t.equal(readFileSync(`${dir}/plants.db.token`, 'utf8'), `${token}\n`)
  t.equal(statSync(`${dir}/plants.db.token`).mode & 0o777, 0o600, 'readable by its owner only')

  const second = await start(t, env)
  t.match(second.stderr(), `accepting the generated token kept in ${dir}/plants.db.token\n\n    ${token}\n`)
  const res = await fetch(`${second.url}/plants`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(res.status, 200, 'the same token works after the restart')
  await second.stop()
  t.notOk(second.stdout().includes(token!), 'the token is not in the log')

  chmodSync(`${dir}/plants.db.token`, 0o644)
  const third = await start(t, env)
  t.match(third.stderr(), /WARNING: others than its owner may read that file/)
  await third.stop()

  writeFileSync(`${dir}/plants.db.token`, 'not a token\n')
  const broken = run(t, env)
  t.equal(await broken.exited, 1)
  t.match(broken.stderr(), /^plant-store: configuration error: .*plants\.db\.token does not hold a token: delete it to have a new one made, or set PLANT_STORE_TOKENS\n$/)
})

t.test('a port in use stops the server with one line', async (t) => {
  const first = await start(t, { PLANT_STORE_TOKENS: 'tok' })
  const port = new URL(first.url).port
  t.match(first.stdout(), `Server listening at ${first.url}`)
  const second = run(t, { PLANT_STORE_TOKENS: 'tok', PORT: port })
  t.equal(await second.exited, 1)
  t.match(second.stderr(), new RegExp(`^plant-store: cannot listen on 127.0.0.1:${port}: .*EADDRINUSE.*\\n$`))
})

t.test('request ids: the client\'s when plain, a new one otherwise; one log line per request', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: 'tok' })
  const mine = await fetch(`${server.url}/plants`, { headers: { authorization: 'Bearer tok', 'x-request-id': 'client-id.42' } })
  t.equal(mine.headers.get('x-request-id'), 'client-id.42')
  for (const bad of ['has spaces', 'x'.repeat(200), '<script>']) {
    const res = await fetch(`${server.url}/plants`, { headers: { authorization: 'Bearer tok', 'x-request-id': bad } })
    t.match(res.headers.get('x-request-id'), /^[0-9a-f]{16}-[0-9a-z]+$/, `${bad.slice(0, 12)}… is replaced`)
  }
  const made = await Promise.all(Array.from({ length: 3 }, () => fetch(`${server.url}/plants`, { headers: { authorization: 'Bearer tok' } })))
  t.equal(new Set(made.map((res) => res.headers.get('x-request-id'))).size, 3, 'made ids differ')
  // A client's id that looks like one this process makes is replaced.
  const own = made[0]!.headers.get('x-request-id')!
  const copied = await fetch(`${server.url}/plants`, { headers: { authorization: 'Bearer tok', 'x-request-id': own } })
  t.not(copied.headers.get('x-request-id'), own)
  await server.stop()
  const lines = server.stdout().trim().split('\n').map((line) => JSON.parse(line))
  // (Leaving out start()'s readiness polls of /docs/json.)
  const requests = lines.filter((line) => line.msg === 'request' && line.url === '/plants')
  t.equal(requests.length, 8, 'one line per request')
  t.match(requests[0], { reqId: 'client-id.42', method: 'GET', route: '/plants', url: '/plants', status: 200, durationMs: Number })
  t.notOk(server.stdout().includes('Bearer tok'), 'the authorization header is not logged')
})

t.test('a request\'s logger is made only when it writes a line at a kept level', async (t) => {
  const hook = fileURLToPath(new URL('./count-child-loggers.ts', import.meta.url))
  const headers = { authorization: 'Bearer tok', 'content-type': 'application/json' }
  for (const level of ['warn', 'info']) {
    const server = await start(t, { PLANT_STORE_TOKENS: 'tok', LOG_LEVEL: level, NODE_OPTIONS: `--import=${hook}` })
    const childLoggers = () => server.stdout().split('\n').filter((line) => line === 'child logger made').length
    const before = childLoggers()
    for (let id = 1; id <= 20; id++) {
      const res = await fetch(`${server.url}/plants`, { method: 'POST', headers, body: `{"id":${id},"name":"Fern"}` })
      t.equal(res.status, 200)
    }
    // (At info the request line, and its logger, come once the answer is sent.)
    const deadline = Date.now() + 2000
    while (childLoggers() - before < 20 && Date.now() < deadline) await sleep(20)
    const made = childLoggers() - before
    // At warn no request writes a line: none is made. At info each writes
    // its request line (the control: the count sees them).
    if (level === 'warn') t.equal(made, 0, 'warn: no child logger for 20 requests')
    else t.ok(made >= 20, `info: ${made} child loggers for 20 requests`)
    await server.stop()
  }
})

t.test('LOG_FORMAT=pretty writes for people', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: 'tok', LOG_FORMAT: 'pretty' })
  await fetch(`${server.url}/healthz`)
  await server.stop()
  t.match(server.stdout(), /INFO.*Server listening at/)
  t.throws(() => JSON.parse(server.stdout().split('\n')[0]!), 'not JSON lines')
})

t.test('--help lists every variable of the configuration', async (t) => {
  const { ENV_SCHEMA } = await import('../lib/config.ts')
  const proc = run(t, {}, { args: ['--help'] })
  t.equal(await proc.exited, 0)
  t.match(proc.stdout(), /^Usage: plant-store/)
  for (const name of Object.keys(ENV_SCHEMA.properties)) t.match(proc.stdout(), new RegExp(`^  ${name} `, 'm'), name)
  t.match(proc.stdout(), /PORT +TCP port to listen on \(default: 3000\)/)
})

t.test('an unknown argument stops the server with a pointer to --help', async (t) => {
  const proc = run(t, {}, { args: ['--port=80'] })
  t.equal(await proc.exited, 1)
  t.equal(proc.stderr(), 'plant-store: unknown argument --port=80: the server is configured through environment variables (see --help)\n')
})

t.test('SIGTERM while a client is still sending its body: a clean exit, not a timeout', async (t) => {
  const { connect } = await import('node:net')
  const server = await start(t, { PLANT_STORE_TOKENS: 'tok', SHUTDOWN_TIMEOUT: '4000' })
  const socket = connect(Number(new URL(server.url).port), '127.0.0.1')
  socket.on('error', () => {})
  socket.write('POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer tok\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{')
  const drip = setInterval(() => socket.write(' '), 300)
  t.teardown(() => { clearInterval(drip); socket.destroy() })
  await new Promise((resolve) => setTimeout(resolve, 500))
  t.equal(await server.stop('SIGTERM'), 0, 'exit 0 within the shutdown timeout')
})

// The bin as `npm start` and an installed `plant-store` run it: executed,
// its shebang line choosing Node's flags. What the bin's Node sees, printed
// before the server starts.
async function launched (env: NodeJS.ProcessEnv = {}) {
  // (V8's platform threads, seen in /proc on Linux: V8Worker on Node 24,
  // node-V8Worker on 26.)
  const show = "const fs=process.getBuiltinModule('node:fs');const v8Workers=process.platform==='linux'?fs.readdirSync('/proc/self/task').filter((id)=>fs.readFileSync('/proc/self/task/'+id+'/comm','utf8').trim().endsWith('V8Worker')).length:undefined;" +
    'console.log(JSON.stringify({argv:process.execArgv,tunables:process.env.GLIBC_TUNABLES,v8Workers}));process.exit(0)'
  const { stdout } = await promisify(execFile)(SERVER, [], {
    env: { PATH, ...env, NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(show)}` }
  })
  return JSON.parse(stdout) as { argv: string[], tunables?: string, v8Workers?: number }
}

// What the bin tells V8 once it listens, seen by a wrapper put around
// v8.setFlagsFromString before the bin loads.
const FLAG_WATCH = [
  "import v8 from 'node:v8'",
  "import { syncBuiltinESMExports } from 'node:module'",
  'const set = v8.setFlagsFromString',
  'v8.setFlagsFromString = (flags) => {',
  "  process.stderr.write('v8 flags ' + JSON.stringify({ flags, listening: process.getActiveResourcesInfo().includes('TCPServerWrap') }) + '\\n')",
  '  set(flags)',
  '}',
  'syncBuiltinESMExports()'
].join('\n')

t.test('the bin, once listening (not before: start-up would pay), has V8 free finished Maglev compiles on the main thread', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: 'tok', LOG_LEVEL: 'warn', NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(FLAG_WATCH)}` })
  for (let i = 0; i < 100 && !server.stderr().includes('v8 flags '); i++) await new Promise((resolve) => setTimeout(resolve, 50))
  const told = server.stderr().split('\n').filter((line) => line.startsWith('v8 flags ')).map((line) => JSON.parse(line.slice('v8 flags '.length)))
  t.same(told, [{ flags: '--no-maglev-destroy-on-background', listening: true }], 'one flag, set while listening')
  t.equal(await server.stop('SIGTERM'), 0)
})

t.test('the bin, executed: Node with a small young generation, one V8 helper thread, and malloc as the caller set it', async (t) => {
  const { argv, tunables, v8Workers } = await launched()
  t.ok(argv.includes('--max-semi-space-size=4'), 'the shebang\'s flag')
  // (Node's default is four, whatever the cores: README, Memory.)
  if (process.platform === 'linux') t.equal(v8Workers, 1, 'one V8 platform thread')
  // (A fixed mmap threshold makes every answer over it a fresh mapping: README, Memory.)
  t.equal(tunables, undefined, 'no malloc setting of its own')
  t.equal((await launched({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=2' })).tunables, 'glibc.malloc.arena_max=2', 'a caller\'s reaches Node unchanged')
  const server = await start(t, { PLANT_STORE_TOKENS: 'tok', LOG_LEVEL: 'warn' })
  const created = await call(t, `${server.url}/plants`, {
    method: 'POST', headers: { authorization: 'Bearer tok', 'content-type': 'application/json' }, body: '{"id":1,"name":"Fern"}'
  }, 'createPlant')
  t.equal(created.status, 200, 'and the bin so started serves')
  t.equal(await server.stop('SIGTERM'), 0)
})
