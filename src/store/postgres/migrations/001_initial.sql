-- The catalogue on PostgreSQL. Applied once, in a transaction, under the migration lock.
-- Times are epoch milliseconds from the application's clock (as on SQLite), so tests can move time.

-- ALWAYS: ids come only from the sequence, which never goes back, so an id is never handed out twice.
CREATE TABLE plants (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name TEXT NOT NULL,
  category TEXT,
  tags TEXT[] NOT NULL,
  status TEXT NOT NULL,
  version INTEGER NOT NULL,
  created_at BIGINT NOT NULL,
  updated_at BIGINT NOT NULL
);
CREATE INDEX plants_status ON plants (status, id);
CREATE INDEX plants_category ON plants (category, id);

-- One row per tag so a tag filter walks (tag, plant_id) in id order instead of the catalogue.
CREATE TABLE plant_tags (
  tag TEXT NOT NULL,
  plant_id BIGINT NOT NULL REFERENCES plants (id) ON DELETE CASCADE,
  PRIMARY KEY (tag, plant_id)
);
CREATE INDEX plant_tags_plant ON plant_tags (plant_id);

-- A key is claimed by inserting its row in the transaction that creates the plant: a second
-- instance racing on the same key waits on the primary key, then sees the committed answer.
CREATE TABLE idempotency_keys (
  key TEXT PRIMARY KEY,
  request_hash TEXT NOT NULL,
  plant_id BIGINT,
  response TEXT,
  created_at BIGINT NOT NULL
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

-- The change feed's outbox, written in the same transaction as the change it records.
-- seq is assigned from meta.feed_head (see the store), not from a sequence: see why there.
CREATE TABLE changes (
  seq BIGINT PRIMARY KEY,
  kind TEXT NOT NULL,
  plant_id BIGINT NOT NULL,
  version INTEGER NOT NULL,
  plant TEXT,
  at BIGINT NOT NULL
);
CREATE INDEX changes_at ON changes (at);

-- feed_head: the last sequence number handed out; feed_floor: changes at or below it are purged.
CREATE TABLE meta (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO meta (key, value) VALUES ('feed_head', 0), ('feed_floor', 0);
