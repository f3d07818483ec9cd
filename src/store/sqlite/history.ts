import type Database from 'better-sqlite3'
import { kindOfCode, type FieldChanges, type HistoryEntry } from '../../catalogue/history.js'
import { timestamp } from '../../catalogue/store-fields.js'

// Plants' history on SQLite (catalogue/history.ts). Rows are appended in commit order (seq), so
// the retention purge walks the oldest first and needs no index on time; a plant's page walks the
// index (plant_id, version). Only the changed values are stored, with a few bytes around them.

/** The history's migration (issue 26): a new table, so it is instant on any catalogue. */
export const HISTORY_MIGRATION = `
  CREATE TABLE history (
    -- Commit order: the retention purge deletes from the lowest up.
    seq INTEGER PRIMARY KEY,
    plant_id INTEGER NOT NULL,
    version INTEGER NOT NULL,
    -- 0 created, 1 updated, 2 deleted (catalogue/history.ts KIND_CODES).
    kind INTEGER NOT NULL,
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    -- JSON: each changed field with [before, after].
    changes TEXT NOT NULL
  ) STRICT;
  CREATE INDEX history_plant ON history (plant_id, version);
`

/** The statement every write records its version with (writes.ts), in its own transaction. */
export const INSERT_HISTORY = 'INSERT INTO history (plant_id, version, kind, at, actor, changes) VALUES (?, ?, ?, ?, ?, ?)'

interface HistoryRow { version: number, kind: number, at: number, actor: string, changes: string }

const toEntry = (r: HistoryRow): HistoryEntry =>
  ({ version: r.version, at: timestamp(r.at), actor: r.actor, kind: kindOfCode(r.kind), changes: JSON.parse(r.changes) as FieldChanges })

/** A page of a plant's history, newest first, below `before`; undefined when no plant, live or trashed, has the id. */
export function historyReader (db: Database.Database): (id: number, before: number | undefined, limit: number) => HistoryEntry[] | undefined {
  const known = db.prepare<[number, number], number>('SELECT EXISTS (SELECT 1 FROM plants WHERE id = ?) OR EXISTS (SELECT 1 FROM trash WHERE id = ?)').pluck()
  const page = db.prepare<[number, number, number], HistoryRow>(
    'SELECT version, kind, at, actor, changes FROM history WHERE plant_id = ? AND version < ? ORDER BY version DESC LIMIT ?')
  return (id, before, limit) => known.get(id, id) === 1 ? page.all(id, before ?? Number.MAX_SAFE_INTEGER, limit).map(toEntry) : undefined
}

/** The entries of a plant from `version` on, newest first (a revert's walk back), read inside the write. */
export function historySince (db: Database.Database): (id: number, version: number) => Array<{ version: number, changes: FieldChanges }> {
  const since = db.prepare<[number, number], { version: number, changes: string }>(
    'SELECT version, changes FROM history WHERE plant_id = ? AND version >= ? ORDER BY version DESC')
  return (id, version) => since.all(id, version).map((r) => ({ version: r.version, changes: JSON.parse(r.changes) as FieldChanges }))
}

/** How many rows one transaction of the retention purge deletes: the writer is never held long. */
const PURGE_BATCH = 2000

/**
 * Deletes the versions committed at or before `cutoff`: the rows before the first newer one, in
 * commit order, PURGE_BATCH a transaction. Returns how many went.
 */
export function purgeExpiredHistory (db: Database.Database, cutoff: number): number {
  const last = db.prepare<[number], number | null>(
    'SELECT coalesce((SELECT seq FROM history WHERE at > ? ORDER BY seq LIMIT 1) - 1, (SELECT max(seq) FROM history))').pluck()
  const remove = db.prepare<[number, number]>('DELETE FROM history WHERE seq IN (SELECT seq FROM history WHERE seq <= ? ORDER BY seq LIMIT ?)')
  const upTo = last.get(cutoff)
  if (upTo === null || upTo === undefined) return 0
  let purged = 0
  for (;;) {
    const n = db.transaction(() => remove.run(upTo, PURGE_BATCH).changes).immediate()
    purged += n
    if (n < PURGE_BATCH) return purged
  }
}
