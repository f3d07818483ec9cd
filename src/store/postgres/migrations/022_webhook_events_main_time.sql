-- Each webhook attempt keeps what it sent (the change's kind, or stock.low / stock.out), so the
-- deliveries list shows and filters by it; NULL: recorded before. Nullable, no default: instant.
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS event TEXT;
-- main was made with created_at 0 (listed as 1970): it gets the time the stock part was set up
-- (migration 018's, which schema_migrations keeps), or an earlier record of stock (a movement,
-- another location, a reservation) should there be one; LEAST passes over the NULLs of none.
UPDATE locations SET created_at = LEAST(
  coalesce((SELECT (extract(epoch FROM applied_at) * 1000)::bigint FROM schema_migrations WHERE version = 18), (extract(epoch FROM now()) * 1000)::bigint),
  (SELECT min(at) FROM stock_movements),
  (SELECT min(created_at) FROM locations WHERE name <> 'main'),
  (SELECT min(created_at) FROM reservations))
WHERE name = 'main' AND created_at = 0;
