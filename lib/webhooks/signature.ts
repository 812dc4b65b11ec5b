// Standard Webhooks signatures (https://www.standardwebhooks.com): the
// secret is `whsec_` and base64 key bytes; a signature is `v1,` and the
// base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}".
import { createHmac, randomBytes } from 'node:crypto'

const PREFIX = 'whsec_'
// 24 bytes: 192 bits of key, 32 characters of base64 without padding.
const SECRET_BYTES = 24

export function newSecret (): string {
  return PREFIX + randomBytes(SECRET_BYTES).toString('base64')
}

function sign (secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.slice(PREFIX.length), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`
}

/** The three headers of one attempt. */
export function webhookHeaders (secret: string, id: string, body: string, now: number): Record<string, string> {
  const timestamp = Math.floor(now / 1000)
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': sign(secret, id, timestamp, body)
  }
}
