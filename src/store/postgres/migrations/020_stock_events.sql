-- A movement's crossing into low or no stock (webhooks stock.low / stock.out), kept on its change
-- (catalogue/changes.ts ChangeCrossing): null on every other change. Nullable, no default: instant.
ALTER TABLE changes ADD COLUMN stock_events TEXT;
