import type { ApiKey, Scope } from '../catalogue/keys.js'

// The key table behind the store: each engine implements it on the catalogue's own database, so
// every instance sharing the database sees the same keys. Hashes are SHA-256 digests, hex.

export interface NewKey {
  name: string
  scope: Scope
  hash: string
  /** Epoch milliseconds, or null for a key that does not expire. */
  expiresAt: number | null
  now: number
}

/** A key found by its hash: what a request check needs. */
export interface KeyMatch {
  name: string
  scope: Scope
  expiresAt: number | null
  revoked: boolean
}

export interface KeyStore {
  /** Refused with KeyNameTaken when any key, revoked ones included, has the name. */
  create (key: NewKey): Promise<ApiKey>
  /** Every key, revoked ones included, oldest first. */
  list (): Promise<ApiKey[]>
  /** Marks the live key of this name revoked (KeyNotFound when there is none). */
  revoke (name: string, now: number): Promise<ApiKey>
  /** The key with this hash, revoked or expired ones included (the caller decides). */
  byHash (hash: string): Promise<KeyMatch | undefined>
  /** Whether any key was ever stored: once one was, the service needs keys even after the last is revoked. */
  anyKeys (): Promise<boolean>
  /** Records when keys were last used (epoch ms by name); a later time never goes back. */
  touch (used: Map<string, number>): Promise<void>
}
