-- The trash. A deleted plant leaves the plants table (its tag rows, counts and search
-- columns with it) exactly as before, so lists and searches pay nothing for the trash; its record,
-- photos included, moves here, and its photo files keep the reference the trash now holds.
CREATE TABLE trash (
  -- The plant's id: a restore brings it back under it.
  id BIGINT PRIMARY KEY,
  -- The stored plant as it was when deleted (JSON: the record and its version).
  plant TEXT NOT NULL,
  -- The deleted change's version: a restore's If-Match names it.
  version INTEGER NOT NULL,
  trashed_at BIGINT NOT NULL,
  trashed_by TEXT
);
-- The list (newest first) and the retention purge (oldest first) walk this.
CREATE INDEX trash_at ON trash (trashed_at, id);
