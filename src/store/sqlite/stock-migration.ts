import type Database from 'better-sqlite3'
import { MAIN_LOCATION } from '../../catalogue/stock.js'

// Stock on SQLite (catalogue/stock.ts): the totals live on the plant's row, so the finding filters
// and sorts walk indexes of the plants table; the levels per location and the ledger beside it.

/** Nullable totals (null: the plant does not track stock), the locations, the levels and the ledger. */
export const STOCK_MIGRATION = `
  ALTER TABLE plants ADD COLUMN low_stock_at INTEGER;
  ALTER TABLE plants ADD COLUMN on_hand INTEGER;
  ALTER TABLE plants ADD COLUMN reserved INTEGER;
  ALTER TABLE plants ADD COLUMN available INTEGER;
  -- sort=available: untracked plants order after every count (catalogue/query.ts UNPRICED), as
  -- unpriced ones do for sort=price; the expression is list-query.ts's, written alike.
  CREATE INDEX plants_available ON plants (coalesce(available, 100000000000), id);
  -- The filters: partial, so untracked plants (most of a catalogue that does not count stock) cost no entry.
  CREATE INDEX plants_in_stock ON plants (id) WHERE available > 0;
  CREATE INDEX plants_out_of_stock ON plants (id) WHERE available = 0;
  CREATE INDEX plants_low_stock ON plants (id) WHERE available <= low_stock_at;
  CREATE TABLE locations (name TEXT PRIMARY KEY, created_at INTEGER NOT NULL) STRICT, WITHOUT ROWID;
  INSERT INTO locations (name, created_at) VALUES ('main', 0);
  CREATE TABLE stock_levels (
    plant_id INTEGER NOT NULL,
    location TEXT NOT NULL,
    on_hand INTEGER NOT NULL,
    reserved INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (plant_id, location)
  ) STRICT, WITHOUT ROWID;
  -- A location's delete asks whether any plant holds stock there.
  CREATE INDEX stock_levels_location ON stock_levels (location, on_hand);
  -- The ledger: one row a movement, appended in the movement's transaction.
  CREATE TABLE stock_movements (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    plant_id INTEGER NOT NULL,
    at INTEGER NOT NULL,
    actor TEXT NOT NULL,
    location TEXT NOT NULL,
    delta INTEGER NOT NULL,
    reason TEXT NOT NULL,
    reference TEXT,
    on_hand_after INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX stock_movements_plant ON stock_movements (plant_id, seq);
  INSERT INTO meta (key, value) VALUES ('units_on_hand', 0), ('units_reserved', 0);
`

/** A movement's crossing into low or no stock, kept on its change (catalogue/changes.ts ChangeCrossing): null on every other change. */
export const STOCK_EVENTS_MIGRATION = `
  ALTER TABLE changes ADD COLUMN stock_events TEXT;
`

/** The stock filters' state of a row (`row.` is `new.` in a trigger): 1 in stock, 2 out of stock, 4 low; null untracked. */
const stockState = (row: string): string => `CASE WHEN ${row}available IS NULL THEN NULL ELSE (${row}available > 0) | ((${row}available = 0) << 1) | (coalesce(${row}available <= ${row}low_stock_at, 0) << 2) END`

/**
 * Migration 29, its stock part: the filters' partial indexes over the plant's state, not its count.
 * SQLite rewrites an index entry whenever an UPDATE sets a column the index names, its WHERE
 * included: every sale set \`available\` and so rewrote the plant's entry in \`plants_in_stock\` (a
 * random leaf a plant sold on a large catalogue), though the plant stayed in stock. \`stock_state\`
 * changes only when the plant crosses into or out of stock or low stock, set by the triggers below
 * (every write that sets the count or the threshold, whichever path it takes), and only then are
 * the three indexes written.
 */
export function stockStateMigration (db: Database.Database): void {
  if (db.prepare("SELECT 1 FROM pragma_table_info('plants') WHERE name = 'stock_state'").get() === undefined) db.exec('ALTER TABLE plants ADD COLUMN stock_state INTEGER')
  db.exec(`
  UPDATE plants SET stock_state = ${stockState('')} WHERE available IS NOT NULL;
  DROP INDEX IF EXISTS plants_in_stock;
  DROP INDEX IF EXISTS plants_out_of_stock;
  DROP INDEX IF EXISTS plants_low_stock;
  CREATE INDEX plants_in_stock ON plants (id) WHERE stock_state & 1;
  CREATE INDEX plants_out_of_stock ON plants (id) WHERE stock_state & 2;
  CREATE INDEX plants_low_stock ON plants (id) WHERE stock_state & 4;
  CREATE TRIGGER IF NOT EXISTS plants_stock_state AFTER UPDATE OF available, low_stock_at ON plants
    WHEN new.stock_state IS NOT ${stockState('new.')}
    BEGIN UPDATE plants SET stock_state = ${stockState('new.')} WHERE id = new.id; END;
  CREATE TRIGGER IF NOT EXISTS plants_stock_state_insert AFTER INSERT ON plants WHEN new.available IS NOT NULL
    BEGIN UPDATE plants SET stock_state = ${stockState('new.')} WHERE id = new.id; END;
  `)
}

/** stockState in JavaScript, for a write that inserts a tracked plant itself (writes.ts: a restore from the trash). */
export const stockStateOf = (available: number | null, lowStockAt: number | null): number | null =>
  available === null ? null : (available > 0 ? 1 : 0) | (available === 0 ? 2 : 0) | (lowStockAt !== null && available <= lowStockAt ? 4 : 0)

/**
 * Migration 30: no trigger on a plant's INSERT. With one, every INSERT into plants is a statement
 * that may run others (SQLite runs it with a sub-program and a statement journal to undo it by),
 * and every create paid for that, the largest part of what the writer thread's CPU per POST grew
 * by with stock (bench/results/issue-48-reads.md, "Stop 60"), to keep the state of a plant that,
 * new, never tracks stock. The one insert that can bring a tracked plant, a restore from the
 * trash, writes its state itself (stockStateOf).
 */
export const NO_INSERT_TRIGGER_MIGRATION = 'DROP TRIGGER IF EXISTS plants_stock_state_insert;'

/**
 * Migration 32: the trigger keeps the state after a change of the threshold alone. The writes that
 * set `available` (a movement, a reservation's step, stopping tracking: stock-writes.ts and
 * reservation-writes.ts) name stock_state themselves when it changes (stockStateOf). SQLite runs a
 * trigger as a sub-program on every UPDATE that names one of its columns, whether its WHEN holds or
 * not: that cost every sale's UPDATE about 4 µs of the writer's CPU (bench/results/issue-49-stock.md,
 * "Stop 63"). A PATCH names low_stock_at, as before, and keeps the trigger.
 */
export const THRESHOLD_TRIGGER_MIGRATION = `
  DROP TRIGGER plants_stock_state;
  CREATE TRIGGER plants_stock_state AFTER UPDATE OF low_stock_at ON plants
    WHEN new.stock_state IS NOT ${stockState('new.')}
    BEGIN UPDATE plants SET stock_state = ${stockState('new.')} WHERE id = new.id; END;
`

/**
 * Migration 33: main's level on the plant's own row (main_on_hand, main_reserved; null while the
 * plant has no level at main). Nearly every sale is at main, and its level's read and upsert in
 * stock_levels were two of the nine statements a sale's writer ran (against a PATCH's four), and a
 * B-tree's pages besides the plant's: on the row the movement already reads and updates, they cost
 * neither. stock_levels keeps the other locations' levels and, for a plant in the trash, its main
 * level as before (writes.ts moves it there on delete and back on restore): it never holds a main
 * row of a live plant, and levelsSql reads both as the one table. Re-runnable (a test sets an older
 * user_version on a catalogue already so): only the main rows still in stock_levels move.
 */
export function mainLevelMigration (db: Database.Database, progress: (message: string) => void): void {
  if (!mainOnRow(db)) db.exec('ALTER TABLE plants ADD COLUMN main_on_hand INTEGER; ALTER TABLE plants ADD COLUMN main_reserved INTEGER;')
  const levels = db.prepare("SELECT count(*) FROM stock_levels WHERE location = 'main'").pluck().get() as number
  if (levels > 100_000) progress(`migration 33: main's level onto the plant's row for ${levels} plants`)
  db.exec(`
  UPDATE plants SET main_on_hand = l.on_hand, main_reserved = l.reserved FROM stock_levels l WHERE l.plant_id = plants.id AND l.location = 'main';
  DELETE FROM stock_levels WHERE location = 'main' AND plant_id IN (SELECT id FROM plants);
  `)
}

/** Whether the catalogue keeps main's level on the plant's row (migration 33; a backup or copy may be older). */
export const mainOnRow = (db: Database.Database): boolean =>
  db.prepare("SELECT 1 FROM pragma_table_info('plants') WHERE name = 'main_on_hand'").get() !== undefined

/**
 * Every level as the one table stock_levels was before migration 33, in (plant_id, location)
 * order: stock_levels and the live plants' main levels, merged as both are read in that order (no
 * sort). `plants`, when given, narrows both to the plant ids an SQL condition names (`= @id`).
 */
export const levelsSql = (plants?: string): string => `
  SELECT plant_id, location, on_hand, reserved FROM stock_levels${plants === undefined ? '' : ` WHERE plant_id ${plants}`}
  UNION ALL
  SELECT id, '${MAIN_LOCATION}', main_on_hand, main_reserved FROM plants WHERE main_on_hand IS NOT NULL${plants === undefined ? '' : ` AND id ${plants}`}
  ORDER BY plant_id, location`
