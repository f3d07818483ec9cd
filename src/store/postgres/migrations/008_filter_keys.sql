-- Category and tag filters ignore the case of A–Z: lower() under the "C" collation folds
-- those letters alone, as SQLite's lower() and the application's filterKey do, so both engines find
-- the same plants. The category index by its key replaces the one by its value; tag rows gain one.
CREATE INDEX plants_category_key ON plants (lower(category COLLATE "C"), id);
DROP INDEX plants_category;
CREATE INDEX plant_tags_key ON plant_tags (lower(tag COLLATE "C"), plant_id);
