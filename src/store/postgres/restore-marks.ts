import type pg from 'pg'
import { combine, type RestoreKey, type RestoreMarks, type RestoreOutcome } from '../restore-marks.js'

// The restore marks on PostgreSQL (store/restore-marks.ts says what they are and why). The
// documented procedure reads them from the database being replaced before pg_restore, and applies
// them to the restored one before any instance starts (README: "Restoring on PostgreSQL").

type Client = Pick<pg.Client, 'query'>

const MARKS = `SELECT
  -- With caching, last_value may be past what was handed out: a high-water mark may overshoot.
  (SELECT last_value FROM pg_sequences WHERE format('%I.%I', schemaname, sequencename) = pg_get_serial_sequence('plants', 'id')) AS last_value,
  (SELECT coalesce(max(id), 0) FROM plants) AS max_id,
  (SELECT max(value) FROM meta WHERE key IN ('feed_head', 'feed_floor')) AS head,
  (SELECT coalesce(max(version), 0) FROM plants) AS plant_version,
  (SELECT coalesce(max(version), 0) FROM changes) AS change_version`
// The trash holds ids and versions too (a catalogue from before it has none).
const TRASH_MARKS = 'SELECT coalesce(max(id), 0) AS max_id, coalesce(max(version), 0) AS version FROM trash'

const ms = (column: string): string => `(extract(epoch FROM ${column}) * 1000)::bigint AS ${column}`
const KEYS = `SELECT name, scope, hash, ${ms('created_at')}, ${ms('expires_at')}, ${ms('last_used_at')}, ${ms('revoked_at')} FROM api_keys ORDER BY name`

const num = (v: unknown): number => v === null || v === undefined ? 0 : Number(v)
const orNull = (v: unknown): number | null => v === null ? null : Number(v)

async function ownMarks (client: Client): Promise<Omit<RestoreMarks, 'keys'>> {
  const { rows: [r] } = await client.query(MARKS)
  const { rows: [present] } = await client.query<{ trash: boolean }>("SELECT to_regclass('trash') IS NOT NULL AS trash")
  const t = present.trash ? (await client.query(TRASH_MARKS)).rows[0] : { max_id: 0, version: 0 }
  const feedHead = num(r.head)
  return {
    lastId: Math.max(num(r.last_value), num(r.max_id), num(t.max_id)),
    feedHead,
    versionHigh: Math.max(feedHead, num(r.plant_version), num(r.change_version), num(t.version))
  }
}

/** What the catalogue `client` connects to has handed out (one REPEATABLE READ snapshot). */
export async function readMarks (client: Client): Promise<RestoreMarks> {
  await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
  try {
    const marks = await ownMarks(client)
    const { rows } = await client.query(KEYS)
    const keys = rows.map((r): RestoreKey => ({
      name: r.name, scope: r.scope, hash: r.hash, createdAt: num(r.created_at), expiresAt: orNull(r.expires_at), lastUsedAt: orNull(r.last_used_at), revokedAt: orNull(r.revoked_at)
    }))
    return { ...marks, keys }
  } finally {
    await client.query('COMMIT').catch(() => {})
  }
}

/** Moves the restored catalogue (migrated) past `replaced`, in one transaction. */
export async function applyMarks (client: Client, replaced: RestoreMarks): Promise<RestoreOutcome> {
  await client.query('BEGIN')
  try {
    // No instance should be running; if one is, its writes wait for this rather than slip between.
    await client.query('LOCK TABLE plants, meta, changes IN EXCLUSIVE MODE')
    const marks = combine(replaced, await ownMarks(client))
    const floor = marks.feedHead + 1
    const { rowCount } = await client.query('UPDATE plants SET version = version + $1', [marks.versionHigh])
    // A trashed plant's restore takes the entry's version + 1: it moves past too.
    await client.query('UPDATE trash SET version = version + $1', [marks.versionHigh])
    // The history moves with them, so a revert still walks back from the plant's version.
    await client.query('UPDATE history SET version = version + $1', [marks.versionHigh])
    await client.query('DELETE FROM changes')
    // A change is numbered feed_head + 1: the floor itself is never one, so the old head is gone too.
    await client.query("UPDATE meta SET value = $1 WHERE key IN ('feed_head', 'feed_floor')", [floor])
    if (marks.lastId > 0) await client.query("SELECT setval(pg_get_serial_sequence('plants', 'id'), $1, true)", [marks.lastId])
    await client.query('UPDATE webhooks SET cursor = $1, attempts = 0, next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL', [floor])
    await client.query('DELETE FROM api_keys')
    const at = (v: number | null): string | null => v === null ? null : new Date(v).toISOString()
    for (const k of replaced.keys) {
      await client.query('INSERT INTO api_keys (name, scope, hash, created_at, expires_at, last_used_at, revoked_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
        [k.name, k.scope, k.hash, at(k.createdAt), at(k.expiresAt), at(k.lastUsedAt), at(k.revokedAt)])
    }
    await client.query('COMMIT')
    return { plants: rowCount ?? 0, lastId: marks.lastId, feedFloor: floor, versionShift: marks.versionHigh, keys: replaced.keys.length }
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  }
}
