import type Database from 'better-sqlite3'
import { combine, type RestoreKey, type RestoreMarks, type RestoreOutcome } from '../restore-marks.js'
import { searchBacklog } from './search-backlog.js'

// The restore marks on SQLite (store/restore-marks.ts says what they are and why).

const hasTable = (db: Database.Database, name: string): boolean =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined

const sequence = (db: Database.Database, name: string): number =>
  (db.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').pluck().get(name) as number | undefined) ?? 0

/** What the catalogue in `db` has handed out (read in one transaction). */
export function readMarks (db: Database.Database): RestoreMarks {
  return db.transaction(() => {
    const number = (sql: string): number => (db.prepare(sql).pluck().get() as number | null) ?? 0
    // The trash holds ids and versions too (a catalogue from before it has none).
    const trash = hasTable(db, 'trash')
    const lastId = Math.max(sequence(db, 'plants'), number('SELECT max(id) FROM plants'), trash ? number('SELECT max(id) FROM trash') : 0)
    const feedHead = Math.max(sequence(db, 'changes'), number('SELECT max(seq) FROM changes'), number("SELECT value FROM meta WHERE key = 'feed_floor'"))
    const versionHigh = Math.max(feedHead, number('SELECT max(version) FROM plants'), number('SELECT max(version) FROM changes'),
      trash ? number('SELECT max(version) FROM trash') : 0)
    const keys = hasTable(db, 'api_keys')
      ? (db.prepare('SELECT name, scope, hash, created_at, expires_at, last_used_at, revoked_at FROM api_keys ORDER BY name').all() as Array<Record<string, any>>)
          .map((r): RestoreKey => ({ name: r.name, scope: r.scope, hash: r.hash, createdAt: r.created_at, expiresAt: r.expires_at, lastUsedAt: r.last_used_at, revokedAt: r.revoked_at }))
      : []
    return { lastId, feedHead, versionHigh, keys }
  })()
}

/**
 * Moves the restored catalogue in `db` (migrated to the current schema) past `replaced`, in one
 * transaction: ids, feed positions and versions as restore-marks.ts says, and the replaced keys.
 */
export function applyMarks (db: Database.Database, replaced: RestoreMarks): RestoreOutcome {
  return db.transaction(() => {
    const marks = combine(replaced, readMarks(db))
    const floor = marks.feedHead + 1
    // The search index takes its backlog from the change rows about to go.
    searchBacklog(db).settle(0, true)
    const plants = db.prepare('UPDATE plants SET version = version + ?').run(marks.versionHigh).changes
    // A trashed plant's restore takes the entry's version + 1: it moves past too.
    db.prepare('UPDATE trash SET version = version + ?').run(marks.versionHigh)
    // The history moves with them, so a revert still walks back from the plant's version.
    db.prepare('UPDATE history SET version = version + ?').run(marks.versionHigh)
    db.prepare('DELETE FROM changes').run()
    db.prepare("UPDATE meta SET value = ? WHERE key IN ('feed_floor', 'search_indexed')").run(floor)
    const setSequence = (name: string, value: number): void => {
      if (db.prepare('UPDATE sqlite_sequence SET seq = ? WHERE name = ?').run(value, name).changes === 0) {
        db.prepare('INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)').run(name, value)
      }
    }
    setSequence('plants', marks.lastId)
    // The next change is floor + 1: the floor itself is never a change, so a position equal to the old head is gone too.
    setSequence('changes', floor)
    // Webhooks resume at the new head: what the copy's feed held was sent (or lost) before.
    db.prepare('UPDATE webhooks SET cursor = ?, attempts = 0, next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL').run(floor)
    db.prepare('DELETE FROM api_keys').run()
    const insert = db.prepare('INSERT INTO api_keys (name, scope, hash, created_at, expires_at, last_used_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
    for (const k of replaced.keys) insert.run(k.name, k.scope, k.hash, k.createdAt, k.expiresAt, k.lastUsedAt, k.revokedAt)
    return { plants, lastId: marks.lastId, feedFloor: floor, versionShift: marks.versionHigh, keys: replaced.keys.length }
  }).immediate()
}
