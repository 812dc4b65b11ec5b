// The database misbehaving under a running server: its file removed,
// read-only at start-up, a PostgreSQL outage in the middle of load. The
// server answers 503 (never a 200 for a write it would lose), and recovers
// by itself once the fault is fixed, where it can be fixed.
import { execFileSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout } from 'node:timers/promises'
import t from 'tap'
import type { Test } from 'tap'
import { POSTGRES_SKIP, freshSchemaUrl } from './postgres.ts'
import { call, start } from './server-process.ts'
import { tcpProxy } from './tcp-proxy.ts'

const TOKEN = 'fault-token'
const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }
const env = (DATABASE_URL: string) => ({ DATABASE_URL, PLANT_STORE_TOKENS: TOKEN, LOG_LEVEL: 'warn' })
const create = (t: Test, url: string, body: string) => call(t, `${url}/plants`, { method: 'POST', headers, body }, 'createPlant')
const ready = (t: Test, url: string) => call(t, `${url}/readyz`, {}, 'getReadiness')

async function until<T> (attempt: () => Promise<T>, done: (value: T) => boolean, tries = 100): Promise<T> {
  let value = await attempt()
  for (let i = 0; i < tries && !done(value); i++) {
    await setTimeout(100)
    value = await attempt()
  }
  return value
}

t.test('SQLite: the database file removed under a running server: 503 and not ready, never a lost 200', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const server = await start(t, env(`file:${path}`))
  t.equal((await create(t, server.url, '{"id":1,"name":"before"}')).status, 200)
  for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true })
  const refused = await create(t, server.url, '{"id":2,"name":"after"}')
  t.equal(refused.status, 503)
  t.match(refused.json().message, /removed or replaced/)
  t.equal((await ready(t, server.url)).status, 503, '/readyz fails, so the orchestrator replaces it')
  t.equal(await server.stop(), 0)

  const restarted = await start(t, env(`file:${path}`))
  t.equal((await call(t, `${restarted.url}/plants/2`, { headers }, 'getPlant')).status, 404, 'the refused create was indeed not kept')
  t.equal((await create(t, restarted.url, '{"id":2,"name":"after"}')).status, 200, 'a restart opens the file now at the path')
})

// Read-only for everyone: permissions for a user, the immutable attribute
// (chattr +i, which binds root too) when the tests run as root.
const asRoot = process.getuid?.() === 0
function readOnly (path: string, on: boolean): void {
  if (asRoot) execFileSync('chattr', [on ? '+i' : '-i', path])
  else chmodSync(path, on ? 0o444 : 0o644)
}

t.test('SQLite: a database read-only at start-up: writes 503, then work once it is writable, without a restart', { skip: process.platform !== 'linux' && 'chattr and POSIX permissions' }, async (t) => {
  // A directory of its own: an immutable file left behind by a failure
  // would stop tap from removing its fixtures.
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-read-only-'))
  const path = join(dir, 'plants.db')
  t.teardown(() => {
    try { readOnly(path, false) } catch {}
    rmSync(dir, { recursive: true, force: true })
  })
  const first = await start(t, env(`file:${path}`))
  t.equal((await create(t, first.url, '{"id":1,"name":"seed"}')).status, 200)
  t.equal(await first.stop(), 0)
  readOnly(path, true)

  const server = await start(t, env(`file:${path}`))
  const refused = await create(t, server.url, '{"id":2,"name":"Fern"}')
  t.equal(refused.status, 503, 'a create cannot be kept: 503')
  t.match(refused.json().message, /unavailable \(read-only\)/)
  t.equal((await ready(t, server.url)).status, 503, 'not ready')
  t.equal((await call(t, `${server.url}/plants/1`, { headers }, 'getPlant')).json().name, 'seed', 'what is there is still read')

  readOnly(path, false)
  const created = await until(() => create(t, server.url, '{"id":2,"name":"Fern"}'), (res) => res.status === 200)
  t.equal(created.status, 200, 'writable again: the same process creates')
  t.equal((await until(() => ready(t, server.url), (res) => res.status === 200)).status, 200, 'and is ready')
  t.equal((await call(t, `${server.url}/plants/2`, { headers }, 'getPlant')).json().name, 'Fern', 'and reads what it created')
})

t.test('PostgreSQL: an outage under 16 writing clients: only 503s, and every acknowledged create is kept', { skip: POSTGRES_SKIP }, async (t) => {
  const db = new URL(await freshSchemaUrl(t))
  const proxy = await tcpProxy(db.hostname, Number(db.port || 5432))
  t.teardown(() => proxy.close())
  db.hostname = '127.0.0.1'
  db.port = String(proxy.port)
  const server = await start(t, env(db.toString()))

  const acknowledged: string[] = []
  const statuses = new Map<number, number>()
  const load = { running: true }
  const clients = Array.from({ length: 16 }, async (_, client) => {
    for (let i = 0; load.running; i++) {
      const id = String(client * 1_000_000 + i)
      const res = await fetch(`${server.url}/plants`, { method: 'POST', headers, body: `{"id":${id},"name":"p${id}"}` })
      await res.arrayBuffer()
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1)
      if (res.status === 200) acknowledged.push(id)
      else await setTimeout(20)
    }
  })
  await setTimeout(500)
  await proxy.cut()
  await setTimeout(1500)
  await proxy.restore()
  await setTimeout(2500)
  load.running = false
  await Promise.all(clients)

  t.comment(`statuses: ${JSON.stringify(Object.fromEntries(statuses))}`)
  t.ok((statuses.get(503) ?? 0) > 0, 'the outage was seen: 503s')
  t.same([...statuses.keys()].filter((status) => status !== 200 && status !== 503), [], 'nothing but 200 and 503')
  t.ok(acknowledged.length > 50, `${acknowledged.length} creates acknowledged`)
  const missing = []
  for (const id of acknowledged) {
    const res = await fetch(`${server.url}/plants/${id}`, { headers })
    if (res.status !== 200) missing.push(id)
    await res.arrayBuffer()
  }
  t.same(missing, [], 'every acknowledged create is there')
})
