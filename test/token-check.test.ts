import t from 'tap'
import { createTokenCheck } from '../lib/auth.ts'

t.test('accepts exactly the configured tokens', async (t) => {
  const check = createTokenCheck(['alpha-token', 'beta', 'ünïcode-tøken'])
  for (const token of ['alpha-token', 'beta', 'ünïcode-tøken']) t.equal(check(token), true, token)
  for (const token of ['alpha-toke', 'alpha-tokenx', 'Alpha-token', 'bet', 'betaa', '', 'ünïcode-token', 'gamma']) {
    t.equal(check(token), false, JSON.stringify(token))
  }
})

t.test('a token of another length is not a prefix match', async (t) => {
  const check = createTokenCheck(['abcdef'])
  t.equal(check('abc'), false)
  t.equal(check('abcdefabcdef'), false)
})
