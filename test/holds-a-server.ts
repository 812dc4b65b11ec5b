// A test process that starts a server (a primary and its workers) and
// waits: server-process.test.ts stops it as tap or a terminal would.
import t from 'tap'
import { start } from './server-process.ts'

t.test('holds a server', async (t) => {
  const server = await start(t, { PLANT_STORE_TOKENS: 'tok', WORKERS: '2', DATABASE_URL: `file:${t.testdir()}/plants.db` })
  process.stderr.write(`server ${server.pid}\n`)
  await new Promise(() => {})
})
