import { once } from 'node:events'
import { renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { Worker } from 'node:worker_threads'
import t from 'tap'
import type { Test } from 'tap'
import { until } from './helper.ts'
import { threadsNamed } from './processes.ts'
import { NO_MOUNT, replaceWithEmpty, smallDisk, walCommits } from './sqlite-files.ts'
import { SQLITE_MIGRATIONS, WRITER_CACHE_KIB, configureSqlite } from '../lib/stores/sqlite-schema.ts'
import { SqliteStore } from '../lib/stores/sqlite-store.ts'
import { WRITER_THREAD_NAME, startWriterEarly } from '../lib/stores/sqlite-writer.ts'
import { storeSuite } from './store-suite.ts'

storeSuite(t, async (t) => SqliteStore.open(join(t.testdir(), 'plants.db')))

t.test('the file and its directory are created; plants survive a reopen', async (t) => {
  const path = join(t.testdir(), 'deep', 'er', 'plants.db')
  const first = await SqliteStore.open(path)
  await first.create({ id: 9007199254740993n, name: 'Fern', tag: 'green' })
  await first.close()
  const second = await SqliteStore.open(path)
  t.teardown(() => second.close())
  t.same(await second.get(9007199254740993n), { id: 9007199254740993n, name: 'Fern', tag: 'green' })
})

// An open that never ends fails, rather than the whole file timing out.
async function answered<T> (promise: Promise<T>, why: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const never = new Promise<never>((_resolve, reject) => { timer = setTimeout(() => reject(new Error(`no answer in 10 s: ${why}`)), 10_000) })
  try {
    return await Promise.race([promise, never])
  } finally {
    clearTimeout(timer)
  }
}

t.test('a writer thread started early brings the schema to date ahead of its store, which then takes it rather than starting another', async (t) => {
  const path = join(t.testdir(), 'new', 'plants.db')
  await until(() => threadsNamed(WRITER_THREAD_NAME) === 0, 'the writers of the tests before gone')
  const early = startWriterEarly(path)
  if (early === undefined) throw new Error('no writer started')
  // (Untaken, it would not keep this process up for the wait below.)
  early.ref()
  // (No store yet: the thread alone made the directory, the file and its
  // schema, and said it was ready, which the store can only learn from the
  // replay: the thread says it once.)
  const [message] = await once(early, 'message') as [{ type: string }]
  t.equal(message.type, 'ready')
  const db = new DatabaseSync(path, { readOnly: true })
  t.equal((db.prepare('SELECT count(*) AS n FROM plant_store_migrations').get() as { n: number }).n, SQLITE_MIGRATIONS.length, 'every migration applied')
  db.close()
  const store = await answered(SqliteStore.open(path), 'the early ready lost')
  t.teardown(() => store.close())
  t.equal(threadsNamed(WRITER_THREAD_NAME), 1, 'one writer: the early one, taken')
  t.equal(await store.create({ id: 1n, name: 'Fern' }), 'created')
  t.same(await store.get(1n), { id: 1n, name: 'Fern' })
  await store.close()
  await until(() => threadsNamed(WRITER_THREAD_NAME) === 0, 'the writer gone with its store')
})

t.test('what an early writer said before its store took it reaches the store: a file that is no database fails the open, as it does unstarted', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  writeFileSync(path, 'not a database, but long enough to be read as a header of one'.repeat(20))
  const early = startWriterEarly(path)
  if (early === undefined) throw new Error('no writer started')
  // (Untaken, it would not keep this process up for the wait below.)
  early.ref()
  // (It failed, said so and ended, all before the store listens.)
  await once(early, 'exit')
  await t.rejects(answered(SqliteStore.open(path), 'the early failure lost'), { message: /not a database/ })
})

t.test('durable settings: WAL, schema version recorded', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const store = await SqliteStore.open(path)
  t.teardown(() => store.close())
  const db = new DatabaseSync(path)
  t.teardown(() => db.close())
  t.same(db.prepare('PRAGMA journal_mode').get(), { journal_mode: 'wal' })
  t.same(db.prepare('SELECT version FROM plant_store_migrations').all().map((row) => ({ ...row })), [{ version: 1 }, { version: 2 }, { version: 3 }, { version: 4 }, { version: 5 }], 'the plants, the webhook outbox, its index of due deliveries, when each delivery was written, the trace it continues')
})

t.test('the writer\'s connection: durable, with a smaller page cache than the reader\'s, which keeps SQLite\'s default', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const defaults = new DatabaseSync(path)
  t.teardown(() => defaults.close())
  const sqliteDefault = (defaults.prepare('PRAGMA cache_size').get() as { cache_size: number }).cache_size
  const connection = (writer: boolean) => {
    const db = new DatabaseSync(path)
    t.teardown(() => db.close())
    configureSqlite(db, { writer })
    const get = (pragma: string) => Object.values(db.prepare(`PRAGMA ${pragma}`).get()!)[0]
    return { cache: get('cache_size'), synchronous: get('synchronous'), journal: get('journal_mode') }
  }
  const writer = connection(true)
  const reader = connection(false)
  t.same(writer, { cache: -WRITER_CACHE_KIB, synchronous: 2, journal: 'wal' }, 'WAL, FULL, a cache of WRITER_CACHE_KIB KiB')
  t.equal(reader.cache, sqliteDefault, 'the reader keeps the default')
  // (What the README says of this SQLite build; its default is negative
  // too, a size in KiB.)
  t.ok(sqliteDefault < 0 && WRITER_CACHE_KIB < -sqliteDefault, 'the writer\'s is smaller than SQLite\'s default')
})

t.test('concurrent creates share commits (group commit)', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const store = await SqliteStore.open(path)
  t.teardown(() => store.close())
  const before = walCommits(path)
  // (200 single-row commits stay under SQLite's checkpoint of 1000 pages,
  // so that the log would show each of them.)
  const outcomes = await Promise.all(Array.from({ length: 200 }, (_, i) => store.create({ id: BigInt(i), name: `p${i}` })))
  t.ok(outcomes.every((outcome) => outcome === 'created'), 'all 200 created')
  const commits = walCommits(path) - before
  t.ok(commits >= 1 && commits < 40, `200 creates took ${commits} commits`)
  t.equal((await store.list({ limit: 1000 })).length, 200)
})

t.test('reads of one turn share a read transaction, and each sees every write acknowledged before it', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const store = await SqliteStore.open(path)
  t.teardown(() => store.close())
  // Another process's store on the same file: its commits are seen through
  // the file alone.
  const other = await SqliteStore.open(path)
  t.teardown(() => other.close())
  for (let round = 1; round <= 5; round++) {
    const id = BigInt(round)
    t.equal(await other.create({ id, name: `p${round}` }), 'created')
    // (In one turn: one transaction for all of them.)
    const [found, missing, page, after] = await Promise.all([
      store.get(id),
      store.get(1000n + id),
      store.list({ limit: 100 }),
      store.list({ after: id - 1n, limit: 1 })
    ])
    t.same(found, { id, name: `p${round}` }, `round ${round}: the plant the other store just acknowledged`)
    t.equal(missing, undefined)
    t.same(page.map((plant) => plant.id), Array.from({ length: round }, (_, i) => BigInt(i + 1)), `round ${round}: every plant so far`)
    t.same(after, [{ id, name: `p${round}` }])
  }
  // A read that fails (an id SQLite cannot bind) fails alone: the others of
  // its turn still answer, and so do later turns.
  const reads = await Promise.allSettled([store.get(1n), store.get(2n ** 70n), store.get(2n), store.list({ limit: 2 })])
  t.same(reads.map((read) => read.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled'])
  t.same(reads[2], { status: 'fulfilled', value: { id: 2n, name: 'p2' } })
  t.same(await store.get(3n), { id: 3n, name: 'p3' })
})

t.test('creates and subscription changes of one transaction see each other in order', async (t) => {
  // The writer looks up whether anyone is subscribed once per transaction:
  // a subscription change in it must be seen by the creates after it.
  const path = join(t.testdir(), 'plants.db')
  const store = await SqliteStore.open(path)
  t.teardown(() => store.close())
  const webhooks = store.webhooks
  const sub = { id: `sub_${'1'.repeat(32)}`, url: 'http://127.0.0.1:9/', secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }
  const before = walCommits(path)
  // (Made in one turn of the event loop: one message to the writer, one transaction.)
  await Promise.all([
    store.create({ id: 1n, name: 'before' }),
    webhooks.subscribe(sub, 10),
    store.create({ id: 2n, name: 'after subscribing' }),
    webhooks.unsubscribe(sub.id),
    store.create({ id: 3n, name: 'after unsubscribing' }),
    webhooks.subscribe(sub, 10),
    store.create({ id: 4n, name: 'subscribed again' })
  ])
  t.equal(walCommits(path) - before, 1, 'one transaction')
  t.same((await webhooks.deliveries(sub.id, { limit: 100 }))!.map(({ plantId }) => plantId), [4n])
  const db = new DatabaseSync(path, { readOnly: true })
  t.teardown(() => db.close())
  t.same(db.prepare('SELECT count(*) AS n FROM webhook_deliveries').get(), { n: 1 }, 'none for the unsubscribed one either')
})

t.test('the outbox\'s bookkeeping alone commits without waiting for the disk; every other write waits for it', async (t) => {
  // Losing the last claims and attempt records to a power cut only makes a
  // delivery be attempted again; a create, delete, subscription change or
  // retry is on the disk before it is answered. (What the writer reports is
  // the connection's level as read back from SQLite.)
  const synced: boolean[] = []
  const store = await SqliteStore.open(join(t.testdir(), 'plants.db'), { observer: { commit: (_writes, _seconds, sync) => { synced.push(sync) } } })
  t.teardown(() => store.close())
  const webhooks = store.webhooks
  const sub = { id: `sub_${'1'.repeat(32)}`, url: 'http://127.0.0.1:9/', secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }
  const claim = () => {
    const now = Date.now() + 1
    return webhooks.claim({ now, limit: 10, perSubscription: 10, held: {}, leaseUntil: now + 60_000 })
  }
  const commits = async <T>(what: string, expected: boolean[], write: () => Promise<T>): Promise<T> => {
    synced.length = 0
    const result = await write()
    t.same(synced, expected, what)
    return result
  }
  await commits('a subscription: synced', [true], () => webhooks.subscribe(sub, 10))
  await commits('a create and its delivery: synced', [true], () => store.create({ id: 1n, name: 'p1' }))
  const [first] = await commits('a claim: not synced', [false], claim)
  await commits('a failed attempt\'s record: not synced', [false], () => webhooks.record([{ seq: first!.seq, delivered: false, error: 'refused', nextAttemptAt: Date.now() }]))
  const [again] = await commits('the next claim: not synced', [false], claim)
  await commits('a release: not synced', [false], () => webhooks.release([again!.seq]))
  const [third] = await claim()
  // (In one turn: one transaction, which a create makes synced.)
  await commits('a record beside a create: synced', [true], () => Promise.all([
    webhooks.record([{ seq: third!.seq, delivered: true, status: 204, at: Date.now() }]),
    store.create({ id: 2n, name: 'p2' })
  ]))
  await commits('a retry: synced', [true], () => webhooks.retry(sub.id, third!.seq, Date.now()))
  await commits('a delete: synced', [true], () => store.delete(2n))
  await commits('an unsubscription: synced', [true], () => webhooks.unsubscribe(sub.id))
  t.same(await store.get(1n), { id: 1n, name: 'p1' })
})

t.test('bookkeeping made while creates commit waits a moment for the next creates, and shares their commit', async (t) => {
  // Under load, clients answered by a commit send their next creates at
  // once: a claim that went alone meanwhile would take a commit of its own
  // ahead of them.
  const commits: Array<[writes: number, synced: boolean]> = []
  const store = await SqliteStore.open(join(t.testdir(), 'plants.db'), { observer: { commit: (writes, _seconds, synced) => { commits.push([writes, synced]) } } })
  t.teardown(() => store.close())
  // (A claim is a write only when a delivery is due: each create here
  // makes one.)
  await store.webhooks!.subscribe({ id: `sub_${'1'.repeat(32)}`, url: 'http://127.0.0.1:9/', secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 10)
  await store.create({ id: 0n, name: 'first' })
  const claim = () => {
    const now = Date.now() + 1
    return store.webhooks!.claim({ now, limit: 1, perSubscription: 1, held: {}, leaseUntil: now + 60_000 })
  }
  let id = 10n
  const whileCreating = async (next: () => Promise<unknown>) => {
    commits.length = 0
    const creating = store.create({ id: id++, name: 'p' })
    // (The create's batch goes to the writer at the end of this turn; the
    // claim, made while it commits, waits for its answer.)
    await new Promise(setImmediate)
    const claimed = claim()
    await creating
    const [claimedDeliveries] = await Promise.all([claimed, next()])
    t.equal(claimedDeliveries.length, 1, 'a delivery claimed')
  }
  await whileCreating(() => store.create({ id: 1n, name: 'next' }))
  t.same(commits, [[1, true], [2, true]], 'the claim went with the next create, in its synced commit')
  const started = performance.now()
  await whileCreating(async () => {})
  t.same(commits, [[1, true], [1, false]], 'with no create to come, the claim commits alone')
  t.ok(performance.now() - started < 1000, 'and soon')
  commits.length = 0
  t.equal((await claim()).length, 1)
  t.same(commits, [[1, false]], 'bookkeeping with no creates about goes at once')
})

t.test('creates that came while a batch committed wait for its clients\' next creates, and share their commit', async (t) => {
  // Sent at once, the few creates made while a batch commits took a commit
  // of their own, and the answered clients' next creates the one after:
  // under load, commits alternated between a few writes and many.
  const commits: number[] = []
  const store = await SqliteStore.open(join(t.testdir(), 'plants.db'), { observer: { commit: (writes) => { commits.push(writes) } } })
  t.teardown(() => store.close())
  await store.create({ id: 0n, name: 'first' })
  commits.length = 0
  // Eight clients, each sending its next create once answered.
  const clients = Array.from({ length: 8 }, (_, i) => store.create({ id: BigInt(10 + i), name: 'p' }).then(() => store.create({ id: BigInt(20 + i), name: 'next' })))
  // (The batch of eight goes to the writer at the end of this turn; this
  // create, made while it commits, waits for its answer.)
  await new Promise(setImmediate)
  const lone = store.create({ id: 99n, name: 'lone' })
  await Promise.all([...clients, lone])
  t.same(commits, [8, 9], 'the lone create went with the eight clients\' next ones')
  // A few creates with no others to come are held no longer than a moment.
  commits.length = 0
  const started = performance.now()
  const single = store.create({ id: 100n, name: 'one' }).then(() => performance.now())
  await new Promise(setImmediate)
  const after = store.create({ id: 101n, name: 'two' }).then(() => performance.now())
  const [, answered] = await Promise.all([single, after])
  t.same(commits, [1, 1], 'a batch of one answered: the create after it is not held')
  t.ok(answered - started < 1000, 'and goes soon')
  // Held, and the rest never come: the hold ends by itself.
  commits.length = 0
  const few = Array.from({ length: 6 }, (_, i) => store.create({ id: BigInt(200 + i), name: 'p' }))
  await new Promise(setImmediate)
  const late = store.create({ id: 299n, name: 'late' })
  await Promise.all([...few, late])
  t.same(commits, [6, 1], 'with no create to come, the held one commits alone, after the hold')
})

t.test('bookkeeping held for the creates to come is committed by a close', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const store = await SqliteStore.open(path)
  await store.webhooks!.subscribe({ id: `sub_${'1'.repeat(32)}`, url: 'http://127.0.0.1:9/', secret: `whsec_${'A'.repeat(32)}`, createdAt: new Date().toISOString() }, 10)
  await store.create({ id: 1n, name: 'first' })
  const now = Date.now() + 1
  const claim = () => store.webhooks!.claim({ now, limit: 1, perSubscription: 1, held: {}, leaseUntil: now + 60_000 })
  const creating = store.create({ id: 2n, name: 'second' })
  await new Promise(setImmediate)
  const claimed = claim()
  await creating
  // (Now held: no create follows, the store closes.)
  await store.close()
  t.equal((await claimed).length, 1, 'the claim was answered')
  const again = await SqliteStore.open(path)
  t.teardown(() => again.close())
  const db = new DatabaseSync(path)
  t.teardown(() => db.close())
  t.same({ ...db.prepare('SELECT count(*) AS n FROM webhook_deliveries WHERE lease_until IS NOT NULL').get() }, { n: 1 }, 'and its lease is on the disk')
})

t.test('a create whose deliveries cannot be written is not kept, even when the subscription lookup fails', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const store = await SqliteStore.open(path)
  t.teardown(() => store.close())
  t.equal(await store.create({ id: 1n, name: 'before' }), 'created')
  // Another connection takes the subscriptions table away: the writer's
  // lookup of it fails inside the create's transaction.
  const db = new DatabaseSync(path)
  db.exec('DROP TABLE webhook_subscriptions')
  db.close()
  await t.rejects(store.create({ id: 2n, name: 'after' }))
  // (Read apart: the store's reading connection needs the table too.)
  const reader = new DatabaseSync(path, { readOnly: true })
  t.teardown(() => reader.close())
  t.same(reader.prepare('SELECT id FROM plants ORDER BY id').all().map(({ id }) => id), [1], 'the plant was taken out again: a retry is a create, not a replay without events')
})

t.test('a full disk is a 503 kind of error, and nothing is half-written', { skip: NO_MOUNT }, async (t) => {
  const disk = smallDisk(t, 128 * 1024)
  // Room an operator can free once the disk is full.
  writeFileSync(join(disk, 'filler'), Buffer.alloc(32 * 1024))
  const store = await SqliteStore.open(join(disk, 'plants.db'))
  t.teardown(() => store.close())
  const big = 'x'.repeat(3000)
  let error: unknown
  let created = 0
  for (let id = 0n; id < 100n && error === undefined; id++) {
    try {
      await store.create({ id, name: big })
      created++
    } catch (err) {
      error = err
    }
  }
  t.match(error, { code: 'PLANT_STORE_UNAVAILABLE', statusCode: 503, message: /unavailable \(full\)/ })
  t.equal((await store.list({ limit: 1000 })).length, created, 'exactly the acknowledged plants are there')
  rmSync(join(disk, 'filler'))
  t.equal(await store.create({ id: 1000n, name: 'Fern' }), 'created', 'once there is room, the same store writes again')
  t.equal(await store.delete(0n), true)
})

t.test('stores opening one new file at once migrate it once', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const stores = await Promise.all(Array.from({ length: 4 }, () => SqliteStore.open(path)))
  t.teardown(() => Promise.all(stores.map((store) => store.close())))
  t.equal(await stores[0]!.create({ id: 1n, name: 'Fern' }), 'created')
  t.same(await stores[3]!.get(1n), { id: 1n, name: 'Fern' })
  const db = new DatabaseSync(path)
  t.teardown(() => db.close())
  t.same(db.prepare('SELECT version FROM plant_store_migrations').all().map((row) => ({ ...row })), [{ version: 1 }, { version: 2 }, { version: 3 }, { version: 4 }, { version: 5 }], 'the plants, the webhook outbox, its index of due deliveries, when each delivery was written, the trace it continues')
})

t.test('a row the database refuses fails alone; the rest of its transaction commits', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const store = await SqliteStore.open(path)
  t.teardown(() => store.close())
  // A trigger stands for any row SQLite itself rejects.
  const db = new DatabaseSync(path)
  db.exec("CREATE TRIGGER refuse_poison BEFORE INSERT ON plants WHEN NEW.name = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned row'); END")
  db.close()
  const before = walCommits(path)
  const outcomes = await Promise.allSettled(Array.from({ length: 30 }, (_, i) =>
    store.create({ id: BigInt(i), name: i === 17 ? 'poison' : `p${i}` })))
  t.equal(walCommits(path) - before, 1, 'the 30 creates shared one transaction')
  t.match(outcomes[17], { status: 'rejected', reason: { message: /poisoned row/ } }, 'the bad row fails')
  t.same(outcomes.filter((outcome, i) => i !== 17 && !(outcome.status === 'fulfilled' && outcome.value === 'created')), [], 'the 29 others are created')
  t.equal((await store.list({ limit: 100 })).length, 29, 'and stored')
})

// What the store answers once its files are not the ones it opened.
const REPLACED = { code: 'PLANT_STORE_UNAVAILABLE', statusCode: 503, message: /removed or replaced/ }

for (const how of ['removed', 'replaced'] as const) {
  t.test(`the database file ${how} while open: 503 from then on, never a write a restart would lose`, async (t) => {
    const dir = t.testdir()
    const path = join(dir, 'plants.db')
    const store = await SqliteStore.open(path)
    t.teardown(() => store.close())
    t.equal(await store.create({ id: 1n, name: 'Fern' }), 'created')
    if (how === 'removed') {
      for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix, { force: true })
    } else {
      const other = new DatabaseSync(join(dir, 'other.db'))
      other.exec('CREATE TABLE plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT) STRICT')
      other.close()
      renameSync(join(dir, 'other.db'), path)
    }
    await t.rejects(store.create({ id: 2n, name: 'Rose' }), REPLACED, 'a write is refused')
    await t.rejects(store.ping(), REPLACED, 'readiness fails')
    await t.rejects(store.get(1n), REPLACED, 'and reads too')
    await t.rejects(store.delete(1n), REPLACED)
  })
}

// The writer looks at the files only when their directory changed (or a
// second passed): a store whose writer has settled on that, past the
// moment the directory's last change is too recent to go by, with three
// plants committed.
async function settledStore (t: Test, path: string): Promise<SqliteStore> {
  const store = await SqliteStore.open(path)
  t.teardown(() => store.close())
  await new Promise((resolve) => setTimeout(resolve, 100))
  for (const id of [1n, 2n, 3n]) t.equal(await store.create({ id, name: 'Fern' }), 'created')
  return store
}

for (const how of ['removed', 'replaced'] as const) {
  t.test(`the WAL alone ${how} while open: the next write is refused, not acknowledged into a file a restart would not read`, async (t) => {
    const path = join(t.testdir(), 'plants.db')
    const store = await settledStore(t, path)
    if (how === 'removed') rmSync(`${path}-wal`)
    else replaceWithEmpty(`${path}-wal`)
    await t.rejects(store.create({ id: 4n, name: 'Rose' }), REPLACED)
  })
}

t.test('a database path that links to a file elsewhere: the WAL replaced beside the target is refused at once', async (t) => {
  const dir = t.testdir({ disk: {}, here: {} })
  const target = join(dir, 'disk', 'plants.db')
  await (await SqliteStore.open(target)).close()
  const path = join(dir, 'here', 'plants.db')
  symlinkSync(target, path)
  const store = await settledStore(t, path)
  replaceWithEmpty(`${target}-wal`)
  await t.rejects(store.create({ id: 4n, name: 'Rose' }), REPLACED)
})

t.test('the writer thread dying under load: 503s, nothing acknowledged lost, the next write restarts it', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const workers = new Set<Worker>()
  const postMessage = Worker.prototype.postMessage
  t.capture(Worker.prototype, 'postMessage', function (this: Worker, ...args: Parameters<Worker['postMessage']>) {
    workers.add(this)
    return postMessage.apply(this, args)
  })
  const store = await SqliteStore.open(path)
  t.teardown(() => store.close())
  const created: bigint[] = []
  const failures: unknown[] = []
  const load = { running: true }
  const clients = Array.from({ length: 16 }, async (_, client) => {
    for (let i = 0; load.running; i++) {
      const id = BigInt(client * 1_000_000 + i)
      try {
        if (await store.create({ id, name: `p${id}` }) === 'created') created.push(id)
      } catch (err) {
        failures.push(err)
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    }
  })
  await new Promise((resolve) => setTimeout(resolve, 300))
  for (const worker of workers) await worker.terminate()
  await new Promise((resolve) => setTimeout(resolve, 300))
  load.running = false
  await Promise.all(clients)
  t.ok(failures.length > 0, `${failures.length} creates failed while the writer was away`)
  t.same(failures.filter((err) => (err as { statusCode?: number }).statusCode !== 503), [], 'every failure is a 503')
  const missing = []
  for (const id of created) if ((await store.get(id)) === undefined) missing.push(id)
  t.same(missing, [], `all ${created.length} acknowledged creates are stored`)
  t.equal(await store.create({ id: -1n, name: 'after' }), 'created', 'the writer was started again')
})

t.test('a database of the third version gains when each delivery was written: pending ones count from when they were due', async (t) => {
  const path = join(t.testdir(), 'plants.db')
  const db = new DatabaseSync(path)
  t.teardown(() => db.close())
  db.exec('CREATE TABLE plant_store_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)')
  SQLITE_MIGRATIONS.slice(0, 3).forEach((sql, i) => {
    db.exec(sql)
    db.prepare("INSERT INTO plant_store_migrations VALUES (?, datetime('now'))").run(i + 1)
  })
  db.exec("INSERT INTO webhook_subscriptions (id, url, secret, created_at) VALUES ('sub_1', 'http://x', 's', '2026-01-01T00:00:00Z')")
  db.exec("INSERT INTO webhook_deliveries (subscription_seq, plant_id, payload, next_attempt_at) VALUES (1, 1, '{}', 1000), (1, 2, '{}', 2000), (1, 3, '{}', 99999999999999)")
  db.exec("UPDATE webhook_deliveries SET status = 'delivered', next_attempt_at = NULL WHERE plant_id = 2")
  const store = await SqliteStore.open(path)
  t.teardown(() => store.close())
  t.same(await store.webhooks.backlog(), { pending: 2, oldestCreatedAt: 1000 })
  const waiting = db.prepare('SELECT created_at FROM webhook_deliveries WHERE plant_id = 3').get() as { created_at: number }
  t.ok(waiting.created_at <= Date.now(), 'one waiting for a retry far ahead is dated now, not then')
})
