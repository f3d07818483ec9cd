-- A category sorted by name, price or update time walks its own rows in that order: ferns named
-- alike sit together among the names, so a walk of the whole name index for them passed most of
-- the catalogue first. The expressions are list-query.ts's, written alike.
CREATE INDEX plants_category_name ON plants (lower(category COLLATE "C"), name_order_key, id);
CREATE INDEX plants_category_price ON plants (lower(category COLLATE "C"), COALESCE(price, 100000000000), id);
CREATE INDEX plants_category_updated ON plants (lower(category COLLATE "C"), updated_at, id);
