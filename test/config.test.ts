import t from 'tap'
import { loadConfig } from '../lib/config.ts'

t.test('defaults', async (t) => {
  t.same(loadConfig({}), {
    port: 3000, host: '127.0.0.1', tokens: [], databaseUrl: 'file:./data/plants.db', logLevel: 'info', bodyLimit: 1048576
  })
})

t.test('each kind of database URL is accepted', async (t) => {
  for (const url of ['memory:', 'file:./data/plants.db', 'file:/var/lib/plants.db', 'file:///var/lib/plants.db', 'postgres://u@h/db', 'postgresql://h:5432/db']) {
    t.equal(loadConfig({ DATABASE_URL: url }).databaseUrl, url)
  }
})

t.test('every variable is read', async (t) => {
  t.same(loadConfig({
    PORT: '8080', HOST: '0.0.0.0', PLANT_STORE_TOKENS: ' a , b2 ', DATABASE_URL: 'memory:', LOG_LEVEL: 'debug', BODY_LIMIT: '2048'
  }), { port: 8080, host: '0.0.0.0', tokens: ['a', 'b2'], databaseUrl: 'memory:', logLevel: 'debug', bodyLimit: 2048 })
})

t.test('an empty variable counts as unset', async (t) => {
  t.same(loadConfig({ PORT: '', PLANT_STORE_TOKENS: '' }).port, 3000)
  t.same(loadConfig({ PLANT_STORE_TOKENS: '' }).tokens, [])
})

t.test('each bad value is refused with a message that names the variable', async (t) => {
  const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{ PORT: 'abc' }, /^PORT must be integer$/],
    [{ PORT: '65536' }, /^PORT must be <= 65535$/],
    [{ PORT: '-1' }, /^PORT must be >= 0$/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be equal to one of the allowed values \(fatal, error/],
    [{ BODY_LIMIT: '0' }, /^BODY_LIMIT must be >= 1$/],
    [{ BODY_LIMIT: '1.5' }, /^BODY_LIMIT must be integer$/],
    [{ DATABASE_URL: 'mysql://localhost/x' }, /^DATABASE_URL must be one of file:PATH, postgres:\/\/…, memory: \(got "mysql:\/\/localhost\/x"\)$/],
    [{ DATABASE_URL: 'file:' }, /^DATABASE_URL must be one of/],
    [{ DATABASE_URL: 'postgres://' }, /^DATABASE_URL must be one of/],
    [{ PLANT_STORE_TOKENS: 'a,,b' }, /^PLANT_STORE_TOKENS must be a comma-separated list/],
    [{ PLANT_STORE_TOKENS: 'a b' }, /^PLANT_STORE_TOKENS must be a comma-separated list/]
  ]
  for (const [env, message] of cases) {
    t.throws(() => loadConfig(env), { name: 'Error', message }, JSON.stringify(env))
  }
})
