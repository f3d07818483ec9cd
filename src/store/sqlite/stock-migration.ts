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
