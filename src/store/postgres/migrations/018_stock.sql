-- Stock (catalogue/stock.ts). The totals live on the plant's row (null: the plant does not track
-- stock), so the finding filters and sorts walk indexes of plants; a movement is one conditional
-- UPDATE of that row (WHERE available >= n), which PostgreSQL serialises on the row's lock across
-- instances. Nullable columns without a default: instant on any catalogue.
ALTER TABLE plants ADD COLUMN low_stock_at BIGINT, ADD COLUMN on_hand BIGINT, ADD COLUMN reserved BIGINT, ADD COLUMN available BIGINT;
-- sort=available: untracked plants order after every count, as unpriced ones do for sort=price
-- (catalogue/query.ts UNPRICED; list-query.ts writes the expression alike).
CREATE INDEX plants_available ON plants ((coalesce(available, 100000000000)), id);
-- The filters: partial, so untracked plants cost no entry.
CREATE INDEX plants_in_stock ON plants (id) WHERE available > 0;
CREATE INDEX plants_out_of_stock ON plants (id) WHERE available = 0;
CREATE INDEX plants_low_stock ON plants (id) WHERE available <= low_stock_at;
CREATE TABLE locations (name TEXT PRIMARY KEY, created_at BIGINT NOT NULL);
INSERT INTO locations (name, created_at) VALUES ('main', 0);
CREATE TABLE stock_levels (
  plant_id BIGINT NOT NULL,
  location TEXT NOT NULL,
  on_hand BIGINT NOT NULL,
  reserved BIGINT NOT NULL DEFAULT 0,
  PRIMARY KEY (plant_id, location)
);
-- A location's delete asks whether any plant holds stock there.
CREATE INDEX stock_levels_location ON stock_levels (location, on_hand);
-- The ledger: one row a movement, appended in the movement's transaction.
CREATE TABLE stock_movements (
  seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  plant_id BIGINT NOT NULL,
  at BIGINT NOT NULL,
  actor TEXT NOT NULL,
  location TEXT NOT NULL,
  delta BIGINT NOT NULL,
  reason TEXT NOT NULL,
  reference TEXT,
  on_hand_after BIGINT NOT NULL
);
CREATE INDEX stock_movements_plant ON stock_movements (plant_id, seq);
-- Kept by every movement beside the status counts (the same names: count_…), for the inventory's units.
INSERT INTO meta (key, value) VALUES ('count_units_on_hand', 0), ('count_units_reserved', 0);
