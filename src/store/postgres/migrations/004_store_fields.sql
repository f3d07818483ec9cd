-- Store fields: description, price, SKU and barcode. Nullable columns without a default,
-- so adding them rewrites no row of a filled catalogue; then one index build each. Plants keep the
-- created_at and updated_at their rows have held since the first release.
ALTER TABLE plants ADD COLUMN description TEXT;
-- Integer cents: no binary float ever holds a price.
ALTER TABLE plants ADD COLUMN price BIGINT;
ALTER TABLE plants ADD COLUMN sku TEXT;
ALTER TABLE plants ADD COLUMN barcode TEXT;

-- One plant a SKU, ignoring case: the writes check first to name the holder; this index settles a
-- race between instances (exactly one commit wins, the other's group runs again and is refused).
CREATE UNIQUE INDEX plants_sku ON plants (lower(sku)) WHERE sku IS NOT NULL;
CREATE INDEX plants_barcode ON plants (barcode) WHERE barcode IS NOT NULL;
-- sort=price: an unpriced plant orders as 100000000000 cents, after every price (catalogue/query.ts
-- UNPRICED; list-query.ts writes the same expression).
CREATE INDEX plants_price ON plants ((coalesce(price, 100000000000)), id);
CREATE INDEX plants_updated ON plants (updated_at, id);

-- Records already in the feed and in Idempotency-Key answers gain the new members, so each keeps the
-- record's one shape. Times as the service writes them: RFC 3339, UTC, milliseconds.
CREATE FUNCTION pg_temp.iso (ms BIGINT) RETURNS TEXT LANGUAGE sql IMMUTABLE
  AS $$ SELECT to_char(to_timestamp(ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;
UPDATE changes c SET plant = left(c.plant, -1) ||
  ',"description":null,"price":null,"sku":null,"barcode":null,"createdAt":"' ||
  pg_temp.iso(coalesce((SELECT p.created_at FROM plants p WHERE p.id = c.plant_id), c.at)) || '","updatedAt":"' || pg_temp.iso(c.at) || '"}'
WHERE c.plant IS NOT NULL;
UPDATE idempotency_keys k SET response = left(k.response, -1) ||
  ',"description":null,"price":null,"sku":null,"barcode":null,"createdAt":"' ||
  pg_temp.iso(coalesce((SELECT p.created_at FROM plants p WHERE p.id = k.plant_id), k.created_at)) || '","updatedAt":"' ||
  pg_temp.iso(coalesce((SELECT p.updated_at FROM plants p WHERE p.id = k.plant_id), k.created_at)) || '"}'
WHERE k.response IS NOT NULL;
