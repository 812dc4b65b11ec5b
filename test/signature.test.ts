// Standard Webhooks signatures, as a receiver checks them, whichever
// subscription's key signs and however many keys have been used.
import { Webhook } from 'standardwebhooks'
import t from 'tap'
import { newSecret, webhookHeaders } from '../lib/webhooks/signature.ts'

t.test('every secret signs verifiably, its key decoded once or again after many others', async (t) => {
  const body = '{"id":9007199254740993,"name":"Fern"}'
  const secrets = Array.from({ length: 1500 }, () => newSecret())
  // Past the keys kept, the first secrets are decoded again: still right.
  for (const round of [1, 2]) {
    for (const [i, secret] of secrets.entries()) {
      if (i % 100 !== 0 && round === 2) continue
      const headers = webhookHeaders(secret, `msg_${i}`, body, Date.now())
      t.doesNotThrow(() => new Webhook(secret).verify(body, headers), `round ${round}, secret ${i}`)
      if (i % 100 === 0) t.throws(() => new Webhook(secrets[(i + 1) % secrets.length]!).verify(body, headers), `round ${round}: another secret does not verify ${i}`)
    }
  }
})
