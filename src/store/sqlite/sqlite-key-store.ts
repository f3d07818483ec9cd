import type Database from 'better-sqlite3'
import { KeyNameTaken, KeyNotFound, type ApiKey, type Scope } from '../../catalogue/keys.js'
import type { KeyMatch, KeyStore, NewKey } from '../key-store.js'

// The key table on SQLite. Its writes are rare (an operator's create or revoke, last-used times at
// most once a minute a key), so they commit on this connection rather than through the plants'
// writer thread; a file gets a connection of its own, so no plant read snapshot is in the way.

interface KeyRow { name: string, scope: Scope, created_at: number, expires_at: number | null, last_used_at: number | null, revoked_at: number | null }

const COLUMNS = 'name, scope, created_at, expires_at, last_used_at, revoked_at'
const toKey = (r: KeyRow): ApiKey =>
  ({ name: r.name, scope: r.scope, createdAt: r.created_at, expiresAt: r.expires_at, lastUsedAt: r.last_used_at, revokedAt: r.revoked_at })

export function sqliteKeyStore (db: Database.Database): KeyStore {
  const s = {
    insert: db.prepare('INSERT INTO api_keys (name, scope, hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING'),
    get: db.prepare<[string], KeyRow>(`SELECT ${COLUMNS} FROM api_keys WHERE name = ?`),
    list: db.prepare<[], KeyRow>(`SELECT ${COLUMNS} FROM api_keys ORDER BY created_at, name`),
    revoke: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL'),
    byHash: db.prepare<[string], { name: string, scope: Scope, expires_at: number | null, revoked_at: number | null }>(
      'SELECT name, scope, expires_at, revoked_at FROM api_keys WHERE hash = ?'),
    any: db.prepare<[], number>('SELECT EXISTS (SELECT 1 FROM api_keys)').pluck(),
    touch: db.prepare('UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE name = ?')
  }
  return {
    async create (key: NewKey): Promise<ApiKey> {
      // The hash is unique too; a clash there is a 2^-256 accident, refused by the constraint.
      const row = db.transaction(() => {
        if (s.insert.run(key.name, key.scope, key.hash, key.now, key.expiresAt).changes === 0) throw new KeyNameTaken(key.name)
        return s.get.get(key.name)!
      }).immediate()
      return toKey(row)
    },
    async list (): Promise<ApiKey[]> {
      return s.list.all().map(toKey)
    },
    async revoke (name: string, now: number): Promise<ApiKey> {
      const row = db.transaction(() => {
        if (s.revoke.run(now, name).changes === 0) throw new KeyNotFound(name)
        return s.get.get(name)!
      }).immediate()
      return toKey(row)
    },
    async byHash (hash: string): Promise<KeyMatch | undefined> {
      const row = s.byHash.get(hash)
      return row && { name: row.name, scope: row.scope, expiresAt: row.expires_at, revoked: row.revoked_at !== null }
    },
    async anyKeys (): Promise<boolean> {
      return s.any.get() === 1
    },
    async touch (used: Map<string, number>): Promise<void> {
      if (used.size === 0) return
      db.transaction(() => { for (const [name, at] of used) s.touch.run(at, name) }).immediate()
    }
  }
}

/** The key table's migration: one row a key, found by the hash of its secret. */
export const API_KEYS_MIGRATION = `
  -- Revoked keys keep their row (and name): the feed and the logs name keys, and a name that came
  -- back would make those ambiguous. Times are epoch milliseconds.
  CREATE TABLE api_keys (
    name TEXT PRIMARY KEY,
    scope TEXT NOT NULL CHECK (scope IN ('read', 'sell', 'write', 'admin')),
    hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER,
    last_used_at INTEGER,
    revoked_at INTEGER
  ) STRICT;
  `
