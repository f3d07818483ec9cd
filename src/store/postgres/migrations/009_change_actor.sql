-- Who made each change: the key's name, 'anonymous' without one, 'cli' for the command line.
-- A constant default: PostgreSQL 11+ adds the column without rewriting the table.
ALTER TABLE changes ADD COLUMN actor TEXT NOT NULL DEFAULT 'anonymous';
