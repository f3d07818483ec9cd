import { ENV_KEY_NAME, KEY_NAME, type ApiKey, type Scope } from '../catalogue/keys.js'
import type { KeyStore } from '../store/key-store.js'
import { hashOf, newSecret } from './secrets.js'

// Creating a key, the same for `plants keys create` and POST /v3/keys: the secret is made here,
// returned once, and only its hash is stored.

/** Why a new key's name or expiry cannot be taken, in words for the person who chose them. */
export function newKeyProblem (name: string, expiresAt: number | null, now: number): string | undefined {
  if (!KEY_NAME.test(name)) return `the name ${JSON.stringify(name)} must be 1 to 63 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit`
  if (ENV_KEY_NAME.test(name)) return `the name ${name} is kept for the keys of API_KEYS and API_KEYS_FILE`
  if (expiresAt !== null && !(expiresAt > now)) return 'the expiry must be in the future'
  return undefined
}

/** A date (midnight UTC) or an RFC 3339 date-time with its zone, as epoch ms; undefined for anything else. */
export function parseExpiry (text: string): number | undefined {
  if (!/^\d{4}-\d{2}-\d{2}([Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2}))?$/.test(text)) return undefined
  const ms = Date.parse(text.replace(' ', 'T'))
  return Number.isNaN(ms) ? undefined : ms
}

export interface CreatedKey { key: ApiKey, secret: string }

/** Stores a new key (KeyNameTaken when the name is used); the caller has checked newKeyProblem. */
export async function createKey (store: KeyStore, name: string, scope: Scope, expiresAt: number | null, now: number): Promise<CreatedKey> {
  const secret = newSecret()
  const key = await store.create({ name, scope, hash: hashOf(secret), expiresAt, now })
  return { key, secret }
}
