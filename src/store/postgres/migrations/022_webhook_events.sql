-- Each webhook attempt keeps what it sent (the change's kind, or stock.low / stock.out), so the
-- deliveries list shows and filters by it; NULL: recorded before. Nullable, no default: instant.
ALTER TABLE webhook_deliveries ADD COLUMN event TEXT;
