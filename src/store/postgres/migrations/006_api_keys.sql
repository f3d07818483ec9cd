-- API keys: one row a key, found by the SHA-256 of its secret (hex); the secret is never
-- stored. Revoked keys keep their row and name: the feed and the logs name keys, and a name that
-- came back would make those ambiguous.
CREATE TABLE api_keys (
  name TEXT PRIMARY KEY,
  scope TEXT NOT NULL CHECK (scope IN ('read', 'sell', 'write', 'admin')),
  hash TEXT NOT NULL UNIQUE,
  created_at TIMESTAMPTZ NOT NULL,
  expires_at TIMESTAMPTZ,
  last_used_at TIMESTAMPTZ,
  revoked_at TIMESTAMPTZ
);
