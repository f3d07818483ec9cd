import { KIND_CODES } from '../../catalogue/history.js'
import { MAIN_LOCATION } from '../../catalogue/stock.js'
import { ROW_COLUMNS } from './group-writes.js'

// The statements of a group's stock movements (move-group.ts says how a group runs them).

/**
 * A plant's levels, found by their index. This statement and the write's are prepared and keep one
 * plan, made for a table that is small or not analysed yet: plant_id = ANY (…), or a join, was planned
 * as a sequential scan, which read every plant's level in each group (bench/results/issue-49-stock.md).
 * A subquery per plant that is not pulled up (OFFSET 0) is one key's lookup: planned by the index.
 */
const BY_INDEX = (id: string): string => `SELECT plant_id, location, on_hand, reserved FROM stock_levels s WHERE s.plant_id = ${id} OFFSET 0`

/** The lock-and-read statement, over the plant ids, location names and keys' earlier uses (a json array) given as SQL expressions. */
const prepare = (ids: string, places: string, earlier: string): string => `
WITH locked AS (
  SELECT ${ROW_COLUMNS} FROM plants WHERE id = ANY (${ids}) ORDER BY id FOR UPDATE
), places AS (
  SELECT name FROM locations WHERE name = ANY (${places}) FOR SHARE
)
SELECT (SELECT coalesce(json_agg(l), '[]') FROM (SELECT locked.*, (SELECT s.version FROM plants s WHERE s.id = locked.id) AS seen FROM locked) AS l) AS plants,
  (SELECT coalesce(array_agg(name), '{}') FROM places) AS places,
  (SELECT coalesce(json_agg(v), '[]') FROM (SELECT v.* FROM unnest(${ids}) AS i (id), LATERAL (${BY_INDEX('i.id')}) AS v) AS v) AS levels,
  ${earlier} AS earlier`
export const PREPARE = prepare('$1::bigint[]', '$4::text[]',
  "(SELECT coalesce(json_agg(e), '[]') FROM (SELECT key, request_hash, response, created_at FROM live_keys($2::text[], $3)) AS e)")
/**
 * The same for a group whose movements all take the main location, prepared once a connection (SQL
 * PREPARE) and run as `BEGIN; EXECUTE …` in one simple query: a round trip less. No text from a
 * request goes in: the ids are integers, written in as an array literal, and the keys are looked
 * for by the write. (The statement with the ids written into its text cost PostgreSQL three times
 * the CPU of BEGIN, the parameterised statement and ROLLBACK: planned anew each time; EXECUTE keeps
 * its plan.)
 */
export const LOCK_MAIN = `PREPARE stock_move_lock (bigint[]) AS ${prepare('$1', `'{${MAIN_LOCATION}}'::text[]`, "'[]'::json")}`

// A new statement: its snapshot has every commit the locks waited for.
export const LEVELS = 'SELECT plant_id, location, on_hand, reserved FROM stock_levels WHERE plant_id = ANY ($1::bigint[])'

/**
 * How the keys are written. A group's first run finds none of its keys in the table (the write looks,
 * expired ones included: $6 is below every time), so it inserts them plainly; an INSERT … ON
 * CONFLICT checks the key's index before each row and confirms each row in a WAL record of its own
 * (bench/results/issue-49-stock.md, stop 61). A key inserted meanwhile by a request in
 * flight on another instance is a unique violation there, and the group runs again (KeyRaced), with
 * the keys read and this upsert, which takes over an expired key's row.
 */
const CLAIM_NEW = `INSERT INTO idempotency_keys (key, request_hash, plant_id, response, created_at)
  SELECT idem, hash, plant_id, answer_head || seq || answer_tail, $1 FROM m WHERE idem IS NOT NULL
  RETURNING 1`
const CLAIM_AGAIN = `INSERT INTO idempotency_keys AS k (key, request_hash, plant_id, response, created_at)
  SELECT idem, hash, plant_id, answer_head || seq || answer_tail, $1 FROM m WHERE idem IS NOT NULL
  ON CONFLICT (key) DO UPDATE SET request_hash = EXCLUDED.request_hash, plant_id = EXCLUDED.plant_id, response = EXCLUDED.response, created_at = EXCLUDED.created_at
  WHERE k.created_at <= $6
  RETURNING 1`

/**
 * Every write of the group's applied movements. The ledger's positions are drawn from its sequence
 * in the movements' order (the subquery sorted first), and put into the texts that carry them (a
 * key's answer, a change's stock events) between the halves the caller split them into.
 * The plant and key rows are locked already (PREPARE); feed_head's is taken last, as group-commit.ts says.
 */
const write = (claim: string): string => `
WITH m AS (
  -- The sequence's name looked up once (a subquery), not a row: each lookup reads the catalogue.
  SELECT nextval((SELECT pg_get_serial_sequence('stock_movements', 'seq'))) AS seq, m.*
  FROM (SELECT * FROM json_to_recordset($4::json) AS m (n int, plant_id bigint, actor text, location text, delta bigint, reason text, reference text,
    on_hand_after bigint, version int, change_n int, plant text, changes text, idem text, hash text, answer_head text, answer_tail text, events_head text, events_tail text) ORDER BY n) AS m
  -- A key the group takes that is in use (its earlier request committed before this statement):
  -- nothing is applied and no position drawn (the ledger keeps no gap), and the group runs again
  -- with the keys read first (KeyRaced), where that request's answer is replayed. (live_keys, not
  -- the table: this statement's plan is kept, and a plan made while the table was small scans it.)
  WHERE (SELECT count(*) FROM live_keys($9::text[], $6)) = 0
), ledger AS (
  INSERT INTO stock_movements (seq, plant_id, at, actor, location, delta, reason, reference, on_hand_after) OVERRIDING SYSTEM VALUE
  SELECT seq, plant_id, $1, actor, location, delta, reason, reference, on_hand_after FROM m
), claimed AS (
  -- A key used within its lifetime by a request in flight (this waits for its commit): refused or
  -- left as it is and not counted, and the group is run again (KeyRaced).
  ${claim}
), p AS (
  SELECT * FROM json_to_recordset($2::json) AS p (id bigint, on_hand bigint, reserved bigint, available bigint, status text, version int)
), plant AS (
  -- The rows to update are found by their index (OFFSET 0: a subquery a row), then by their
  -- addresses: joined by id or key, the plan kept for this statement read every row (BY_INDEX says why).
  UPDATE plants SET on_hand = p.on_hand, reserved = p.reserved, available = p.available, status = p.status, version = p.version, updated_at = $1
  FROM p, LATERAL (SELECT x.ctid AS at FROM plants x WHERE x.id = p.id OFFSET 0) AS x WHERE plants.ctid = x.at
), l AS (
  SELECT * FROM json_to_recordset($3::json) AS l (plant_id bigint, location text, on_hand bigint, reserved bigint, held boolean)
), level AS (
  -- A level read in 1 is updated in place (its plant's lock keeps it as read); an INSERT … ON
  -- CONFLICT would lock its row first, one more WAL record a movement.
  UPDATE stock_levels SET on_hand = l.on_hand
  FROM l, LATERAL (SELECT x.ctid AS at FROM stock_levels x WHERE x.plant_id = l.plant_id AND x.location = l.location OFFSET 0) AS x
  WHERE l.held AND stock_levels.ctid = x.at
), added AS (
  INSERT INTO stock_levels (plant_id, location, on_hand, reserved)
  SELECT plant_id, location, on_hand, reserved FROM l WHERE NOT l.held
  ON CONFLICT (plant_id, location) DO UPDATE SET on_hand = EXCLUDED.on_hand
), head AS (
  UPDATE meta SET value = value + $5 WHERE key = 'feed_head' RETURNING value
), appended AS (
  INSERT INTO changes (seq, kind, plant_id, version, plant, at, actor, stock_events)
  SELECT head.value - $5 + m.change_n, 'updated', m.plant_id, m.version, m.plant, $1, m.actor, m.events_head || m.seq || m.events_tail
  FROM head, m WHERE m.change_n IS NOT NULL
), recorded AS (
  INSERT INTO history (plant_id, at, version, kind, actor, changes)
  SELECT plant_id, $1, version, ${KIND_CODES.updated}, actor, changes FROM m WHERE m.change_n IS NOT NULL
), counted AS (
  -- After head (it joins it), so every writer takes feed_head's lock first and the count rows after it.
  UPDATE meta c SET value = c.value + d.delta
  FROM head, (SELECT 'count_' || k AS key, sum(v) AS delta FROM unnest($7::text[], $8::bigint[]) AS d (k, v) GROUP BY k) d
  WHERE c.key = d.key AND d.delta <> 0
)
SELECT (SELECT array_agg(seq ORDER BY n) FROM m) AS seqs, (SELECT count(*) FROM claimed) AS claimed, value AS head, pg_notify('plant_changes', current_schema() || ':' || value) FROM head`
export const WRITE_NEW = write(CLAIM_NEW)
export const WRITE_AGAIN = write(CLAIM_AGAIN)
/** Every created_at is at least 0: a first run's look for its keys counts expired ones too. */
export const ANY_AGE = -1
