import { KeyNameTaken, KeyNotFound, type ApiKey, type Scope } from '../../catalogue/keys.js'
import type { KeyMatch, KeyStore, NewKey } from '../key-store.js'
import type { Session } from './connection.js'

// The key table on PostgreSQL, shared by every instance of the catalogue. Single statements,
// each its own transaction: a key's create, revoke or last-used time touches one row.

interface KeyRow { name: string, scope: Scope, created_at: Date, expires_at: Date | null, last_used_at: Date | null, revoked_at: Date | null }

const COLUMNS = 'name, scope, created_at, expires_at, last_used_at, revoked_at'
const ms = (d: Date | null): number | null => d === null ? null : d.getTime()
const toKey = (r: KeyRow): ApiKey =>
  ({ name: r.name, scope: r.scope, createdAt: r.created_at.getTime(), expiresAt: ms(r.expires_at), lastUsedAt: ms(r.last_used_at), revokedAt: ms(r.revoked_at) })
const at = (epochMs: number | null): Date | null => epochMs === null ? null : new Date(epochMs)

export function postgresKeyStore (session: Session): KeyStore {
  return {
    async create (key: NewKey): Promise<ApiKey> {
      const { rows } = await session.run((c) => c.query<KeyRow>(
        `INSERT INTO api_keys (name, scope, hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (name) DO NOTHING RETURNING ${COLUMNS}`, [key.name, key.scope, key.hash, at(key.now), at(key.expiresAt)]))
      if (rows.length === 0) throw new KeyNameTaken(key.name)
      return toKey(rows[0])
    },
    async list (): Promise<ApiKey[]> {
      const { rows } = await session.run((c) => c.query<KeyRow>(`SELECT ${COLUMNS} FROM api_keys ORDER BY created_at, name`))
      return rows.map(toKey)
    },
    async revoke (name: string, now: number): Promise<ApiKey> {
      const { rows } = await session.run((c) => c.query<KeyRow>(
        `UPDATE api_keys SET revoked_at = $2 WHERE name = $1 AND revoked_at IS NULL RETURNING ${COLUMNS}`, [name, at(now)]))
      if (rows.length === 0) throw new KeyNotFound(name)
      return toKey(rows[0])
    },
    async byHash (hash: string): Promise<KeyMatch | undefined> {
      const { rows } = await session.run((c) => c.query<{ name: string, scope: Scope, expires_at: Date | null, revoked: boolean }>(
        { name: 'key-by-hash', text: 'SELECT name, scope, expires_at, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE hash = $1', values: [hash] }))
      const row = rows[0]
      return row && { name: row.name, scope: row.scope, expiresAt: ms(row.expires_at), revoked: row.revoked }
    },
    async anyKeys (): Promise<boolean> {
      const { rows } = await session.run((c) => c.query<{ any: boolean }>('SELECT EXISTS (SELECT 1 FROM api_keys) AS any'))
      return rows[0].any
    },
    async touch (used: Map<string, number>): Promise<void> {
      if (used.size === 0) return
      // One statement for every key used since the last flush; GREATEST keeps another instance's later time.
      await session.run((c) => c.query(
        `UPDATE api_keys k SET last_used_at = GREATEST(k.last_used_at, u.at)
         FROM unnest($1::text[], $2::timestamptz[]) AS u(name, at) WHERE k.name = u.name`,
        [[...used.keys()], [...used.values()].map((t) => new Date(t))]))
    }
  }
}
