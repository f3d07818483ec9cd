import type pg from 'pg'
import type { Photo } from '../../catalogue/photo.js'
import { IdempotencyKeyReused, PlantNotFound, SkuTaken, VersionMismatch } from '../../catalogue/errors.js'
import { fieldChanges } from '../../catalogue/history.js'
import { stockOf, toRecord, type PlantFields, type PlantPatch, type PlantStatus, type StoredPlant } from '../../catalogue/plant.js'
import { canonicalPrice, formatCents, skuKey, timestamp } from '../../catalogue/price-sku-barcode.js'
import type { CreateResult, IdempotencyClaim } from '../plant-store.js'
import { WRITE, writeValues, type ChangeRow, type TrashRow } from './group-statement.js'
import { fromPostgresText as fromDb } from './text-escape.js'
import { sameRequest } from '../idempotency.js'

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
  /** `reverted`: a revert's fields, which the history names as such. */
  | { kind: 'update', id: number, fields: PlantFields, expectedVersions?: number[], actor: string, reverted?: true }
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
  updated_at: number,
  low_stock_at: number | null,
  on_hand: number | null,
  reserved: number | null,
  available: number | null
}

/** The columns of a plant's row (PlantRow), for every statement that reads one. */
export const ROW_COLUMNS = 'id, version, name, category, tags, status, photos, description, price, sku, barcode, created_at, updated_at, low_stock_at, on_hand, reserved, available'
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
  // json_agg hands BIGINTs over as JSON numbers, a row as the parsed INT8: Number() both.
  stock: stockOf(r.on_hand, r.reserved, r.available),
  lowStockAt: r.low_stock_at === null || r.low_stock_at === undefined ? null : Number(r.low_stock_at),
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
 * `turn`, for a group written beside another (GroupCommit.runBeside): awaited after the plants are
 * locked and the outcomes worked out, before anything that must see the writes ahead of this group
 * committed (the keys claimed, the SKUs' holders, the write and its feed changes).
 */
export async function writeGroup (client: Pick<pg.PoolClient, 'query'>, ops: Array<WriteOp | undefined>, now: number, idempotencyTtlMs: number, begin = false, turn?: () => Promise<void>): Promise<[Outcome[], number | undefined]> {
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
  if (keyHashes.size > 0) await turn?.()
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
  // The plants as locked, before this group's writes: their tag rows are these plants' tags.
  const locked = new Map(current)
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
    await turn?.()
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
  const changes: ChangeRow[] = []
  const counts = new Map<string, number>()
  const count = (status: string, delta: number): void => { counts.set(status, (counts.get(status) ?? 0) + delta) }
  const touched = new Set<number>()
  // Deleted plants as they were, for the trash: the record (JSON) and the deleted change's version.
  const trashed = new Map<number, TrashRow>()
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
            if (!before || !sameRequest(before.request_hash, claim.requestHash)) {
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
        // Its stock goes to the trash with it: counted nowhere until a restore.
        if (plant.stock !== null) {
          count('units_on_hand', -plant.stock.onHand)
          count('units_reserved', -plant.stock.reserved)
        }
        // The photos' files keep their references: the trash names them until the plant is purged.
        trashed.set(op.id, { id: op.id, plant: JSON.stringify(plant), version: plant.version + 1, actor: op.actor })
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
      const { name, category, tags, status, description, price, sku, barcode, lowStockAt } = plant
      const fields: PlantFields = op.kind === 'update'
        ? op.fields
        : { name, category, tags, status: status as PlantStatus, description, price, sku, barcode, lowStockAt, ...op.patch }
      takeSku(fields.sku, op.id, plant.sku)
      const next: StoredPlant = {
        ...storedCreate(op.id, fields, now), stock: plant.stock, photos: plant.photos, version: plant.version + 1, createdAt: plant.createdAt
      }
      if (next.status !== plant.status) {
        count(plant.status, -1)
        count(next.status, 1)
      }
      const historyKind = op.kind === 'update' && op.reverted === true ? 'reverted' : 'updated'
      changes.push({ kind: 'updated', id: op.id, ref: null, version: next.version, plant: JSON.stringify(toRecord(next)), actor: op.actor, history: JSON.stringify(fieldChanges(plant, next)), historyKind })
      current.set(op.id, next)
      touched.add(op.id)
      outcomes[index] = { ok: true, value: next }
    } catch (error) {
      // Left without an outcome: the group commit runs it again in the next group.
      if (!(error instanceof Requeue)) outcomes[index] = { ok: false, error }
    }
  })
  await turn?.()
  const unclaim = [...unclaimed].filter((key) => !creator.has(key))
  if (unclaim.length > 0) await client.query(UNCLAIM, [unclaim])
  if (changes.length === 0) return [outcomes, undefined]

  // 3. Everything in one statement.
  const updated: StoredPlant[] = []
  const deleted: TrashRow[] = []
  for (const id of touched) {
    const plant = current.get(id)
    if (plant) updated.push(plant)
    else deleted.push(trashed.get(id)!)
  }
  const createRows = creates.map((c) => ({ fields: c.fields, key: c.key, response: c.key === null ? null : afterId({ ...storedCreate(0, c.fields, now), id: undefined }) }))
  const { rows: [written] } = await client.query<{ ids: string[], head: number }>({
    name: 'plants-write',
    text: WRITE,
    values: writeValues(now, createRows, updated, locked, deleted, changes, counts)
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
function storedCreate (id: number, { name, category, tags, status, description, price, sku, barcode, lowStockAt }: PlantFields, now: number): StoredPlant {
  const at = timestamp(now)
  return { id, name, category, tags, status, description, price: canonicalPrice(price), sku, barcode, stock: null, lowStockAt, photos: [], createdAt: at, updatedAt: at, version: 1 }
}

/** A write that must wait for the next group: it wants a SKU another write of this group moves. */
class Requeue extends Error {}
