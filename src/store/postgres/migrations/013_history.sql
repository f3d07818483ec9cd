-- Plants' history: one row per version, written in the same transaction as the change,
-- with only the changed fields ([before, after] each). A new table: instant on any catalogue.
CREATE TABLE history (
  plant_id BIGINT NOT NULL,
  -- Epoch milliseconds, as every time here.
  at BIGINT NOT NULL,
  version INTEGER NOT NULL,
  -- 0 created, 1 updated, 2 deleted (catalogue/history.ts KIND_CODES).
  kind SMALLINT NOT NULL,
  actor TEXT NOT NULL,
  -- JSON text (not jsonb: never queried inside, and smaller).
  changes TEXT NOT NULL
);
-- A plant's page, newest first, and a revert's walk back.
CREATE INDEX history_plant ON history (plant_id, version);
-- The retention purge: rows are appended in time order, so a block-range index finds the old ones
-- for a few bytes per thousand rows.
CREATE INDEX history_at ON history USING brin (at);
