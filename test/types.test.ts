// The published types (dist/*.d.ts) as a host app meets them: the type
// assertions of test/types/*.test-d.ts, checked by tsd as the @fastify
// plugins do. `npm test` builds dist/ first. (tsconfig.json leaves those
// files out: their expectError lines do not compile, on purpose.)
import t from 'tap'
import tsdModule from 'tsd'

// tsd is CommonJS; its default export arrives wrapped.
const { default: tsd, formatter } = tsdModule as unknown as { default: typeof tsdModule.default, formatter: typeof tsdModule.formatter }

t.test('tsd: the plugin and the client types', async (t) => {
  const diagnostics = await tsd({ cwd: new URL('..', import.meta.url).pathname })
  t.equal(formatter(diagnostics), '', 'no type assertion fails')
  t.same(diagnostics, [])
})
