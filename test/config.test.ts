import t from 'tap'
import { execFileSync } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { ENV_SCHEMA, configurationTable, loadConfig, usage } from '../lib/config.ts'
import { DEFAULT_AUTH_FAILURE_LIMIT, DEFAULT_BODY_LIMIT, DEFAULT_MAX_EVENT_LOOP_DELAY, DEFAULT_MAX_HELD_BYTES, DEFAULT_MEMORY_MAX_RECORDS, DEFAULT_POOL_SIZE, DEFAULT_WEBHOOKS, DEFAULT_WRITE_TIMEOUT } from '../lib/defaults.ts'
import { DEFAULT_EDGE_LIMITS } from '../lib/http-edge.ts'

const MB = 1024 * 1024

t.test('defaults', async (t) => {
  t.same(loadConfig({}), {
    port: 3000,
    host: '127.0.0.1',
    workers: 1,
    trustProxy: false,
    log: { level: 'info', format: 'json' },
    shutdownTimeout: 10000,
    edge: { maxConnections: 0, headersTimeout: 10000, requestTimeout: 30000, keepAliveTimeout: 72000 },
    plugin: {
      notFound: true,
      tokens: [],
      database: 'file:./data/plants.db',
      bodyLimit: 1048576,
      corsOrigins: [],
      authFailureLimit: { max: 10, timeWindow: 60000 },
      overload: { maxEventLoopDelay: 1000, maxRssBytes: 0 },
      writeTimeout: 30000,
      maxHeldBytes: 256 * MB,
      poolSize: 10,
      memoryMaxRecords: 100_000,
      metrics: { public: false },
      webhooks: { allowPrivateNetworks: false, maxAttempts: 8, retryBaseMs: 5000, timeoutMs: 10000, concurrency: 64 }
    }
  })
})

t.test('MEMORY_MAX_RECORDS', async (t) => {
  t.equal(loadConfig({ MEMORY_MAX_RECORDS: '500' }).plugin.memoryMaxRecords, 500)
  t.throws(() => loadConfig({ MEMORY_MAX_RECORDS: '0' }), /MEMORY_MAX_RECORDS must be >= 1/)
  t.throws(() => loadConfig({ MEMORY_MAX_RECORDS: '1e3x' }), /MEMORY_MAX_RECORDS must be integer/)
})

t.test('METRICS, METRICS_PUBLIC and DATABASE_POOL_SIZE', async (t) => {
  t.equal(loadConfig({ METRICS: 'false' }).plugin.metrics, false)
  t.same(loadConfig({ METRICS_PUBLIC: 'true' }).plugin.metrics, { public: true })
  t.equal(loadConfig({ DATABASE_POOL_SIZE: '3' }).plugin.poolSize, 3)
  t.throws(() => loadConfig({ DATABASE_POOL_SIZE: '0' }), /DATABASE_POOL_SIZE must be >= 1/)
  t.throws(() => loadConfig({ METRICS_PUBLIC: 'maybe' }), /METRICS_PUBLIC must be boolean/)
})

t.test('the defaults are the plugin\'s own', async (t) => {
  const { plugin } = loadConfig({})
  t.equal(plugin.bodyLimit, DEFAULT_BODY_LIMIT)
  t.same(plugin.authFailureLimit, DEFAULT_AUTH_FAILURE_LIMIT)
  t.same(plugin.overload, { maxEventLoopDelay: DEFAULT_MAX_EVENT_LOOP_DELAY, maxRssBytes: 0 })
  t.equal(plugin.writeTimeout, DEFAULT_WRITE_TIMEOUT)
  t.equal(plugin.maxHeldBytes, DEFAULT_MAX_HELD_BYTES)
  t.match(loadConfig({}).edge, DEFAULT_EDGE_LIMITS)
  t.same(plugin.webhooks, DEFAULT_WEBHOOKS)
  t.equal(plugin.poolSize, DEFAULT_POOL_SIZE)
  t.equal(plugin.memoryMaxRecords, DEFAULT_MEMORY_MAX_RECORDS)
})

t.test('each kind of database URL is accepted', async (t) => {
  for (const url of ['memory:', 'file:./data/plants.db', 'file:/var/lib/plants.db', 'file:///var/lib/plants.db', 'postgres://u@h/db', 'postgresql://h:5432/db']) {
    t.equal(loadConfig({ DATABASE_URL: url }).plugin.database, url)
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
    MAX_HELD_MB: '64',
    WEBHOOKS: 'true',
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    WEBHOOK_MAX_ATTEMPTS: '3',
    WEBHOOK_RETRY_BASE_MS: '50',
    WEBHOOK_TIMEOUT_MS: '1000',
    WEBHOOK_CONCURRENCY: '2',
    DATABASE_POOL_SIZE: '4',
    MEMORY_MAX_RECORDS: '5000',
    METRICS: 'true',
    METRICS_PUBLIC: 'true',
    WORKERS: '1',
    TRUST_PROXY: '10.0.0.0/8, 127.0.0.1',
    REDIS_URL: 'redis://127.0.0.1:6379'
  }), {
    port: 8080,
    host: '0.0.0.0',
    workers: 1,
    trustProxy: ['10.0.0.0/8', '127.0.0.1'],
    redisUrl: 'redis://127.0.0.1:6379',
    log: { level: 'debug', format: 'pretty' },
    shutdownTimeout: 3000,
    edge: { maxConnections: 100, headersTimeout: 2000, requestTimeout: 5000, keepAliveTimeout: 1000 },
    plugin: {
      notFound: true,
      tokens: ['a', 'b2'],
      database: 'memory:',
      bodyLimit: 2048,
      corsOrigins: ['https://a.example', 'https://b.example'],
      authFailureLimit: { max: 5, timeWindow: 1000 },
      overload: { maxEventLoopDelay: 0, maxRssBytes: 512 * MB },
      writeTimeout: 3000,
      maxHeldBytes: 64 * MB,
      poolSize: 4,
      memoryMaxRecords: 5000,
      metrics: { public: true },
      webhooks: { allowPrivateNetworks: true, maxAttempts: 3, retryBaseMs: 50, timeoutMs: 1000, concurrency: 2 }
    }
  })
})

t.test('WORKERS: a count, or auto for one per core; above 1 not with a database in the process', async (t) => {
  t.equal(loadConfig({ WORKERS: '3', DATABASE_URL: 'file:/tmp/x.db' }).workers, 3)
  t.equal(loadConfig({ WORKERS: 'auto', DATABASE_URL: 'file:/tmp/x.db' }).workers, availableParallelism())
  t.throws(() => loadConfig({ WORKERS: '0' }), /WORKERS must match pattern/)
  t.throws(() => loadConfig({ WORKERS: 'many' }), /WORKERS must match pattern/)
  t.throws(() => loadConfig({ WORKERS: '2', DATABASE_URL: 'memory:' }), /WORKERS above 1 needs a shared database/)
})

t.test('TRUST_PROXY: false, true, or addresses and ranges; not a hop count, which Fastify cannot check', async (t) => {
  t.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true)
  t.throws(() => loadConfig({ TRUST_PROXY: '2' }), /not a hop count/)
  t.same(loadConfig({ TRUST_PROXY: '::1,192.168.0.0/16' }).trustProxy, ['::1', '192.168.0.0/16'])
  t.throws(() => loadConfig({ TRUST_PROXY: 'proxy.example' }), /TRUST_PROXY must be .* \(got "proxy.example"\)/)
  t.throws(() => loadConfig({ TRUST_PROXY: '10.0.0.0/99' }), /got "10.0.0.0\/99"/)
})

t.test('REDIS_URL: redis:// or rediss:// only', async (t) => {
  t.equal(loadConfig({ REDIS_URL: 'rediss://user:pw@redis.example:6380/2' }).redisUrl, 'rediss://user:pw@redis.example:6380/2')
  t.throws(() => loadConfig({ REDIS_URL: 'http://redis' }), /REDIS_URL must match pattern/)
})

t.test('WEBHOOKS=false turns subscriptions and deliveries off', async (t) => {
  t.equal(loadConfig({ WEBHOOKS: 'false' }).plugin.webhooks, false)
  t.same(loadConfig({ WEBHOOKS: 'true' }).plugin.webhooks, DEFAULT_WEBHOOKS)
})

t.test('AUTH_FAILURE_LIMIT=0 turns the limit off', async (t) => {
  t.equal(loadConfig({ AUTH_FAILURE_LIMIT: '0' }).plugin.authFailureLimit, false)
})

t.test('every declared variable is read, and only those', async (t) => {
  const names = Object.keys(ENV_SCHEMA.properties)
  t.equal(names.length, 37)
  // A variable the declaration does not name changes nothing.
  t.same(loadConfig({ PORTS: '1', port: '1' }), loadConfig({}))
})

t.test('--help and the README table list every variable with its default', async (t) => {
  const lines = usage().split('\n')
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')
  t.ok(readme.includes(configurationTable()), 'README.md holds the current table: run `npm run generate`')
  for (const [name, schema] of Object.entries(ENV_SCHEMA.properties)) {
    const fallback = 'default' in schema ? String(schema.default) : undefined
    const line = lines.find((line) => line.startsWith(`  ${name} `))
    t.ok(line?.endsWith(fallback === undefined ? '' : `(default: ${fallback})`), `--help: ${line}`)
    t.ok(configurationTable().includes(`| \`${name}\` | ${fallback === undefined ? 'unset' : `\`${fallback}\``} |`), `table: ${name}`)
  }
})

t.test('an empty variable counts as unset', async (t) => {
  t.same(loadConfig({ PORT: '', PLANT_STORE_TOKENS: '' }).port, 3000)
  t.same(loadConfig({ PLANT_STORE_TOKENS: '' }).plugin.tokens, [])
})

t.test('each bad value is refused with a message that names the variable', async (t) => {
  const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{ PORT: 'abc' }, /^PORT must be integer \(got "abc"\)$/],
    [{ PORT: '65536' }, /^PORT must be <= 65535 \(got "65536"\)$/],
    [{ PORT: '-1' }, /^PORT must be >= 0 \(got "-1"\)$/],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be equal to one of the allowed values \(fatal, error.*\) \(got "loud"\)$/],
    [{ BODY_LIMIT: '0' }, /^BODY_LIMIT must be >= 1 \(got "0"\)$/],
    [{ BODY_LIMIT: '1.5' }, /^BODY_LIMIT must be integer \(got "1.5"\)$/],
    [{ LOG_FORMAT: 'xml' }, /^LOG_FORMAT must be equal to one of the allowed values \(json, pretty\) \(got "xml"\)$/],
    [{ SHUTDOWN_TIMEOUT: '0' }, /^SHUTDOWN_TIMEOUT must be >= 1 \(got "0"\)$/],
    [{ AUTH_FAILURE_LIMIT: '-1' }, /^AUTH_FAILURE_LIMIT must be >= 0 \(got "-1"\)$/],
    [{ MAX_RSS_MB: 'lots' }, /^MAX_RSS_MB must be integer \(got "lots"\)$/],
    [{ MAX_CONNECTIONS: '-1' }, /^MAX_CONNECTIONS must be >= 0 \(got "-1"\)$/],
    [{ REQUEST_TIMEOUT: '0' }, /^REQUEST_TIMEOUT must be >= 1 \(got "0"\)$/],
    [{ HEADERS_TIMEOUT: '40000' }, /^HEADERS_TIMEOUT must not be longer than REQUEST_TIMEOUT \(40000 > 30000\)$/],
    [{ DATABASE_URL: 'mysql://localhost/x' }, /^DATABASE_URL must be one of file:PATH, postgres:\/\/…, memory: \(got "mysql:\/\/localhost\/x"\)$/],
    [{ DATABASE_URL: 'file:' }, /^DATABASE_URL must be one of/],
    [{ DATABASE_URL: 'postgres://' }, /^DATABASE_URL must be one of/],
    [{ DATABASE_URL: 'file:/var/lib/plants/' }, /^DATABASE_URL file:\/var\/lib\/plants\/ names a directory: name a file in it, such as file:\/var\/lib\/plants\/plants.db$/],
    [{ DATABASE_URL: 'mysql://u:hunter2@h/x' }, /^DATABASE_URL must be one of .* \(got "mysql:\/\/u:\*\*\*@h\/x"\)$/],
    [{ DATABASE_URL: 'file://a:b/x.db' }, /^DATABASE_URL file:\/\/a:b\/x\.db is not a file URL \(Invalid URL\): write file:PATH or file:\/\/\/absolute\/path$/],
    [{ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'yes' }, /^WEBHOOK_ALLOW_PRIVATE_NETWORKS must be boolean \(got "yes"\)$/],
    [{ WEBHOOK_MAX_ATTEMPTS: '0' }, /^WEBHOOK_MAX_ATTEMPTS must be >= 1 \(got "0"\)$/],
    [{ PLANT_STORE_TOKENS: 'a,,b' }, /^PLANT_STORE_TOKENS must be a comma-separated list/],
    [{ PLANT_STORE_TOKENS: 'a b' }, /^PLANT_STORE_TOKENS must be a comma-separated list/]
  ]
  for (const [env, message] of cases) {
    t.throws(() => loadConfig(env), { name: 'Error', message }, JSON.stringify(env))
  }
})

t.test('no start compiles the configuration\'s check: it is generated ahead, and Ajv\'s compiler is not even loaded', async (t) => {
  // (A process of its own: this one has loaded Ajv for other tests.)
  const script = `
    import { createRequire } from 'node:module'
    const { loadConfig } = await import(${JSON.stringify(new URL('../lib/config.ts', import.meta.url).href)})
    const config = loadConfig({ PORT: '8080', HOST: '::1', WORKERS: '2', DATABASE_URL: 'file:plants.db' })
    const loaded = Object.keys(createRequire(import.meta.url).cache)
    console.log(JSON.stringify({ port: config.port, host: config.host, workers: config.workers, compiler: loaded.filter((file) => /[\\/]ajv[\\/]dist[\\/](core|ajv|compile[\\/]index)\\.js$/.test(file)) }))`
  const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }))
  t.same(out, { port: 8080, host: '::1', workers: 2, compiler: [] })
})

t.test('database URLs in logs and messages carry no password, in any of the forms node-postgres reads', async (t) => {
  const { redactedUrl } = await import('../lib/stores/open-store.ts')
  t.equal(redactedUrl('postgres://u:hunter2@h:5432/db'), 'postgres://u:***@h:5432/db')
  t.equal(redactedUrl('postgres://u@h/db?password=hunter2&sslmode=require'), 'postgres://u@h/db?password=***&sslmode=require')
  t.equal(redactedUrl('postgresql://u@h/db?sslpassword=hunter2&sslkey=/k'), 'postgresql://u@h/db?sslpassword=***&sslkey=***')
  t.equal(redactedUrl('POSTGRES://u:hunter2@h/db'), 'postgres://u:***@h/db')
  t.equal(redactedUrl('weird u:hunter2@host'), '…')
  t.equal(redactedUrl('file:./data/plants.db'), 'file:./data/plants.db')
})
