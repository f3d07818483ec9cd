import type { ChangeKind } from '../../catalogue/changes.js'
import { KIND_CODES, type HistoryKind } from '../../catalogue/history.js'
import type { PlantFields, StoredPlant } from '../../catalogue/plant.js'
import { priceCents } from '../../catalogue/price-sku-barcode.js'
import { nameColumns } from './search-columns.js'
import { toPostgresText as toDb } from './text-escape.js'

// The statement that writes a group's outcomes (group-writes.ts), and its parameters. Each kind of
// row goes as ONE json parameter, an array of objects expanded by json_to_recordset: JSON.stringify
// is native, where 30-odd text[] parameters were each escaped element by element by pg in JavaScript
// (its array literals: escapeElement, arrayString) and held as garbage until sent.

// Ids are drawn from the identity's sequence first, so each created row knows its id; its outbox
// record and key answer are the JSON built here with the id put in front ('{"id":7,' || rest).
// The row locks of updated and deleted plants are held already (group-writes.ts PREPARE); feed_head's
// is taken last, just before COMMIT, as the sequence numbers need (see group-commit.ts).
// A CTE named more than once (or that draws from the sequence) is evaluated once: each json is parsed once.
export const WRITE = `
WITH c AS (
  -- The sequence's name looked up once (a subquery), not a row: each lookup reads the catalogue.
  SELECT nextval((SELECT pg_get_serial_sequence('plants', 'id'))) AS id, c.*
  FROM json_to_recordset($2::json) AS c (n int, name text, name_key text, name_order_key text, category text, tags text[], status text, idem text, response text,
    description text, price bigint, sku text, barcode text, search_key text, search_starts text[], low_stock_at bigint)
), created AS (
  INSERT INTO plants (id, name, name_key, name_order_key, category, tags, status, description, price, sku, barcode, search_key, search_starts, low_stock_at, version, created_at, updated_at) OVERRIDING SYSTEM VALUE
  SELECT id, name, name_key, name_order_key, category, tags, status, description, price, sku, barcode, search_key, search_starts, low_stock_at, 1, $1, $1 FROM c
), created_tags AS (
  INSERT INTO plant_tags (tag, plant_id) SELECT t, c.id FROM c, unnest(c.tags) AS t
), answered AS (
  UPDATE idempotency_keys k SET plant_id = c.id, response = '{"id":' || c.id || ',' || c.response FROM c WHERE k.key = c.idem
), u AS (
  SELECT * FROM json_to_recordset($3::json) AS u (id bigint, name text, name_key text, name_order_key text, category text, tags text[], status text, version int,
    description text, price bigint, sku text, barcode text, search_key text, search_starts text[], low_stock_at bigint, retag boolean)
), updated AS (
  UPDATE plants p SET name = u.name, name_key = u.name_key, name_order_key = u.name_order_key, category = u.category, tags = u.tags, status = u.status, version = u.version, updated_at = $1,
    description = u.description, price = u.price, sku = u.sku, barcode = u.barcode, search_key = u.search_key, search_starts = u.search_starts, low_stock_at = u.low_stock_at
  FROM u WHERE p.id = u.id
), dropped AS (
  -- Tag rows only for plants whose tags the group changed (retag): the others' rows are already
  -- their tags, and checking them cost 40 % of the statement (a join over every tag row, a
  -- conflict check a tag) in an import that moves statuses.
  DELETE FROM plant_tags t USING u WHERE u.retag AND t.plant_id = u.id AND t.tag <> ALL (u.tags)
), added AS (
  INSERT INTO plant_tags (tag, plant_id) SELECT t, u.id FROM u, unnest(u.tags) AS t WHERE u.retag ON CONFLICT DO NOTHING
), d AS (
  SELECT * FROM json_to_recordset($4::json) AS d (id bigint, plant text, version int, actor text)
), deleted AS (
  DELETE FROM plants p USING d WHERE p.id = d.id
), trashed AS (
  -- A deleted plant moves to the trash (migrations/010_trash.sql), its photos' references with it.
  INSERT INTO trash (id, plant, version, trashed_at, trashed_by) SELECT d.id, d.plant, d.version, $1, d.actor FROM d
), head AS (
  UPDATE meta SET value = value + $5 WHERE key = 'feed_head' RETURNING value
), x AS (
  SELECT * FROM json_to_recordset($6::json) AS x (n int, kind text, plant_id bigint, ref int, version int, plant text, actor text, changes text, code smallint)
), appended AS (
  INSERT INTO changes (seq, kind, plant_id, version, plant, at, actor)
  SELECT head.value - $5 + x.n, x.kind, coalesce(x.plant_id, c.id), x.version,
    CASE WHEN x.ref IS NULL THEN x.plant ELSE '{"id":' || c.id || ',' || x.plant END, $1, x.actor
  FROM head CROSS JOIN x LEFT JOIN c ON c.n = x.ref
), recorded AS (
  -- Each change's version in its plant's history (migrations/013_history.sql): the changed fields.
  INSERT INTO history (plant_id, at, version, kind, actor, changes)
  SELECT coalesce(x.plant_id, c.id), $1, x.version, x.code, x.actor, x.changes
  FROM x LEFT JOIN c ON c.n = x.ref
), counted AS (
  -- After head (it joins it), so every writer takes feed_head's lock first and the count rows after it.
  UPDATE meta m SET value = m.value + d.delta
  FROM head, (SELECT 'count_' || k AS key, sum(v) AS delta FROM unnest($7::text[], $8::bigint[]) AS d (k, v) GROUP BY k) d
  WHERE m.key = d.key AND d.delta <> 0
)
SELECT (SELECT coalesce(array_agg(id ORDER BY n), '{}') FROM c) AS ids, value AS head,
  pg_notify('plant_changes', current_schema() || ':' || value) FROM head`

/** A plant the group creates: its fields, its Idempotency-Key and the answer stored with it (JSON after the id). */
export interface CreateRow { fields: PlantFields, key: string | null, response: string | null }
/**
 * A change for the feed; `ref` (1-based) names a created plant whose id is not known yet. `history`:
 * the fields it changed (JSON) for the plant's history, and `historyKind` its kind there when not the feed's.
 */
export interface ChangeRow { kind: ChangeKind, id: number | null, ref: number | null, version: number, plant: string | null, actor: string, history: string, historyKind?: HistoryKind }
/** A deleted plant as the trash keeps it: the record (JSON) and the deleted change's version. */
export interface TrashRow { id: number, plant: string, version: number, actor: string }

const db = (s: string | null): string | null => s === null ? null : toDb(s)
const sameTags = (a: string[] | undefined, b: string[]): boolean => a !== undefined && a.length === b.length && a.every((tag, i) => tag === b[i])
const centsOf = (price: string | null): number | null => price === null ? null : priceCents(price)!

/** A plant's fields as the plants table's columns, the search columns with them: a create's and an update's alike. */
function plantColumns (f: Pick<StoredPlant, 'name' | 'category' | 'tags' | 'status' | 'description' | 'price' | 'sku' | 'barcode' | 'lowStockAt'>): Record<string, unknown> {
  const names = nameColumns(f.name)
  return {
    name: toDb(f.name),
    name_key: names.nameKey,
    name_order_key: names.nameOrderKey,
    category: db(f.category),
    tags: f.tags.map(toDb),
    status: f.status,
    description: db(f.description),
    price: centsOf(f.price),
    sku: f.sku,
    barcode: f.barcode,
    search_key: names.searchKey,
    search_starts: names.searchStarts,
    low_stock_at: f.lowStockAt ?? null
  }
}

/**
 * WRITE's parameters, in its order. `before`: each updated plant as the group found it (its locked
 * row), whose tag rows plant_tags holds.
 */
export function writeValues (now: number, creates: CreateRow[], updated: StoredPlant[], before: Map<number, StoredPlant | null>, trashed: TrashRow[], changes: ChangeRow[], counts: Map<string, number>): unknown[] {
  return [
    now,
    jsonParam(creates.map(({ fields, key, response }, i) => ({ n: i + 1, ...plantColumns(fields), idem: key, response }))),
    jsonParam(updated.map((p) => ({ id: p.id, ...plantColumns(p), version: p.version, retag: !sameTags(before.get(p.id)?.tags, p.tags) }))),
    jsonParam(trashed),
    changes.length,
    jsonParam(changes.map((c, i) => ({ n: i + 1, kind: c.kind, plant_id: c.id, ref: c.ref, version: c.version, plant: c.plant, actor: c.actor, changes: c.history, code: KIND_CODES[c.historyKind ?? c.kind] }))),
    [...counts.keys()], [...counts.values()]
  ]
}

// JSON.stringify writes a lone UTF-16 surrogate as an escape (\ud800), which PostgreSQL's json refuses;
// a text parameter turned one into U+FFFD (pg encodes text as UTF-8), so that is what it becomes here too.
// The test is on the JSON, so a `\ud8…` that is only text (its backslash escaped) takes the slow path too, harmlessly.
const SURROGATE_ESCAPE = /\\ud[89a-f]/i
const LONE_SURROGATE = /[\uD800-\uDFFF]/gu

export function jsonParam (value: unknown): string {
  const json = JSON.stringify(value)
  if (!SURROGATE_ESCAPE.test(json)) return json
  return JSON.stringify(value, (_key, v: unknown) => typeof v === 'string' ? v.replace(LONE_SURROGATE, '\ufffd') : v)
}
