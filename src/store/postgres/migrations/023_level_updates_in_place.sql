-- Every movement rewrites its level's on_hand (a reservation its reserved). With on_hand in an index
-- no such update could be HOT: each wrote a new row version elsewhere and an entry in every index of
-- the table. The one read by location, a location's delete asking whether any plant holds stock
-- there, tests on_hand and reserved on the row anyway (reserved was never in the index), so the
-- location alone serves it. Free room left in each page (fillfactor) keeps a level's new version on
-- its page from the first movement on, not only once earlier versions have been pruned.
DROP INDEX IF EXISTS stock_levels_location;
CREATE INDEX stock_levels_location ON stock_levels (location);
ALTER TABLE stock_levels SET (fillfactor = 80);
