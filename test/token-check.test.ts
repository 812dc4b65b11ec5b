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

t.test('a token longer than every accepted one matches none, however its characters fall', async (t) => {
  // The check writes the presented token into a buffer a few bytes longer
  // than the longest accepted token: a longer token, whose last characters
  // do not fit whole (2, 3 and 4 bytes in UTF-8), must still not match the
  // accepted token it begins with.
  const check = createTokenCheck(['abcdef', 'xyz'])
  for (const tail of ['é', '€', '😀', 'a€', 'ab😀', 'abc😀', 'abcd😀', 'é'.repeat(50)]) {
    t.equal(check(`abcdef${tail}`), false, `abcdef + ${tail}`)
    t.equal(check(`xyz${tail}`), false, `xyz + ${tail}`)
  }
  t.equal(check('abcdef'), true, 'and the accepted ones still match after them')
  t.equal(check('xyz'), true)
  // A lone surrogate is written as U+FFFD's three bytes, as Buffer.from writes it.
  t.equal(createTokenCheck(['\uFFFD'])('\uD800'), Buffer.from('\uD800').equals(Buffer.from('\uFFFD')))
})

t.test('a long list of tokens is taken (the longest found without spreading the list into one call)', async (t) => {
  const tokens = Array.from({ length: 200_000 }, (_, i) => `token-${i}`)
  const check = createTokenCheck(tokens)
  t.equal(check('token-199999'), true)
  t.equal(check('token-200000'), false)
})
