// Standard Webhooks signatures (https://www.standardwebhooks.com): the
// secret is `whsec_` and base64 key bytes; a signature is `v1,` and the
// base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}".
import { createHmac, createSecretKey, randomBytes } from 'node:crypto'
import type { KeyObject } from 'node:crypto'

const PREFIX = 'whsec_'
// 24 bytes: 192 bits of key, 32 characters of base64 without padding.
const SECRET_BYTES = 24

export function newSecret (): string {
  return PREFIX + randomBytes(SECRET_BYTES).toString('base64')
}

// Each secret's key, decoded once: making one from the secret's text cost
// more than the signature. (At most MAX_KEYS: secrets of subscriptions
// since deleted go when it is full.)
const keys = new Map<string, KeyObject>()
const MAX_KEYS = 1024

function keyOf (secret: string): KeyObject {
  let key = keys.get(secret)
  if (key === undefined) {
    if (keys.size >= MAX_KEYS) keys.clear()
    key = createSecretKey(Buffer.from(secret.slice(PREFIX.length), 'base64'))
    keys.set(secret, key)
  }
  return key
}

function sign (secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.${body}`).digest('base64')}`
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
