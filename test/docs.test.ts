// The Swagger UI plugin that shows answers with every digit: its
// re-indentation, outside the browser (test/swagger-ui.test.ts drives it
// in one).
import { runInNewContext } from 'node:vm'
import t from 'tap'
import { losslessJsonPlugin } from '../lib/docs-lossless-json.ts'

const { responseBody } = losslessJsonPlugin().wrapComponents
const React = { createElement: (_component: unknown, props: { content?: unknown, contentType?: string }) => props }
const show = (content: string, contentType = 'application/json; charset=utf-8') => responseBody('Original', { React })({ content, contentType }) as { content: string, contentType: string }

t.test('JSON answers are re-indented with their tokens untouched, and shown as text', async (t) => {
  const shown = show('[{"name":"Ivy","id":9007199254740995,"tag":"a, b: [c]"},{"id":-9223372036854775808,"e":{},"f":[],"g":"\\\\\\""}]')
  t.equal(shown.contentType, 'text/plain')
  t.equal(shown.content, [
    '[',
    '  {',
    '    "name": "Ivy",',
    '    "id": 9007199254740995,',
    '    "tag": "a, b: [c]"',
    '  },',
    '  {',
    '    "id": -9223372036854775808,',
    '    "e": {},',
    '    "f": [],',
    '    "g": "\\\\\\""',
    '  }',
    ']'
  ].join('\n'))
  t.same(JSON.parse(shown.content), JSON.parse('[{"name":"Ivy","id":9007199254740995,"tag":"a, b: [c]"},{"id":-9223372036854775808,"e":{},"f":[],"g":"\\\\\\""}]'), 'the same JSON')
})

t.test('other answers pass through as they are', async (t) => {
  t.same(show('plain text', 'text/plain'), { content: 'plain text', contentType: 'text/plain' })
})

t.test('the plugin closes over nothing: it is sent to the browser as its source text', async (t) => {
  // Evaluated in a context of its own, as the page will: nothing of this module is in reach.
  const rebuilt = runInNewContext(`(${losslessJsonPlugin.toString()})`) as typeof losslessJsonPlugin
  t.equal((rebuilt().wrapComponents.responseBody('O', { React })({ content: '{"id":1}', contentType: 'application/json' }) as { content: string }).content, '{\n  "id": 1\n}')
})
