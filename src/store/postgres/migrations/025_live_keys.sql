-- The Idempotency-Keys among `wanted` used after `used_after`, looked up by the key's index always.
-- A sale group asks this of every key it takes (move-group.ts) in a statement prepared once a
-- connection, whose plan is made once and kept. Made while the table was small (a new service, a
-- table not analysed since), that plan read the whole table, or every key of the last day by the
-- created_at index, and went on doing so as each sale added a row: a group's CPU grew with the
-- keys. Here the plan is the function's own, made without sequential scans, and the key is the
-- only condition the scan is offered (OFFSET 0 keeps the created_at test out of it).
CREATE FUNCTION live_keys (wanted TEXT[], used_after BIGINT) RETURNS SETOF idempotency_keys
LANGUAGE plpgsql STABLE SET enable_seqscan = off AS $$
BEGIN
  RETURN QUERY SELECT * FROM (SELECT * FROM idempotency_keys k WHERE k.key = ANY (wanted) OFFSET 0) AS k WHERE k.created_at > used_after;
END
$$;
