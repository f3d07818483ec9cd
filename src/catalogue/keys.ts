// API keys in the catalogue's own words: scopes, the stored record and the refusals of key
// management. The store keeps keys by the SHA-256 of their secret; the secret itself is never stored.

/** Each scope includes those before it: a till (`sell`) may also read, an integration (`write`) may also sell. */
export const SCOPES = ['read', 'sell', 'write', 'admin'] as const
export type Scope = typeof SCOPES[number]

/** True when a key of scope `held` may do what needs `needed`. */
export function scopeIncludes (held: Scope, needed: Scope): boolean {
  return SCOPES.indexOf(held) >= SCOPES.indexOf(needed)
}

/** A key as `plants keys list` and `GET /v3/keys` show it: never its secret or its hash. Times are epoch ms. */
export interface ApiKey {
  name: string
  scope: Scope
  createdAt: number
  expiresAt: number | null
  lastUsedAt: number | null
  revokedAt: number | null
}

/** A key name: what logs and the feed's `actor` show, so short, printable and unambiguous. */
export const KEY_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/
/** Names the service gives the keys of API_KEYS and API_KEYS_FILE; a stored key may not take one. */
export const ENV_KEY_NAME = /^env-\d+$/

/** Another key (live, revoked or expired) already has this name: names stay unique so attribution stays unambiguous. */
export class KeyNameTaken extends Error {
  constructor (readonly keyName: string) { super(`a key named ${keyName} exists`) }
}
/** No key of this name, or it is revoked already. */
export class KeyNotFound extends Error {
  constructor (readonly keyName: string) { super(`no live key named ${keyName}`) }
}

/** A key's standing at `now`, as both listings show it: revoked outranks expired (a revoke is final). */
export type KeyStatus = 'active' | 'expired' | 'revoked'
export function keyStatus (key: ApiKey, now: number): KeyStatus {
  if (key.revokedAt !== null) return 'revoked'
  return key.expiresAt !== null && now >= key.expiresAt ? 'expired' : 'active'
}

/** A request's key, as the key cache (keys/key-cache.ts) answers for the auth hook (http/auth/auth.ts). */
export type KeyCheck =
  | { ok: true, name: string, scope: Scope }
  | { ok: false, why: 'unknown' }
  /** A key that was given, named so the log can say whose it was (never its secret). */
  | { ok: false, why: 'revoked' | 'expired', name: string }
