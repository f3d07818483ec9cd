import type Database from 'better-sqlite3'
import { HistoryCursorGone } from '../../catalogue/errors.js'
import { cursorBeforeRestore, entryOf, kindOfCode, type FieldChanges, type HistoryEntry, type RestoredPast } from '../../catalogue/history.js'
import { purgeInBatches } from '../../catalogue/purge.js'
import { timestamp } from '../../catalogue/price-sku-barcode.js'
import { chainForgetter } from './chains.js'

// Plants' history on SQLite (catalogue/history.ts). Rows are appended in commit order (seq), so
// the retention purge walks the oldest first and needs no index on time. Only the changed values
// are stored, with a few bytes around them.
//
// A plant's versions are a chain, newest first: the plant's row (or its trash row) names its
// newest entry (history_seq), and each entry the one before it (prev). There is no index on
// (plant_id, version): its entry for each write fell on a random page of its own, which the WAL
// then wrote whole at every commit. With it, PUT and PATCH ran at 0.78 and 0.76 of the service's
// req/s before history (bench, 5 rounds); with the chain, the plant's row (written anyway) holds
// the head and the entry is an append.

/** The history's migration: a new table and two empty columns, so it is instant on any catalogue. */
export const HISTORY_MIGRATION = `
  CREATE TABLE history (
    -- Commit order: the retention purge deletes from the lowest up.
    seq INTEGER PRIMARY KEY,
    plant_id INTEGER NOT NULL,
    version INTEGER NOT NULL,
    -- 0 created, 1 updated, 2 deleted; later 3 reverted, 4 restored (catalogue/history.ts KIND_CODES).
    kind INTEGER NOT NULL,
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    -- JSON: each changed field with [before, after].
    changes TEXT NOT NULL,
    -- The plant's entry before this one (its seq), null for its first.
    prev INTEGER
  ) STRICT;
  -- The seq of the plant's newest entry.
  ALTER TABLE plants ADD COLUMN history_seq INTEGER;
  ALTER TABLE trash ADD COLUMN history_seq INTEGER;
`

/**
 * Reverts and restores get kinds of their own (catalogue/history.ts KIND_CODES: 3 and 4). A restore
 * was written as created (0) with no changes, where a creation always lists its name: it becomes
 * restored (told by what it holds, not its version, which a restore from a backup moves up). A
 * revert was written as updated (1), which nothing tells apart from an update: it stays so. One pass
 * over the history, rewriting only the restores.
 */
export const HISTORY_KINDS_MIGRATION = "UPDATE history SET kind = 4 WHERE kind = 0 AND changes = '{}'"

/** The statement every write records its version with (writes.ts), in its own transaction; its rowid is the plant's new history_seq. */
export const INSERT_HISTORY = 'INSERT INTO history (plant_id, version, kind, at, actor, changes, prev) VALUES (?, ?, ?, ?, ?, ?, ?)'

interface HistoryRow { seq: number, plant_id: number, prev: number | null, version: number, kind: number, at: number, actor: string, changes: string }

/**
 * A plant's entries from `head` back, newest first. It stops where the chain does: at the first
 * entry, at one the retention purge took, or at a seq that is no longer this plant's (a purged
 * seq SQLite handed out again) or not older than the one before (so it always ends).
 */
function chainWalker (db: Database.Database): (id: number, head: number | null) => Generator<HistoryRow> {
  const entry = db.prepare<[number], HistoryRow>('SELECT seq, plant_id, prev, version, kind, at, actor, changes FROM history WHERE seq = ?')
  return function * (id, head) {
    let seq = head
    let newer = Infinity
    while (seq !== null && seq < newer) {
      const row = entry.get(seq)
      if (row === undefined || row.plant_id !== id) return
      yield row
      newer = seq
      seq = row.prev
    }
  }
}

/** The seq of a plant's newest entry: live or in the trash; undefined when no plant has the id. */
function headReader (db: Database.Database): (id: number) => { head: number | null } | undefined {
  const head = db.prepare<[number, number], { head: number | null }>(
    'SELECT history_seq AS head FROM plants WHERE id = ? UNION ALL SELECT history_seq FROM trash WHERE id = ?')
  return (id) => head.get(id, id)
}

const toEntry = (r: HistoryRow): HistoryEntry =>
  ({ version: r.version, at: timestamp(r.at), actor: r.actor, kind: kindOfCode(r.kind), ...entryOf(r.changes) })

/**
 * A page of a plant's history, newest first, below `before`; undefined when no plant, live or
 * trashed, has the id. A later page walks the chain from the newest entry: an entry costs a
 * lookup by seq (about a microsecond), so even a plant of 10,000 versions is read in milliseconds.
 */
export function historyReader (db: Database.Database): (id: number, before: number | undefined, limit: number) => HistoryEntry[] | undefined {
  const headOf = headReader(db)
  const walk = chainWalker(db)
  const restored = restoredPast(db)
  return (id, before, limit) => {
    const known = headOf(id)
    if (known === undefined) return undefined
    if (cursorBeforeRestore(id, before, restored())) throw new HistoryCursorGone()
    const page: HistoryEntry[] = []
    for (const row of walk(id, known.head)) {
      if (page.length === limit) break
      if (before === undefined || row.version < before) page.push(toEntry(row))
    }
    return page
  }
}

/** What the last restore moved past (restore-marks.ts keeps it in meta); undefined when never restored. */
function restoredPast (db: Database.Database): () => RestoredPast | undefined {
  const read = db.prepare<[], [number, number]>(
    "SELECT l.value, v.value FROM meta l JOIN meta v ON v.key = 'restore_version_shift' WHERE l.key = 'restore_last_id'").raw(true)
  return () => {
    const row = read.get()
    return row === undefined ? undefined : { lastId: row[0], versionShift: row[1] }
  }
}

/** The entries of a plant from `version` on, newest first (a revert's walk back), read inside the write. */
export function historySince (db: Database.Database): (id: number, head: number | null, version: number) => Array<{ version: number, changes: FieldChanges }> {
  const walk = chainWalker(db)
  return (id, head, version) => {
    const entries: Array<{ version: number, changes: FieldChanges }> = []
    for (const row of walk(id, head)) {
      if (row.version < version) break
      entries.push({ version: row.version, changes: JSON.parse(row.changes) as FieldChanges })
    }
    return entries
  }
}

/** Deletes a purged plant's entries, walking its chain from `head` (trash.history_seq). */
export const historyForgetter = (db: Database.Database): (id: number, head: number | null) => void =>
  chainForgetter(db, 'history', chainWalker(db))

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
  return purgeInBatches((batch) => db.transaction(() => remove.run(upTo, batch).changes).immediate(), PURGE_BATCH)
}
