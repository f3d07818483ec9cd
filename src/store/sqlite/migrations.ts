import type Database from 'better-sqlite3'

// Versioned by PRAGMA user_version; each step runs in its own transaction. Append, never edit.
const MIGRATIONS: string[] = [
  `
  -- AUTOINCREMENT: an id is never handed out again, not even after the highest plant is deleted.
  CREATE TABLE plants (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    category TEXT,
    tags TEXT NOT NULL,
    status TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX plants_status ON plants (status, id);
  CREATE INDEX plants_category ON plants (category, id);
  -- One row per tag so a tag filter walks an index instead of the catalogue.
  CREATE TABLE plant_tags (
    tag TEXT NOT NULL,
    plant_id INTEGER NOT NULL,
    PRIMARY KEY (tag, plant_id)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE idempotency_keys (
    key TEXT PRIMARY KEY,
    request_hash TEXT NOT NULL,
    plant_id INTEGER NOT NULL,
    response TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
  -- The change feed's outbox: written in the same transaction as the change it records.
  CREATE TABLE changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    plant_id INTEGER NOT NULL,
    version INTEGER NOT NULL,
    plant TEXT,
    at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX changes_at ON changes (at);
  CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;
  INSERT INTO meta (key, value) VALUES ('feed_floor', 0);
  `,
  `
  -- PUT and DELETE replace a plant's tags by plant_id; the primary key leads with tag, so without
  -- this index each of them scanned every tag row of the catalogue.
  CREATE INDEX plant_tags_plant ON plant_tags (plant_id);
  `,
  `
  -- Every write paid for this index in the outbox; the hourly purge now walks the oldest changes
  -- in seq order instead (times follow seq), so it is not needed.
  DROP INDEX changes_at;
  `,
  `
  -- A plant's tag rows are exactly its tags column, so an update or delete names each row by
  -- (tag, plant_id), the primary key. This index cost every write a B-tree insert per tag, and a
  -- random page per changed tag on a large catalogue.
  DROP INDEX plant_tags_plant;
  `,
  `
  -- Photos (issue 13). A plant's photo records ride in its row (JSON, in the order added), so reads
  -- need no join. The files live here too, as BLOBs in the same database: they commit, back up and
  -- restore with the record that names them. refs counts the photos naming a file; a file whose
  -- count reaches 0 is deleted in that same transaction.
  ALTER TABLE plants ADD COLUMN photos TEXT NOT NULL DEFAULT '[]';
  CREATE TABLE photo_files (
    name TEXT PRIMARY KEY,
    refs INTEGER NOT NULL,
    bytes BLOB NOT NULL
  ) STRICT;
  -- Every stored record gains photos, so the feed and idempotent replays serve the record's one shape.
  UPDATE changes SET plant = substr(plant, 1, length(plant) - 1) || ',"photos":[]}' WHERE plant IS NOT NULL;
  UPDATE idempotency_keys SET response = substr(response, 1, length(response) - 1) || ',"photos":[]}';
  `
]

export function migrate (db: Database.Database): void {
  // BEGIN IMMEDIATE takes the write lock first, so processes starting together apply each step once.
  for (;;) {
    const step = db.transaction(() => {
      const current = db.pragma('user_version', { simple: true }) as number
      if (current >= MIGRATIONS.length) return false
      db.exec(MIGRATIONS[current])
      db.pragma(`user_version = ${current + 1}`)
      return true
    })
    if (!step.immediate()) return
  }
}
