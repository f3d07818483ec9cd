-- Webhooks: subscriptions to the change feed, each with its delivery cursor and attempt
-- state, and a short log of attempts. Times are epoch milliseconds, as the store hands them out;
-- the delivery lease is the database's own clock, so instances with skewed clocks still agree.
CREATE TABLE webhooks (
  id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  status TEXT NOT NULL,
  secret TEXT NOT NULL,
  previous_secret TEXT,
  previous_secret_until BIGINT,
  -- The last change delivered: delivery resumes after it.
  cursor BIGINT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at BIGINT,
  failing_since BIGINT,
  last_error TEXT,
  -- The instance delivering this webhook until lease_until; another takes it over once that passes.
  lease_owner TEXT,
  lease_until TIMESTAMPTZ,
  created_at BIGINT NOT NULL
);
CREATE TABLE webhook_deliveries (
  n BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  webhook_id BIGINT NOT NULL,
  seq BIGINT NOT NULL,
  attempt INTEGER NOT NULL,
  at BIGINT NOT NULL,
  status_code INTEGER,
  error TEXT,
  duration_ms INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, n);
