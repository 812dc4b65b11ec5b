import neostandard from 'neostandard'

export default neostandard({
  ts: true,
  // Generated from the spec, and build output.
  ignores: ['dist/**', 'lib/api-types.ts', 'lib/spec-document.ts', 'lib/config-check.ts', 'lib/request-check.ts', 'lib/response-serializers.ts']
})
