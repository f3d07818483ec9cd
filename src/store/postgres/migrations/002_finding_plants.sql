-- Finding plants: q searches trigrams of the lower-cased name, sort=name walks it in order, and the
-- inventory reads counts kept by every write. Safe on a filled catalogue: the key is added empty and
-- filled at start-up by the application (JavaScript's toLowerCase, as every write computes it).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

-- COLLATE "C": compared byte by byte, which in UTF-8 is Unicode code point order, as on SQLite.
ALTER TABLE plants ADD COLUMN name_key TEXT COLLATE "C";
CREATE INDEX plants_name ON plants (name_key, id);
CREATE INDEX plants_name_trgm ON plants USING gin (name_key gin_trgm_ops);

-- The number of plants of each status, changed in the transaction of every write that changes it.
INSERT INTO meta (key, value)
SELECT 'count_' || s, (SELECT count(*) FROM plants WHERE status = s)
FROM unnest(ARRAY['available', 'pending', 'sold']) AS s;
