-- Reservations (catalogue/reservation.ts): a checkout's hold on units of plants, committed into
-- sales, released, or expired by whichever instance holds the expirer's lease (one row of leases).
CREATE TABLE reservations (
  id TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  lines TEXT NOT NULL,
  created_at BIGINT NOT NULL,
  expires_at BIGINT NOT NULL,
  ended_at BIGINT,
  actor TEXT NOT NULL
);
-- The expirer walks the held ones by expiry; ended ones are forgotten by age.
CREATE INDEX reservations_held ON reservations (expires_at) WHERE state = 'held';
CREATE INDEX reservations_ended ON reservations (ended_at) WHERE state <> 'held';
CREATE TABLE leases (name TEXT PRIMARY KEY, owner TEXT, lease_until BIGINT);
INSERT INTO leases (name) VALUES ('reservation-expirer');
