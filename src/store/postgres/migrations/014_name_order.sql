-- sort=name reads names as people do (catalogue/name-order.ts: accents and case folded, numbers by
-- value). The order key is computed by the application, as on SQLite: added empty, so this rewrites
-- no row, and filled at start-up in batches of 20,000 (name-keys.ts fillNameKeyColumn), as name_key
-- was. Its index also finds the plants still without one. name_key and its index stay: the command
-- line finds plants by name through them.
-- COLLATE "C": compared byte by byte, which in UTF-8 is Unicode code point order, as on SQLite.
ALTER TABLE plants ADD COLUMN name_order_key TEXT COLLATE "C";
CREATE INDEX plants_name_order ON plants (name_order_key, id);
