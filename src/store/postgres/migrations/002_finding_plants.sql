-- Finding plants: q searches trigrams of the lower-cased name, sort=name walks it in order, and the
-- inventory reads counts kept by every write. Safe on a filled catalogue: the key is added empty and
-- filled at start-up by the application (JavaScript's toLowerCase, as every write computes it).
-- An extension is one per database: it goes to public (or stays where a DBA put it), not into the
-- catalogue's schema, where dropping the schema would take it from every other schema too.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

-- COLLATE "C": compared byte by byte, which in UTF-8 is Unicode code point order, as on SQLite.
ALTER TABLE plants ADD COLUMN name_key TEXT COLLATE "C";
CREATE INDEX plants_name ON plants (name_key, id);
DO $$
DECLARE
  home TEXT := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm');
BEGIN
  EXECUTE format('CREATE INDEX plants_name_trgm ON plants USING gin (name_key %I.gin_trgm_ops)', home);
END
$$;

-- The number of plants of each status, changed in the transaction of every write that changes it.
INSERT INTO meta (key, value)
SELECT 'count_' || s, (SELECT count(*) FROM plants WHERE status = s)
FROM unnest(ARRAY['available', 'pending', 'sold']) AS s;
