import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto'

// Standard Webhooks (standardwebhooks.com): the secret is `whsec_` and base64 of the key's bytes;
// the signature is `v1,` and base64 of HMAC-SHA256 over "id.timestamp.body", one per secret, spaces between.

const PREFIX = 'whsec_'

/** A new secret: 32 random bytes. */
export function newSecret (): string {
  return PREFIX + randomBytes(32).toString('base64')
}

// A secret's key, decoded once: each webhook signs every change with the same one or two.
const keys = new Map<string, KeyObject>()

function keyOf (secret: string): KeyObject {
  let key = keys.get(secret)
  if (key === undefined) {
    key = createSecretKey(Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64'))
    if (keys.size >= 1000) keys.clear()
    keys.set(secret, key)
  }
  return key
}

export function sign (secret: string, id: string, timestamp: number, body: string | Buffer): string {
  // The body is fed on its own rather than joined into one string: no copy of it per signature.
  return 'v1,' + createHmac('sha256', keyOf(secret)).update(`${id}.${timestamp}.`).update(body).digest('base64')
}

/**
 * The three Standard Webhooks headers for one attempt, signed with every secret given (during a
 * rotation, two): names and values in turn, as the HTTP client takes them without another object.
 */
export function signedHeaders (secrets: string[], id: string, timestamp: number, body: string | Buffer): string[] {
  const signature = secrets.length === 1 ? sign(secrets[0], id, timestamp, body) : secrets.map((secret) => sign(secret, id, timestamp, body)).join(' ')
  return ['webhook-id', id, 'webhook-timestamp', String(timestamp), 'webhook-signature', signature]
}
