-- Each attempt keeps what its receiver answered (the first 4 KiB, as text); NULL: no answer, or
-- recorded before this. A column without a default: instant on any table.
ALTER TABLE webhook_deliveries ADD COLUMN response TEXT;
