// Durability and scale-out with real server processes: restarts, crashes,
// two instances on one PostgreSQL, and a database outage.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout } from 'node:timers/promises'
import t from 'tap'
import { NO_MOUNT, smallDisk } from './sqlite-files.ts'
import type { Test } from 'tap'
import { SqliteStore } from '../lib/stores/sqlite-store.ts'
import { AUTH, build } from './helper.ts'
import { POSTGRES_SKIP, freshSchemaUrl } from './postgres.ts'
import { call, start } from './server-process.ts'
import { tcpProxy } from './tcp-proxy.ts'

const TOKEN = 'persist-token'
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
const env = (DATABASE_URL: string) => ({ DATABASE_URL, PLANT_STORE_TOKENS: TOKEN, LOG_LEVEL: 'warn' })

const create = (t: Test, url: string, body: string) => call(t, `${url}/plants`, { method: 'POST', headers, body }, 'createPlant')
const read = (t: Test, url: string, id: string) => call(t, `${url}/plants/${id}`, { headers }, 'getPlant')

t.test('npm start keeps plants in ./data/plants.db by default', async (t) => {
  const dir = t.testdir()
  const server = await start(t, { ...env(''), DATABASE_URL: '' }, { cwd: dir })
  t.equal((await create(t, server.url, '{"id":1,"name":"Fern"}')).status, 200)
  t.ok(existsSync(join(dir, 'data', 'plants.db')), 'the file and its directory were created')
  await server.stop()
})

t.test('restart: what was created is read back', async (t) => {
  const db = `file:${join(t.testdir(), 'plants.db')}`
  const first = await start(t, env(db))
  const ids = ['-9223372036854775808', '9007199254740993', '9223372036854775807']
  for (const id of ids) t.equal((await create(t, first.url, `{"id":${id},"name":"p${id}","tag":"t"}`)).status, 200)
  t.equal(await first.stop('SIGTERM'), 0)

  const second = await start(t, env(db))
  for (const id of ids) {
    const res = await read(t, second.url, id)
    t.equal(res.status, 200)
    t.match(res.body, new RegExp(`"id":${id}[,}]`), `${id} survived the restart exactly`)
  }
  t.equal((await create(t, second.url, `{"id":${ids[1]},"name":"other"}`)).status, 409, 'and still guards its id')
})

// 16 clients creating as fast as they can until the server goes away. It
// returns the ids answered 200 and how often each status came back.
function createUntilGone (url: string) {
  const acknowledged: string[] = []
  const statuses = new Map<number, number>()
  const state = { running: true }
  const clients = Array.from({ length: 16 }, async (_, client) => {
    for (let i = 0; state.running; i++) {
      const id = String(client * 1_000_000 + i)
      try {
        const res = await fetch(`${url}/plants`, { method: 'POST', headers, body: `{"id":${id},"name":"p${id}"}` })
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
        if (res.status === 200) acknowledged.push(id)
        await res.arrayBuffer()
      } catch {
        return // the server is gone, or no longer accepts connections
      }
    }
  })
  return {
    acknowledged,
    statuses,
    stop: async () => {
      state.running = false
      await Promise.all(clients)
    }
  }
}

// The ids of `acknowledged` that a server at `url` does not have as created.
async function missingAt (url: string, acknowledged: string[]): Promise<string[]> {
  const missing = []
  for (const id of acknowledged) {
    const res = await fetch(`${url}/plants/${id}`, { headers })
    if (res.status !== 200 || (await res.json() as { name: string }).name !== `p${id}`) missing.push(id)
  }
  return missing
}

t.test('crash: every create answered 200 before SIGKILL is there after restart', async (t) => {
  const db = `file:${join(t.testdir(), 'plants.db')}`
  const server = await start(t, env(db))
  const load = createUntilGone(server.url)
  await setTimeout(1000)
  t.equal(await server.stop('SIGKILL'), null, 'killed by SIGKILL')
  await load.stop()
  t.ok(load.acknowledged.length > 50, `${load.acknowledged.length} creates were acknowledged before the kill`)

  const after = await start(t, env(db))
  t.same(await missingAt(after.url, load.acknowledged), [], 'none of the acknowledged plants is missing')
})

t.test('SIGTERM under load: no 5xx, exit 0, every acknowledged create kept', async (t) => {
  const db = `file:${join(t.testdir(), 'plants.db')}`
  const server = await start(t, env(db))
  const load = createUntilGone(server.url)
  await setTimeout(700)
  t.equal(await server.stop('SIGTERM'), 0, 'exit code 0')
  await load.stop()
  t.same([...load.statuses.keys()].filter((status) => status >= 500), [], 'no 5xx during the drain')
  t.ok(load.acknowledged.length > 50, `${load.acknowledged.length} creates acknowledged`)

  const after = await start(t, env(db))
  t.same(await missingAt(after.url, load.acknowledged), [], 'every acknowledged plant is there after the restart')
})

t.test('a full disk answers 503 with Retry-After, and nothing acknowledged is lost', { skip: NO_MOUNT }, async (t) => {
  const store = await SqliteStore.open(join(smallDisk(t, 96 * 1024), 'plants.db'))
  t.teardown(() => store.close())
  const app = await build(t, { database: store })
  let res
  let id = 0
  do {
    res = await app.inject({ method: 'POST', url: '/plants', headers: AUTH, payload: { id: ++id, name: 'x'.repeat(256), tag: 't'.repeat(64) } })
  } while (res.statusCode === 200 && id < 1000)
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '2')
  t.match(res.json(), { error: 503, message: /database is unavailable \(full\)/ })
  t.equal((await app.inject({ url: '/plants?limit=1000', headers: AUTH })).json().length, id - 1)
})

t.test('PostgreSQL', { skip: POSTGRES_SKIP }, async (t) => {
  t.test('two instances on one database see each other\'s writes; a race has one winner', async (t) => {
    const db = await freshSchemaUrl(t)
    const [a, b] = await Promise.all([start(t, env(db)), start(t, env(db))])
    t.equal((await create(t, a.url, '{"id":9007199254740993,"name":"Fern"}')).status, 200)
    t.equal((await read(t, b.url, '9007199254740993')).status, 200, 'written on A, read on B')
    t.equal((await create(t, b.url, '{"id":9007199254740993,"name":"Fern"}')).status, 200, 'an identical replay on B')
    t.equal((await call(t, `${b.url}/plants/9007199254740993`, { method: 'DELETE', headers })).status, 204, 'deleted on B')
    t.equal((await read(t, a.url, '9007199254740993')).status, 404, 'gone on A')

    for (let id = 1; id <= 10; id++) {
      const answers = await Promise.all([
        create(t, a.url, `{"id":${id},"name":"from A"}`),
        create(t, b.url, `{"id":${id},"name":"from B"}`)
      ])
      t.same(answers.map((answer) => answer.status).toSorted(), [200, 409], `id ${id}: one 200, one 409`)
      const winner = answers[0]!.status === 200 ? 'from A' : 'from B'
      t.equal((await read(t, a.url, String(id))).json().name, winner, 'the stored plant is the winner\'s')
    }
  })

  t.test('an outage answers 503 with Retry-After; the service recovers by itself', async (t) => {
    const db = new URL(await freshSchemaUrl(t))
    const proxy = await tcpProxy(db.hostname, Number(db.port || 5432))
    t.teardown(() => proxy.close())
    db.hostname = '127.0.0.1'
    db.port = String(proxy.port)
    const server = await start(t, env(db.toString()))
    t.equal((await create(t, server.url, '{"id":1,"name":"before"}')).status, 200)

    await proxy.cut()
    const refused = await create(t, server.url, '{"id":2,"name":"during"}')
    t.equal(refused.status, 503)
    t.equal(refused.headers.get('retry-after'), '2')
    t.match(refused.json().message, /database is unavailable/)
    t.equal((await read(t, server.url, '1')).status, 503, 'reads too')
    const notReady = await call(t, `${server.url}/readyz`, {}, 'getReadiness')
    t.equal(notReady.status, 503, '/readyz says so')
    t.equal((await call(t, `${server.url}/healthz`, {}, 'getHealth')).status, 200, 'the process itself is alive')

    await proxy.restore()
    let status = 0
    for (let tries = 0; tries < 100 && status !== 200; tries++) {
      status = (await create(t, server.url, '{"id":3,"name":"after"}')).status
      if (status !== 200) await setTimeout(100)
    }
    t.equal(status, 200, 'writes work again without a restart')
    t.equal((await call(t, `${server.url}/readyz`, {}, 'getReadiness')).status, 200, 'and /readyz is 200 again')
    t.equal((await read(t, server.url, '1')).json().name, 'before', 'nothing acknowledged was lost')
    t.equal((await read(t, server.url, '2')).status, 404, 'the refused create left nothing behind')
  })
})
