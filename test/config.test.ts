import t from 'tap'
import { loadConfig } from '../lib/config.ts'

t.test('defaults', async (t) => {
  t.same(loadConfig({}), {
    port: 3000,
    host: '127.0.0.1',
    tokens: [],
    databaseUrl: 'file:./data/plants.db',
    logLevel: 'info',
    logFormat: 'json',
    bodyLimit: 1048576,
    shutdownTimeout: 10000,
    corsOrigins: [],
    authFailureLimit: 10,
    authFailureWindow: 60000,
    maxEventLoopDelay: 1000,
    maxRssMb: 0,
    maxConnections: 0,
    headersTimeout: 10000,
    requestTimeout: 30000,
    keepAliveTimeout: 72000,
    writeTimeout: 30000,
    maxHeldMb: 256
  })
})

t.test('each kind of database URL is accepted', async (t) => {
  for (const url of ['memory:', 'file:./data/plants.db', 'file:/var/lib/plants.db', 'file:///var/lib/plants.db', 'postgres://u@h/db', 'postgresql://h:5432/db']) {
    t.equal(loadConfig({ DATABASE_URL: url }).databaseUrl, url)
  }
})

t.test('every variable is read', async (t) => {
  t.same(loadConfig({
    PORT: '8080',
    HOST: '0.0.0.0',
    PLANT_STORE_TOKENS: ' a , b2 ',
    DATABASE_URL: 'memory:',
    LOG_LEVEL: 'debug',
    LOG_FORMAT: 'pretty',
    BODY_LIMIT: '2048',
    SHUTDOWN_TIMEOUT: '3000',
    CORS_ORIGINS: 'https://a.example, https://b.example',
    AUTH_FAILURE_LIMIT: '5',
    AUTH_FAILURE_WINDOW: '1000',
    MAX_EVENT_LOOP_DELAY: '0',
    MAX_RSS_MB: '512',
    MAX_CONNECTIONS: '100',
    HEADERS_TIMEOUT: '2000',
    REQUEST_TIMEOUT: '5000',
    KEEP_ALIVE_TIMEOUT: '1000',
    WRITE_TIMEOUT: '3000',
    MAX_HELD_MB: '64'
  }), {
    port: 8080,
    host: '0.0.0.0',
    tokens: ['a', 'b2'],
    databaseUrl: 'memory:',
    logLevel: 'debug',
    logFormat: 'pretty',
    bodyLimit: 2048,
    shutdownTimeout: 3000,
    corsOrigins: ['https://a.example', 'https://b.example'],
    authFailureLimit: 5,
    authFailureWindow: 1000,
    maxEventLoopDelay: 0,
    maxRssMb: 512,
    maxConnections: 100,
    headersTimeout: 2000,
    requestTimeout: 5000,
    keepAliveTimeout: 1000,
    writeTimeout: 3000,
    maxHeldMb: 64
  })
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
    [{ LOG_FORMAT: 'xml' }, /^LOG_FORMAT must be equal to one of the allowed values \(json, pretty\)$/],
    [{ SHUTDOWN_TIMEOUT: '0' }, /^SHUTDOWN_TIMEOUT must be >= 1$/],
    [{ AUTH_FAILURE_LIMIT: '-1' }, /^AUTH_FAILURE_LIMIT must be >= 0$/],
    [{ MAX_RSS_MB: 'lots' }, /^MAX_RSS_MB must be integer$/],
    [{ MAX_CONNECTIONS: '-1' }, /^MAX_CONNECTIONS must be >= 0$/],
    [{ REQUEST_TIMEOUT: '0' }, /^REQUEST_TIMEOUT must be >= 1$/],
    [{ HEADERS_TIMEOUT: '40000' }, /^HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT \(40000 > 30000\)$/],
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
