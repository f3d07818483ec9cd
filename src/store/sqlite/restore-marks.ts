import type Database from 'better-sqlite3'
import { toRecord } from '../../catalogue/plant.js'
import { restoreChanges, type Told } from '../../catalogue/restore-changes.js'
import { combine, type OwnMarks, type RestoreKey, type RestoreMarks, type RestoreOutcome } from '../restore-marks.js'
import { PLANT_COLUMNS, tupleToPlant, type PlantTuple } from './plant-rows.js'
import { searchBacklog } from './search-backlog.js'
import { hasTable } from './snapshot.js'

// The restore marks on SQLite (store/restore-marks.ts says what they are and why).

/** The actor of the changes a restore writes: the command line's. */
const TOLD_BY = 'cli'

const sequence = (db: Database.Database, name: string): number =>
  (db.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').pluck().get(name) as number | undefined) ?? 0

/** What the catalogue in `db` has handed out, and what its webhook receivers may hold (read in one transaction). */
export function readMarks (db: Database.Database): RestoreMarks {
  return db.transaction(() => {
    const keys = hasTable(db, 'api_keys')
      ? (db.prepare('SELECT name, scope, hash, created_at, expires_at, last_used_at, revoked_at FROM api_keys ORDER BY name').all() as Array<Record<string, any>>)
          .map((r): RestoreKey => ({ name: r.name, scope: r.scope, hash: r.hash, createdAt: r.created_at, expiresAt: r.expires_at, lastUsedAt: r.last_used_at, revokedAt: r.revoked_at }))
      : []
    return { ...ownMarks(db), keys, told: readTold(db), lastMovementSeq: lastMovementSeq(db) }
  })()
}

function readTold (db: Database.Database): Told {
  const plants = db.prepare('SELECT id, version FROM plants ORDER BY id').raw(true).all() as Array<[number, number]>
  // No webhook (or a catalogue from before them): no receiver behind the head.
  const slowest = hasTable(db, 'webhooks') ? db.prepare('SELECT min(cursor) FROM webhooks').pluck().get() as number | null : null
  const unsure = slowest === null ? [] : db.prepare('SELECT DISTINCT plant_id FROM changes WHERE seq > ? ORDER BY plant_id').pluck().all(slowest) as number[]
  return { plants, unsure }
}

/** The ledger's highest position handed out (a catalogue from before stock has none). */
const lastMovementSeq = (db: Database.Database): number => hasTable(db, 'stock_movements')
  ? Math.max(sequence(db, 'stock_movements'), (db.prepare('SELECT max(seq) FROM stock_movements').pluck().get() as number | null) ?? 0)
  : 0

function ownMarks (db: Database.Database): OwnMarks {
  const number = (sql: string): number => (db.prepare(sql).pluck().get() as number | null) ?? 0
  // The trash holds ids and versions too (a catalogue from before it has none).
  const trash = hasTable(db, 'trash')
  const lastId = Math.max(sequence(db, 'plants'), number('SELECT max(id) FROM plants'), trash ? number('SELECT max(id) FROM trash') : 0)
  const feedHead = Math.max(sequence(db, 'changes'), number('SELECT max(seq) FROM changes'), number("SELECT value FROM meta WHERE key = 'feed_floor'"))
  const versionHigh = Math.max(feedHead, number('SELECT max(version) FROM plants'), number('SELECT max(version) FROM changes'),
    trash ? number('SELECT max(version) FROM trash') : 0)
  return { lastId, feedHead, versionHigh }
}

/**
 * Moves the restored catalogue in `db` (migrated to the current schema) past `replaced`, in one
 * transaction: ids, feed positions and versions as restore-marks.ts says, and the replaced keys.
 */
export function applyMarks (db: Database.Database, replaced: RestoreMarks): RestoreOutcome {
  return db.transaction(() => {
    const marks = combine(replaced, ownMarks(db))
    const floor = marks.feedHead + 1
    // Compared before the versions move: told holds the versions the replaced catalogue handed out.
    const tell = replaced.told === undefined ? undefined : restoreChanges(replaced.told, db.prepare('SELECT id, version FROM plants').raw(true).iterate() as Iterable<[number, number]>)
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
    const ledger = Math.max(replaced.lastMovementSeq ?? 0, lastMovementSeq(db))
    if (ledger > 0) setSequence('stock_movements', ledger)
    // History cursors from before name a plant up to lastId and a version up to the shift (catalogue/history.ts cursorBeforeRestore).
    const keep = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value')
    keep.run('restore_last_id', marks.lastId)
    keep.run('restore_version_shift', marks.versionHigh)
    // The next change is floor + 1: the floor itself is never a change, so a position equal to the old head is gone too.
    setSequence('changes', floor)
    if (tell !== undefined) {
      const now = Date.now()
      const insert = db.prepare('INSERT INTO changes (kind, plant_id, version, plant, at, actor) VALUES (?, ?, ?, ?, ?, ?)')
      // Above every version handed out, and below any the restored catalogue gives the plant later
      // (a trashed plant's restore takes its moved-up version + 1).
      for (const id of tell.deleted) insert.run('deleted', id, marks.versionHigh + 1, null, now, TOLD_BY)
      const read = db.prepare<[number], PlantTuple>(`SELECT ${PLANT_COLUMNS} FROM plants p WHERE p.id = ?`).raw(true)
      for (const { id, kind } of tell.sent) {
        const plant = tupleToPlant(read.get(id)!)
        insert.run(kind, id, plant.version, JSON.stringify(toRecord(plant)), now, TOLD_BY)
      }
    }
    // Webhooks resume at the floor: what the copy's feed held was sent (or lost) before, and what
    // follows tells their receivers what the restore undid.
    db.prepare('UPDATE webhooks SET cursor = ?, attempts = 0, next_attempt_at = NULL, lease_owner = NULL, lease_until = NULL').run(floor)
    db.prepare('DELETE FROM api_keys').run()
    const insert = db.prepare('INSERT INTO api_keys (name, scope, hash, created_at, expires_at, last_used_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
    for (const k of replaced.keys) insert.run(k.name, k.scope, k.hash, k.createdAt, k.expiresAt, k.lastUsedAt, k.revokedAt)
    return { plants, lastId: marks.lastId, feedFloor: floor, versionShift: marks.versionHigh, keys: replaced.keys.length, told: tell === undefined ? null : tell.deleted.length + tell.sent.length }
  }).immediate()
}
