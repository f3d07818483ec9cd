import type Database from 'better-sqlite3'
import type { Photo } from '../../catalogue/photo.js'
import type { StoredPlant } from '../../catalogue/plant.js'
import { purgeInBatches } from '../../catalogue/purge.js'
import type { TrashedPlant, TrashPosition } from '../../catalogue/trash.js'
import { historyForgetter } from './history.js'
import { photoFiles } from './photo-writes.js'
import { ledgerForgetter } from './stock-ledger.js'

// The trash on SQLite. A deleted plant leaves the plants table (and its tag rows, counts and search
// index) exactly as before, so lists and searches pay nothing for the trash; its record, photos
// included, moves to a table of its own, and its photo files keep the reference the trash now holds.

/** The trash's migration: the table of deleted plants. */
export const TRASH_MIGRATION = `
  CREATE TABLE trash (
    -- The plant's id: a restore brings it back under it.
    id INTEGER PRIMARY KEY,
    -- The stored plant as it was when deleted (JSON: the record and its version).
    plant TEXT NOT NULL,
    -- The deleted change's version: a restore's If-Match names it.
    version INTEGER NOT NULL,
    trashed_at INTEGER NOT NULL,
    trashed_by TEXT
  ) STRICT;
  -- The list (newest first) and the retention purge (oldest first) walk this.
  CREATE INDEX trash_at ON trash (trashed_at, id);
`

interface TrashRow { id: number, plant: string, version: number, trashed_at: number, trashed_by: string | null }

const toTrashed = (r: TrashRow): TrashedPlant =>
  ({ plant: JSON.parse(r.plant) as StoredPlant, version: r.version, trashedAt: r.trashed_at, trashedBy: r.trashed_by })

/** A page of the trash, newest first, after `after` (the last entry of the page before). */
export function trashReader (db: Database.Database): (after: TrashPosition | undefined, limit: number) => TrashedPlant[] {
  const first = db.prepare<[number], TrashRow>('SELECT id, plant, version, trashed_at, trashed_by FROM trash ORDER BY trashed_at DESC, id DESC LIMIT ?')
  const next = db.prepare<[number, number, number], TrashRow>(
    'SELECT id, plant, version, trashed_at, trashed_by FROM trash WHERE (trashed_at, id) < (?, ?) ORDER BY trashed_at DESC, id DESC LIMIT ?')
  return (after, limit) => (after === undefined ? first.all(limit) : next.all(after.trashedAt, after.id, limit)).map(toTrashed)
}

/** One plant's entry in the trash, if it is there. */
export function trashEntryReader (db: Database.Database): (id: number) => TrashedPlant | undefined {
  const one = db.prepare<[number], TrashRow>('SELECT id, plant, version, trashed_at, trashed_by FROM trash WHERE id = ?')
  return (id) => {
    const row = one.get(id)
    return row === undefined ? undefined : toTrashed(row)
  }
}

/**
 * A purged plant's stock goes with it: its levels (else a location it held stock at could never be
 * deleted) and its ledger (walked from `ledgerHead`, trash.ledger_seq), which is kept as long as the
 * plant's history. Trashing already took its units out of the inventory, so no count moves here.
 */
export function stockForgetter (db: Database.Database): (id: number, ledgerHead: number | null) => void {
  const levels = db.prepare('DELETE FROM stock_levels WHERE plant_id = ?')
  const ledger = ledgerForgetter(db)
  return (id, ledgerHead) => { levels.run(id); ledger(id, ledgerHead) }
}

/** How many entries one transaction of the retention purge takes: a purge never holds the writer long. */
const PURGE_BATCH = 200

/**
 * Purges the entries trashed at or before `cutoff`, oldest first, PURGE_BATCH a transaction: each
 * entry goes with the references its photos held, and a file nothing names any more with them, and
 * its history.
 * Only trash rows are deleted, so a crash at any point loses nothing outside the trash.
 */
export function purgeExpiredTrash (db: Database.Database, cutoff: number): number {
  const oldest = db.prepare<[number, number], { id: number, plant: string, history_seq: number | null, ledger_seq: number | null }>(
    'SELECT id, plant, history_seq, ledger_seq FROM trash WHERE trashed_at <= ? ORDER BY trashed_at, id LIMIT ?')
  const remove = db.prepare('DELETE FROM trash WHERE id = ?')
  // Purged for good: its history goes with it (GET …/history is then 404, as for any unknown id).
  const forget = historyForgetter(db)
  const forgetStock = stockForgetter(db)
  const files = photoFiles(db)
  return purgeInBatches((batch) => db.transaction(() => {
    const rows = oldest.all(cutoff, batch)
    for (const row of rows) {
      files.release((JSON.parse(row.plant) as { photos: Photo[] }).photos)
      remove.run(row.id)
      forget(row.id, row.history_seq)
      forgetStock(row.id, row.ledger_seq)
    }
    return rows.length
  }).immediate(), PURGE_BATCH)
}
