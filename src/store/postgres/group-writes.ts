import type pg from 'pg'
import { nameKey } from '../../catalogue/name-key.js'
import { searchKeyOf, searchStartsOf, textArray } from './search-columns.js'
import type { Photo } from '../../catalogue/photo.js'
import { IdempotencyKeyReused, PlantNotFound, SkuTaken, VersionMismatch } from '../../catalogue/errors.js'
import { fieldChanges } from '../../catalogue/history.js'
import { toRecord, type PlantFields, type PlantPatch, type PlantStatus, type StoredPlant } from '../../catalogue/plant.js'
import { canonicalPrice, formatCents, priceCents, skuKey, timestamp } from '../../catalogue/store-fields.js'
import type { CreateResult, IdempotencyClaim } from '../plant-store.js'
import { toKey } from './list-query.js'
import { fromPostgresText as fromDb, toPostgresText as toDb } from './text-escape.js'

// The plant writes of one group commit, set-based: whatever the number of writes, a group costs a
// fixed number of statements. Creates alone: one statement (no transaction needed). With updates,
// patches, deletes or Idempotency-Keys: BEGIN, one statement that claims the keys and locks every
// plant the group names (without keys, BEGIN goes in the same round trip as the lock) (in id order, so two instances never lock in opposite orders), then the
// outcomes are worked out here, write by write and in arrival order, against the locked rows (If-Match,
// merge patches, 404s: one write's refusal never touches the others), and one statement writes them
// all: plants, tag rows, Idempotency-Key answers, the change outbox under feed_head's lock, the
// plants' history, the status counts, the trash's rows of deleted plants and the NOTIFY; then COMMIT. One more statement
// only when it is needed: the earlier answers of keys used before.

/** A plant write; `actor` is who makes it (WriteMeta), recorded on its change. */
export type WriteOp =
  | { kind: 'create', fields: PlantFields, idempotency?: IdempotencyClaim, actor: string }
  | { kind: 'update', id: number, fields: PlantFields, expectedVersions?: number[], actor: string }
  | { kind: 'patch', id: number, patch: PlantPatch, expectedVersions?: number[], actor: string }
  | { kind: 'remove', id: number, expectedVersions?: number[], actor: string }

export type Outcome = { ok: true, value: unknown } | { ok: false, error: unknown } | undefined

/** Whether a group of these writes needs a transaction: a lone statement of plain creates does not. */
export const needsTransaction = (ops: Array<WriteOp | undefined>): boolean =>
  ops.some((op) => op !== undefined && (op.kind !== 'create' || op.idempotency !== undefined))

/** A plant as PostgreSQL returns it (strings escaped, photos as JSON text). */
export interface PlantRow {
  id: number,
  version: number,
  name: string,
  category: string | null,
  tags: string[],
  status: PlantStatus,
  photos: string,
  /** Store fields: price in cents; times in epoch milliseconds. */
  description: string | null,
  price: number | null,
  sku: string | null,
  barcode: string | null,
  created_at: number,
  updated_at: number
}

/** The columns of a plant's row (PlantRow), for every statement that reads one. */
export const ROW_COLUMNS = 'id, version, name, category, tags, status, photos, description, price, sku, barcode, created_at, updated_at'
const LOCK = `SELECT ${ROW_COLUMNS} FROM plants WHERE id = ANY`
// Keys first (in key order), then plants (in id order): every group takes its locks in one order.
// A key already held (and not expired) is locked too, and left as it is: its answer is read after.
const PREPARE = `
WITH claimed AS (
  INSERT INTO idempotency_keys AS k (key, request_hash, created_at)
  SELECT key, hash, $4 FROM unnest($2::text[], $3::text[]) AS c (key, hash)
  ON CONFLICT (key) DO UPDATE SET request_hash = EXCLUDED.request_hash, plant_id = NULL, response = NULL, created_at = EXCLUDED.created_at
  WHERE k.created_at <= $5
  RETURNING key
), locked AS (
  ${LOCK} ($1::bigint[]) ORDER BY id FOR UPDATE
)
SELECT (SELECT coalesce(array_agg(key), '{}') FROM claimed) AS claimed, (SELECT coalesce(json_agg(locked), '[]') FROM locked) AS plants`

// The plants holding the group's SKUs, ignoring case (the unique index plants_sku answers it).
const SKU_HOLDERS = 'SELECT id, lower(sku) AS key FROM plants WHERE sku IS NOT NULL AND lower(sku) = ANY ($1::text[])'

const UNCLAIM = 'DELETE FROM idempotency_keys WHERE key = ANY ($1::text[]) AND response IS NULL'

// A new statement sees what a racing claim committed (the claim above waited for it).
const EARLIER = 'SELECT key, request_hash, response, created_at FROM idempotency_keys WHERE key = ANY ($1::text[])'

/** A change's kind as the history stores it (catalogue/history.ts KIND_CODES), from `x.kind`. */
export const KIND_CODE = "CASE x.kind WHEN 'created' THEN 0 WHEN 'updated' THEN 1 ELSE 2 END"

// Ids are drawn from the identity's sequence first, so each created row knows its id; its outbox
// record and key answer are the JSON built here with the id put in front ('{"id":7,' || rest).
// The row locks of updated and deleted plants are held already (PREPARE); feed_head's is taken
// last, just before COMMIT, as the sequence numbers need (see group-commit.ts).
const WRITE = `
WITH c AS (
  SELECT nextval(pg_get_serial_sequence('plants', 'id')) AS id, c.*
  FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $25::text[], $26::bigint[], $27::text[], $28::text[], $33::text[], $34::text[])
    WITH ORDINALITY AS c (name, name_key, category, tags, status, idem, response, description, price, sku, barcode, search_key, search_starts, n)
), created AS (
  INSERT INTO plants (id, name, name_key, category, tags, status, description, price, sku, barcode, search_key, search_starts, version, created_at, updated_at) OVERRIDING SYSTEM VALUE
  SELECT id, name, name_key, category, tags::text[], status, description, price, sku, barcode, search_key, search_starts::text[], 1, $1, $1 FROM c
), created_tags AS (
  INSERT INTO plant_tags (tag, plant_id) SELECT t, c.id FROM c, unnest(c.tags::text[]) AS t
), answered AS (
  UPDATE idempotency_keys k SET plant_id = c.id, response = '{"id":' || c.id || ',' || c.response FROM c WHERE k.key = c.idem
), u AS (
  SELECT id, name, name_key, category, tags::text[] AS tags, status, version, description, price, sku, barcode, search_key, search_starts::text[] AS search_starts
  FROM unnest($9::bigint[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::int[], $29::text[], $30::bigint[], $31::text[], $32::text[], $35::text[], $36::text[])
    AS u (id, name, name_key, category, tags, status, version, description, price, sku, barcode, search_key, search_starts)
), updated AS (
  UPDATE plants p SET name = u.name, name_key = u.name_key, category = u.category, tags = u.tags, status = u.status, version = u.version, updated_at = $1,
    description = u.description, price = u.price, sku = u.sku, barcode = u.barcode, search_key = u.search_key, search_starts = u.search_starts
  FROM u WHERE p.id = u.id
), dropped AS (
  DELETE FROM plant_tags t USING u WHERE t.plant_id = u.id AND t.tag <> ALL (u.tags)
), added AS (
  INSERT INTO plant_tags (tag, plant_id) SELECT t, u.id FROM u, unnest(u.tags) AS t ON CONFLICT DO NOTHING
), deleted AS (
  DELETE FROM plants WHERE id = ANY ($16::bigint[])
), trashed AS (
  -- A deleted plant moves to the trash (migrations/009_trash.sql), its photos' references with it.
  INSERT INTO trash (id, plant, version, trashed_at, trashed_by) SELECT t.id, t.plant, t.version, $1, t.actor FROM unnest($16::bigint[], $38::text[], $39::int[], $40::text[]) AS t (id, plant, version, actor)
), head AS (
  UPDATE meta SET value = value + $17 WHERE key = 'feed_head' RETURNING value
), appended AS (
  INSERT INTO changes (seq, kind, plant_id, version, plant, at, actor)
  SELECT head.value - $17 + x.n, x.kind, coalesce(x.plant_id, c.id), x.version,
    CASE WHEN x.ref IS NULL THEN x.plant ELSE '{"id":' || c.id || ',' || x.plant END, $1, x.actor
  FROM head CROSS JOIN unnest($18::text[], $19::bigint[], $20::int[], $21::int[], $22::text[], $37::text[]) WITH ORDINALITY AS x (kind, plant_id, ref, version, plant, actor, n)
  LEFT JOIN c ON c.n = x.ref
), recorded AS (
  -- Each change's version in its plant's history (migrations/013_history.sql): the changed fields.
  INSERT INTO history (plant_id, at, version, kind, actor, changes)
  SELECT coalesce(x.plant_id, c.id), $1, x.version, ${KIND_CODE}, x.actor, x.changes
  FROM unnest($18::text[], $19::bigint[], $20::int[], $21::int[], $37::text[], $41::text[]) AS x (kind, plant_id, ref, version, actor, changes)
  LEFT JOIN c ON c.n = x.ref
), counted AS (
  -- After head (it joins it), so every writer takes feed_head's lock first and the count rows after it.
  UPDATE meta m SET value = m.value + d.delta
  FROM head, (SELECT 'count_' || k AS key, sum(v) AS delta FROM unnest($23::text[], $24::bigint[]) AS d (k, v) GROUP BY k) d
  WHERE m.key = d.key AND d.delta <> 0
)
SELECT (SELECT coalesce(array_agg(id ORDER BY n), '{}') FROM c) AS ids, value AS head,
  pg_notify('plant_changes', current_schema() || ':' || value) FROM head`

// Purged plants' photo files (trash.ts): one reference less per photo naming them, then the unnamed ones go.
export const UNREF_FILES = `UPDATE photo_files f SET refs = f.refs - d.n
FROM (SELECT name, count(*) AS n FROM unnest($1::text[]) AS name GROUP BY name) d WHERE f.name = d.name`
export const DROP_FILES = 'DELETE FROM photo_files WHERE name = ANY ($1::text[]) AND refs <= 0'

/** JSON of `value` without its opening brace: the statement puts `{"id":N,` in front. */
const afterId = (value: object): string => JSON.stringify(value).slice(1)

export const toPlant = (r: PlantRow): StoredPlant => ({
  id: r.id,
  name: fromDb(r.name),
  category: r.category === null ? null : fromDb(r.category),
  tags: r.tags.map(fromDb),
  status: r.status,
  description: r.description === null ? null : fromDb(r.description),
  price: r.price === null ? null : formatCents(r.price),
  sku: r.sku,
  barcode: r.barcode,
  photos: JSON.parse(r.photos) as Photo[],
  createdAt: timestamp(r.created_at),
  updatedAt: timestamp(r.updated_at),
  version: r.version
})

interface Create { index: number, fields: PlantFields, key: string | null, hash: string | null }
/** created_at is a BIGINT, which pg hands over as a string. */
interface Earlier { request_hash: string, response: string, created_at: string }

/**
 * Runs one group's writes on `client` (inside BEGIN … COMMIT unless `needsTransaction` said no).
 * Returns each write's outcome (undefined where `ops` has none) and the feed's new head, if it moved.
 * A domain refusal is an outcome; anything PostgreSQL refuses is thrown, and nothing is written.
 */
export async function writeGroup (client: Pick<pg.PoolClient, 'query'>, ops: Array<WriteOp | undefined>, now: number, idempotencyTtlMs: number, begin = false): Promise<[Outcome[], number | undefined]> {
  const outcomes: Outcome[] = ops.map(() => undefined)

  // 1. Claim the keys and lock the plants the group names.
  const ids = new Set<number>()
  const keyHashes = new Map<string, string>() // the first hash each key comes with
  for (const op of ops) {
    if (op === undefined) continue
    if (op.kind === 'create') {
      if (op.idempotency && !keyHashes.has(op.idempotency.key)) keyHashes.set(op.idempotency.key, op.idempotency.requestHash)
    } else {
      ids.add(op.id)
    }
  }
  const current = new Map<number, StoredPlant | null>()
  const claimed = new Set<string>()
  const lockIds = [...ids].sort((a, b) => a - b)
  if (begin && keyHashes.size === 0) {
    // BEGIN and the lock in one simple query (one round trip): the ids are integers, so they are
    // written into the text as an array literal; no text from a request goes in.
    if (!lockIds.every(Number.isSafeInteger)) throw new TypeError('plant ids must be integers')
    const results = await client.query(`BEGIN; ${LOCK} ('{${lockIds.join(',')}}'::bigint[]) ORDER BY id FOR UPDATE`) as unknown as [unknown, pg.QueryResult<PlantRow>]
    for (const row of results[1].rows) current.set(row.id, toPlant(row))
  } else if (ids.size > 0 || keyHashes.size > 0) {
    if (begin) await client.query('BEGIN')
    const keys = [...keyHashes.keys()].sort()
    const { rows: [r] } = await client.query<{ claimed: string[], plants: PlantRow[] }>({
      name: 'plants-prepare',
      text: PREPARE,
      values: [lockIds, keys, keys.map((k) => keyHashes.get(k)), now, now - idempotencyTtlMs]
    })
    for (const key of r.claimed) claimed.add(key)
    for (const row of r.plants) current.set(row.id, toPlant(row))
  }
  const earlier = new Map<string, Earlier>()
  const taken = [...keyHashes.keys()].filter((k) => !claimed.has(k))
  if (taken.length > 0) {
    const { rows } = await client.query<Earlier & { key: string }>({ name: 'plants-earlier-keys', text: EARLIER, values: [taken] })
    for (const row of rows) earlier.set(row.key, row)
  }

  // The plants holding the SKUs the group's writes set, to refuse taking another plant's.
  const wanted = new Set<string>()
  for (const op of ops) {
    const sku = op === undefined || op.kind === 'remove' ? undefined : op.kind === 'patch' ? op.patch.sku : op.fields.sku
    if (typeof sku === 'string') wanted.add(skuKey(sku))
  }
  const holders = new Map<string, number>()
  if (wanted.size > 0) {
    const { rows } = await client.query<{ id: number, key: string }>({ name: 'plants-sku-holders', text: SKU_HOLDERS, values: [[...wanted]] })
    for (const row of rows) holders.set(row.key, row.id)
  }
  // SKUs a create of this group takes, or another write of it gives up: a write that wants one of
  // them waits for the next group (requeued), where the committed holder is seen and named.
  const movedInGroup = new Set<string>()
  const unclaimed = new Set<string>()
  const takeSku = (sku: string | null, id: number | undefined, before: string | null): void => {
    const key = sku === null ? undefined : skuKey(sku)
    const old = before === null ? undefined : skuKey(before)
    if (key === old) return
    if (key !== undefined) {
      if (movedInGroup.has(key)) throw new Requeue()
      const holder = holders.get(key)
      if (holder !== undefined && holder !== id) throw new SkuTaken(sku!, holder)
      movedInGroup.add(key)
    }
    if (old !== undefined) movedInGroup.add(old)
  }

  // 2. Each write in arrival order against the plants as the writes before it left them.
  const creates: Create[] = []
  const creator = new Map<string, Create>() // the create in this group that claimed the key
  const replays: Array<{ index: number, of: Create }> = []
  // `history`: the changed fields (JSON), for the plant's history.
  const changes: Array<{ kind: 'created' | 'updated' | 'deleted', id: number | null, ref: number | null, version: number, plant: string | null, actor: string, history: string }> = []
  const counts = new Map<string, number>()
  const count = (status: string, delta: number): void => { counts.set(status, (counts.get(status) ?? 0) + delta) }
  const touched = new Set<number>()
  // Deleted plants as they were, for the trash: the record (JSON) and the deleted change's version.
  const trashed = new Map<number, { plant: string, version: number, actor: string }>()
  ops.forEach((op, index) => {
    if (op === undefined) return
    try {
      if (op.kind === 'create') {
        const claim = op.idempotency
        if (claim) {
          const owner = creator.get(claim.key)
          if (owner) {
            if (owner.hash !== claim.requestHash) throw new IdempotencyKeyReused(now, now + idempotencyTtlMs)
            replays.push({ index, of: owner })
            return
          }
          if (!claimed.has(claim.key)) {
            const before = earlier.get(claim.key)
            // Gone between the two statements (purged): refuse rather than create twice; rare, and a retry succeeds.
            if (!before || before.request_hash !== claim.requestHash) {
              const usedAt = before === undefined ? now : Number(before.created_at)
              throw new IdempotencyKeyReused(usedAt, usedAt + idempotencyTtlMs)
            }
            outcomes[index] = { ok: true, value: { plant: JSON.parse(before.response) as StoredPlant, replayed: true } satisfies CreateResult }
            return
          }
        }
        try {
          takeSku(op.fields.sku, undefined, null)
        } catch (error) {
          // Refused (or put off) after its key was claimed: the claim goes, or a retry would replay an answer never written.
          if (claim && claimed.has(claim.key)) unclaimed.add(claim.key)
          throw error
        }
        const create: Create = { index, fields: op.fields, key: claim?.key ?? null, hash: claim?.requestHash ?? null }
        if (claim) creator.set(claim.key, create)
        creates.push(create)
        count(op.fields.status, 1)
        const record = toRecord(storedCreate(0, op.fields, now))
        changes.push({ kind: 'created', id: null, ref: creates.length, version: 1, plant: afterId({ ...record, id: undefined }), actor: op.actor, history: JSON.stringify(fieldChanges(null, record)) })
        return
      }
      const plant = current.get(op.id)
      if (!plant) throw new PlantNotFound()
      if (op.expectedVersions && !op.expectedVersions.includes(plant.version)) throw new VersionMismatch()
      if (op.kind === 'remove') {
        if (plant.sku !== null) movedInGroup.add(skuKey(plant.sku))
        count(plant.status, -1)
        // The photos' files keep their references: the trash names them until the plant is purged.
        trashed.set(op.id, { plant: JSON.stringify(plant), version: plant.version + 1, actor: op.actor })
        changes.push({ kind: 'deleted', id: op.id, ref: null, version: plant.version + 1, plant: null, actor: op.actor, history: '{}' })
        current.set(op.id, null)
        touched.add(op.id)
        outcomes[index] = { ok: true, value: undefined }
        return
      }
      if (op.kind === 'patch' && Object.keys(op.patch).length === 0) {
        outcomes[index] = { ok: true, value: plant }
        return
      }
      const { name, category, tags, status, description, price, sku, barcode } = plant
      const fields: PlantFields = op.kind === 'update'
        ? op.fields
        : { name, category, tags, status: status as PlantStatus, description, price, sku, barcode, ...op.patch }
      takeSku(fields.sku, op.id, plant.sku)
      const next: StoredPlant = {
        ...storedCreate(op.id, fields, now), photos: plant.photos, version: plant.version + 1, createdAt: plant.createdAt
      }
      if (next.status !== plant.status) {
        count(plant.status, -1)
        count(next.status, 1)
      }
      changes.push({ kind: 'updated', id: op.id, ref: null, version: next.version, plant: JSON.stringify(toRecord(next)), actor: op.actor, history: JSON.stringify(fieldChanges(plant, next)) })
      current.set(op.id, next)
      touched.add(op.id)
      outcomes[index] = { ok: true, value: next }
    } catch (error) {
      // Left without an outcome: the group commit runs it again in the next group.
      if (!(error instanceof Requeue)) outcomes[index] = { ok: false, error }
    }
  })
  const unclaim = [...unclaimed].filter((key) => !creator.has(key))
  if (unclaim.length > 0) await client.query(UNCLAIM, [unclaim])
  if (changes.length === 0) return [outcomes, undefined]

  // 3. Everything in one statement.
  const updated: StoredPlant[] = []
  const deleted: number[] = []
  for (const id of touched) {
    const plant = current.get(id)
    if (plant) updated.push(plant)
    else deleted.push(id)
  }
  const db = (s: string | null): string | null => s === null ? null : toDb(s)
  const { rows: [written] } = await client.query<{ ids: string[], head: number }>({
    name: 'plants-write',
    text: WRITE,
    values: [
      now,
      creates.map((c) => toDb(c.fields.name)), creates.map((c) => toKey(nameKey(c.fields.name))), creates.map((c) => db(c.fields.category)),
      creates.map((c) => textArray(c.fields.tags.map(toDb))), creates.map((c) => c.fields.status), creates.map((c) => c.key),
      creates.map((c) => c.key === null ? null : afterId({ ...storedCreate(0, c.fields, now), id: undefined })),
      updated.map((p) => p.id), updated.map((p) => toDb(p.name)), updated.map((p) => toKey(nameKey(p.name))), updated.map((p) => db(p.category)),
      updated.map((p) => textArray(p.tags.map(toDb))), updated.map((p) => p.status), updated.map((p) => p.version),
      deleted,
      changes.length, changes.map((c) => c.kind), changes.map((c) => c.id), changes.map((c) => c.ref), changes.map((c) => c.version), changes.map((c) => c.plant),
      [...counts.keys()], [...counts.values()],
      creates.map((c) => db(c.fields.description)), creates.map((c) => centsOf(c.fields.price)), creates.map((c) => c.fields.sku), creates.map((c) => c.fields.barcode),
      updated.map((p) => db(p.description)), updated.map((p) => centsOf(p.price)), updated.map((p) => p.sku), updated.map((p) => p.barcode),
      creates.map((c) => searchKeyOf(c.fields.name)), creates.map((c) => textArray(searchStartsOf(c.fields.name))),
      updated.map((p) => searchKeyOf(p.name)), updated.map((p) => textArray(searchStartsOf(p.name))),
      changes.map((c) => c.actor),
      deleted.map((id) => trashed.get(id)!.plant), deleted.map((id) => trashed.get(id)!.version), deleted.map((id) => trashed.get(id)!.actor),
      changes.map((c) => c.history)
    ]
  })
  const createdIds = written.ids.map(Number)
  creates.forEach((c, i) => {
    outcomes[c.index] = { ok: true, value: { plant: storedCreate(createdIds[i], c.fields, now), replayed: false } satisfies CreateResult }
  })
  for (const { index, of } of replays) {
    outcomes[index] = { ok: true, value: { plant: storedCreate(createdIds[creates.indexOf(of)], of.fields, now), replayed: true } satisfies CreateResult }
  }
  return [outcomes, written.head]
}

/** A new plant as the store answers it (and keeps it for a replay): the record, then its version. */
function storedCreate (id: number, { name, category, tags, status, description, price, sku, barcode }: PlantFields, now: number): StoredPlant {
  const at = timestamp(now)
  return { id, name, category, tags, status, description, price: canonicalPrice(price), sku, barcode, photos: [], createdAt: at, updatedAt: at, version: 1 }
}

const centsOf = (price: string | null): number | null => price === null ? null : priceCents(price)!

/** A write that must wait for the next group: it wants a SKU another write of this group moves. */
class Requeue extends Error {}
