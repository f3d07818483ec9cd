-- q, second round: accents ignored and short terms at the start of a word. Both columns
-- are computed by the application (search-columns.ts, the same JavaScript as SQLite's index) and
-- filled at start-up for the plants already there, as name_key was; added empty, so this rewrites
-- no row. The name key's trigram index gives way to the folded key's.
ALTER TABLE plants ADD COLUMN search_key TEXT COLLATE "C", ADD COLUMN search_starts TEXT[];
DROP INDEX plants_name_trgm;
DO $$
DECLARE
  home TEXT := (SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm');
BEGIN
  EXECUTE format('CREATE INDEX plants_search_trgm ON plants USING gin (search_key %I.gin_trgm_ops)', home);
END
$$;
CREATE INDEX plants_search_starts ON plants USING gin (search_starts);
