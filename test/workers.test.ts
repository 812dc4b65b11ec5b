// WORKERS=N: a primary and N workers sharing the port, on SQLite and on
// PostgreSQL, as real process trees: every worker serves, one scrape sees
// them all, a dead worker is replaced, a stop (to the primary, or to the
// whole group, twice) drains them all with nothing acknowledged lost, and
// instances plus workers share one failure limit through Redis.
import { randomInt } from 'node:crypto'
import { connect } from 'node:net'
import { join } from 'node:path'
import { setTimeout } from 'node:timers/promises'
import t from 'tap'
import type { Test } from 'tap'
import { metricSample } from '../bench/metric-sample.ts'
import { until } from './helper.ts'
import { POSTGRES_SKIP, freshSchemaUrl } from './postgres.ts'
import { alive, children } from './processes.ts'
import { run, start } from './server-process.ts'
import type { Running } from './server-process.ts'

const TOKEN = 'worker-token'
const AUTH = { authorization: `Bearer ${TOKEN}` }

async function metric (server: Running, series: string): Promise<number | undefined> {
  const text = await fetch(`${server.url}/metrics`, { headers: AUTH }).then((res) => res.text(), () => '')
  return metricSample(text, series)
}

/** Started, with every one of its `workers` workers ready. */
async function startWorkers (t: Test, env: NodeJS.ProcessEnv, workers = 2): Promise<Running> {
  const server = await start(t, { PLANT_STORE_TOKENS: TOKEN, WORKERS: String(workers), LOG_LEVEL: 'info', ...env })
  await until(async () => await metric(server, 'plant_store_ready') === workers, `${workers} workers ready`, 30_000)
  return server
}

async function create (server: Running, id: number, signal?: AbortSignal): Promise<number> {
  const res = await fetch(`${server.url}/plants`, { method: 'POST', headers: { ...AUTH, 'content-type': 'application/json' }, body: `{"id":${id},"name":"p${id}"}`, signal })
  await res.arrayBuffer()
  return res.status
}

/** Creates ids `from`..`to` over `connections` concurrent clients; the statuses by id. */
async function createMany (server: Running, from: number, to: number, connections: number): Promise<Map<number, number>> {
  const statuses = new Map<number, number>()
  let next = from
  await Promise.all(Array.from({ length: connections }, async () => {
    while (next <= to) {
      const id = next++
      const status = await create(server, id).catch(() => 0)
      statuses.set(id, status)
      // (Refused: the server is gone.)
      if (status === 0) return
    }
  }))
  return statuses
}

async function allIds (server: Running): Promise<number[]> {
  const ids: number[] = []
  let after: number | undefined
  for (;;) {
    const page = await fetch(`${server.url}/plants?limit=1000${after === undefined ? '' : `&after=${after}`}`, { headers: AUTH }).then((res) => res.json()) as Array<{ id: number }>
    ids.push(...page.map(({ id }) => id))
    if (page.length < 1000) return ids
    after = page.at(-1)!.id
  }
}

t.test('SQLite, 2 workers: both serve, 1000 creates over 64 connections all 200 (no SQLITE_BUSY 500), one scrape counts them all', async (t) => {
  const database = `file:${join(t.testdir(), 'plants.db')}`
  const server = await startWorkers(t, { DATABASE_URL: database })
  t.equal(children(server.pid).length, 2, 'two worker processes')
  const statuses = await createMany(server, 1, 1000, 64)
  t.same([...new Set(statuses.values())], [200], 'every create 200')
  // (Each worker logs the requests it answered, with its pid.)
  const servedBy = new Set(server.stdout().split('\n').filter((line) => line.includes('"msg":"request"') && line.includes('"method":"POST"')).map((line) => JSON.parse(line).pid))
  t.equal(servedBy.size, 2, 'both workers took creates')
  t.equal((await allIds(server)).length, 1000, 'every one readable')
  // Whichever worker answers the scrape, it counts both workers' requests.
  for (let i = 0; i < 3; i++) {
    t.equal(await metric(server, 'plant_store_http_requests_total{operation="createPlant",method="POST",status="200"}'), 1000, `scrape ${i + 1}: the whole tree`)
  }
  const commits = await metric(server, 'plant_store_sqlite_commits_total')
  t.ok(commits! >= 2, `${commits} commits from two writers`)
})

t.test('a worker that dies is replaced; the others keep serving', async (t) => {
  const server = await startWorkers(t, { DATABASE_URL: `file:${join(t.testdir(), 'plants.db')}` })
  const [victim, survivor] = children(server.pid)
  process.kill(victim!, 'SIGKILL')
  // (A kept-alive connection to the dead worker fails once, as it would for
  // any client; and until the primary has seen the worker exit, it may still
  // hand it new connections, which fail or are never answered — Node's
  // round-robin hand-off — so each try is bounded and a failed one is
  // retried a moment later, as a client's would be, and said.)
  let status = 0
  for (let attempt = 1; attempt <= 10 && status !== 200; attempt++) {
    status = await create(server, 1, AbortSignal.timeout(5_000)).catch(async (err: Error) => {
      t.comment(`attempt ${attempt}: ${err.name} ${err.message}`)
      await setTimeout(200)
      return 0
    })
  }
  t.equal(status, 200, 'served meanwhile')
  await until(() => children(server.pid).length === 2 && !children(server.pid).includes(victim!), 'a new worker', 30_000)
  t.ok(children(server.pid).includes(survivor!), 'the other was left alone')
  await until(async () => await metric(server, 'plant_store_ready') === 2, 'both ready again', 30_000)
  t.match(server.stdout(), /"msg":"a worker died: starting another"/)
})

t.test('SIGKILL to the primary: its workers do not outlive it', async (t) => {
  const server = await startWorkers(t, { DATABASE_URL: `file:${join(t.testdir(), 'plants.db')}` })
  const workers = children(server.pid)
  t.equal(workers.length, 2)
  process.kill(server.pid, 'SIGKILL')
  await server.exited
  // (The primary cannot tell them: each sees its channel close.)
  await until(() => !workers.some(alive), 'both workers gone', 10_000)
  t.same(workers.filter(alive), [], 'no worker left')
})

t.test('a worker that hangs is left out of scrapes, which still answer, and say so', async (t) => {
  const server = await startWorkers(t, { DATABASE_URL: `file:${join(t.testdir(), 'plants.db')}`, METRICS_PUBLIC: 'true' })
  const [stuck] = children(server.pid)
  process.kill(stuck!, 'SIGSTOP')
  t.teardown(() => { try { process.kill(stuck!, 'SIGCONT') } catch {} })
  // Scrapes at once, over fresh connections (a kept one may be the stuck worker's).
  const scrapes = await Promise.all(Array.from({ length: 5 }, async () => {
    const started = Date.now()
    const res = await fetch(`${server.url}/metrics`, { headers: { connection: 'close' }, signal: AbortSignal.timeout(15_000) }).catch(() => undefined)
    return { status: res?.status, text: await res?.text(), ms: Date.now() - started }
  }))
  const answered = scrapes.filter(({ status }) => status === 200)
  t.ok(answered.length >= 1, `${answered.length} of 5 answered (a connection may have gone to the stuck worker)`)
  for (const { text, ms } of answered) {
    t.match(text, /^plant_store_workers_unanswered 1$/m, `the stuck worker is left out, in ${ms} ms`)
    t.ok(ms < 10_000)
  }
  process.kill(stuck!, 'SIGCONT')
  await until(async () => await metric(server, 'plant_store_workers_unanswered') === 0, 'both answer again', 30_000)
})

t.test('SIGTERM to the primary alone, mid-load: every worker drains, exit 0, every acknowledged create kept', async (t) => {
  const database = `file:${join(t.testdir(), 'plants.db')}`
  const server = await startWorkers(t, { DATABASE_URL: database })
  const load = createMany(server, 1, 100_000, 16)
  await setTimeout(500)
  server.stop('SIGTERM')
  const statuses = await load
  t.equal(await server.exited, 0, 'exit 0')
  t.same(children(server.pid), [], 'no worker left')
  const acknowledged = [...statuses].filter(([, status]) => status === 200).map(([id]) => id)
  t.ok(acknowledged.length > 0, `${acknowledged.length} creates acknowledged before the stop`)
  const answered = [...new Set(statuses.values())].filter((status) => status !== 200 && status !== 0)
  t.same(answered.filter((status) => status !== 503), [], 'refused ones were 503s, no 500')
  const again = await start(t, { PLANT_STORE_TOKENS: TOKEN, DATABASE_URL: database })
  const kept = new Set(await allIds(again))
  t.same(acknowledged.filter((id) => !kept.has(id)), [], 'none lost')
})

t.test('SIGTERM to the whole process group, twice: one clean stop, exit 0', async (t) => {
  const server = await startWorkers(t, { DATABASE_URL: `file:${join(t.testdir(), 'plants.db')}` })
  // A request whose body has not all come holds its worker's drain open,
  // so that the second signal finds the group still stopping. (Without
  // it, the stop could end before the second signal was sent.)
  const { hostname, port } = new URL(server.url)
  const held = connect(Number(port), hostname)
  held.on('error', () => {})
  held.write(`POST /plants HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: ${AUTH.authorization}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"id":1,`)
  await setTimeout(200)
  process.kill(-server.pid, 'SIGTERM')
  await until(() => /"msg":"stopping the workers"/.test(server.stdout()), 'the first signal is taken')
  process.kill(-server.pid, 'SIGTERM')
  held.destroy()
  t.equal(await server.exited, 0)
  const log = server.stdout()
  t.equal(log.match(/"msg":"stopping the workers"/g)?.length, 1, 'the primary stops them once')
  t.equal(log.match(/"msg":"shutting down"/g)?.length, 2, 'each worker shuts down once')
  t.notMatch(server.stderr(), /second SIGTERM/)
})

t.test('a single server: a second SIGTERM is the same stop, exit 0', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: TOKEN, LOG_LEVEL: 'info' })
  process.kill(server.pid, 'SIGTERM')
  process.kill(server.pid, 'SIGTERM')
  t.equal(await server.exited, 0)
  t.equal(server.stdout().match(/"msg":"shutting down"/g)?.length, 1)
})

t.test('a worker that cannot start stops the primary: exit 1, no restart loop', async (t) => {
  // (A directory where the database file should be: every worker refuses it.)
  const proc = run(t, { PLANT_STORE_TOKENS: TOKEN, WORKERS: '2', DATABASE_URL: `file:${t.testdir()}`, LOG_LEVEL: 'info' })
  t.equal(await proc.exited, 1)
  t.match(proc.stderr(), /cannot start: DATABASE_URL: .*directory/)
  t.ok((proc.stdout().match(/"msg":"starting the workers"/g)?.length ?? 0) === 1, 'started once')
  t.notMatch(proc.stdout(), /starting another/)
})

t.test('PostgreSQL and Redis: an instance of 2 workers and one of 1 act as one', { skip: POSTGRES_SKIP }, async (t) => {
  const database = await freshSchemaUrl(t)
  const env = { DATABASE_URL: database, REDIS_URL: 'redis://127.0.0.1:6379', TRUST_PROXY: '127.0.0.1', AUTH_FAILURE_LIMIT: '100' }
  const [many, one] = await Promise.all([startWorkers(t, env, 2), startWorkers(t, env, 1)])
  // Creates through either are read through the other.
  const made = await Promise.all([createMany(many, 1, 200, 16), createMany(one, 201, 400, 16)])
  t.same(made.flatMap((statuses) => [...new Set(statuses.values())]), [200, 200])
  t.equal((await allIds(one)).length, 400)
  t.equal((await allIds(many)).length, 400)

  // 300 bad tokens from one client, spread over three processes in two instances.
  const client = `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`
  const statuses = await Promise.all(Array.from({ length: 300 }, async (_, i) => {
    const res = await fetch(`${(i % 3 === 0 ? one : many).url}/plants`, { headers: { authorization: 'Bearer wrong', 'x-forwarded-for': client } })
    await res.arrayBuffer()
    return res.status
  }))
  t.equal(statuses.filter((status) => status === 401).length, 100, '100 refused 401 in total')
  t.equal(statuses.filter((status) => status === 429).length, 200, 'the other 200 throttled')
})
