-- Photos. A plant's photo records ride in its row (JSON text, in the order added), so
-- reads need no join. The files are bytea rows in the same database: every instance serves every
-- photo, and a file is written in the transaction that names it. refs counts the photos naming a
-- file; the transaction that brings it to 0 deletes the row.
ALTER TABLE plants ADD COLUMN photos TEXT NOT NULL DEFAULT '[]';
CREATE TABLE photo_files (
  name TEXT PRIMARY KEY,
  refs INTEGER NOT NULL,
  bytes BYTEA NOT NULL
);
-- JPEG, PNG and WebP are compressed already: TOAST stores them out of line without trying again.
ALTER TABLE photo_files ALTER COLUMN bytes SET STORAGE EXTERNAL;

-- Every stored record gains photos, so the feed and idempotent replays serve the record's one shape.
UPDATE changes SET plant = left(plant, -1) || ',"photos":[]}' WHERE plant IS NOT NULL;
UPDATE idempotency_keys SET response = left(response, -1) || ',"photos":[]}' WHERE response IS NOT NULL;
