import type pg from 'pg'
import { SkuTaken, TrashedNotFound, VersionMismatch } from '../../catalogue/errors.js'
import { fileNamesOf, type Photo } from '../../catalogue/photo.js'
import { toRecord, type PlantStatus, type StoredPlant } from '../../catalogue/plant.js'
import { purgeInBatches } from '../../catalogue/purge.js'
import { priceCents, skuKey } from '../../catalogue/price-sku-barcode.js'
import type { TrashedPlant, TrashPosition } from '../../catalogue/trash.js'
import { nameKey } from '../../catalogue/name-key.js'
import { nameOrderKey } from '../../catalogue/name-order.js'
import { NO_CHANGES } from '../../catalogue/history.js'
import type { Tx } from './group-commit.js'
import { DROP_FILES, UNREF_FILES } from './group-writes.js'
import { toKey } from './list-query.js'
import { searchKeyOf, searchStartsOf, textArray } from './search-columns.js'
import { toPostgresText as toDb } from './text-escape.js'

// The trash on PostgreSQL (migrations/009_trash.sql). A delete writes its row in the plants'
// set-based statement (group-writes.ts); a restore and a purge are units of work of the group
// commit, each refusing before it writes.

interface TrashRow { id: string | number, plant: string, version: number, trashed_at: string | number, trashed_by: string | null }

const COLUMNS = 'id, plant, version, trashed_at, trashed_by'
const toTrashed = (r: TrashRow): TrashedPlant =>
  ({ plant: JSON.parse(r.plant) as StoredPlant, version: r.version, trashedAt: Number(r.trashed_at), trashedBy: r.trashed_by })

/** A page of the trash, newest first, after `after`. */
export async function readTrash (client: Pick<pg.PoolClient, 'query'>, after: TrashPosition | undefined, limit: number): Promise<TrashedPlant[]> {
  const { rows } = after === undefined
    ? await client.query<TrashRow>({ name: 'trash-first', text: `SELECT ${COLUMNS} FROM trash ORDER BY trashed_at DESC, id DESC LIMIT $1`, values: [limit] })
    : await client.query<TrashRow>({
      name: 'trash-next',
      text: `SELECT ${COLUMNS} FROM trash WHERE (trashed_at, id) < ($1, $2) ORDER BY trashed_at DESC, id DESC LIMIT $3`,
      values: [after.trashedAt, after.id, limit]
    })
  return rows.map(toTrashed)
}

/** One plant's entry in the trash, if it is there. */
export async function readTrashEntry (client: Pick<pg.PoolClient, 'query'>, id: number): Promise<TrashedPlant | undefined> {
  const { rows: [row] } = await client.query<TrashRow>({ name: 'trash-one', text: `SELECT ${COLUMNS} FROM trash WHERE id = $1`, values: [id] })
  return row === undefined ? undefined : toTrashed(row)
}

/** Locks the plant's trash entry; refused when there is none. */
async function entryOf (tx: Tx, id: number): Promise<{ plant: StoredPlant, version: number }> {
  const { rows: [row] } = await tx.query<{ plant: string, version: number }>('SELECT plant, version FROM trash WHERE id = $1 FOR UPDATE', [id])
  if (!row) throw new TrashedNotFound()
  return { plant: JSON.parse(row.plant) as StoredPlant, version: row.version }
}

/** Brings the plant back under its id as a new version (a 'created' change), photos and all. */
export async function restoreTrashed (tx: Tx, id: number, expectedVersions: number[] | undefined, now: number, actor: string): Promise<StoredPlant> {
  const entry = await entryOf(tx, id)
  if (expectedVersions && !expectedVersions.includes(entry.version)) throw new VersionMismatch()
  const was = entry.plant
  if (was.sku !== null) {
    const { rows: [holder] } = await tx.query<{ id: string }>('SELECT id FROM plants WHERE sku IS NOT NULL AND lower(sku) = $1', [skuKey(was.sku)])
    if (holder) throw new SkuTaken(was.sku, Number(holder.id))
  }
  const version = entry.version + 1
  const plant: StoredPlant = { ...was, stock: was.stock ?? null, lowStockAt: was.lowStockAt ?? null, id, version, updatedAt: new Date(now).toISOString() }
  const db = (s: string | null): string | null => s === null ? null : toDb(s)
  // No plant of that id can exist: ids are never handed out twice.
  const stock = was.stock ?? null
  await tx.query(`INSERT INTO plants (id, name, name_key, name_order_key, category, tags, status, description, price, sku, barcode, search_key, search_starts, photos, version, created_at, updated_at,
      low_stock_at, on_hand, reserved, available)
    OVERRIDING SYSTEM VALUE VALUES ($1, $2, $3, $4, $5, $6::text[], $7, $8, $9, $10, $11, $12, $13::text[], $14, $15, $16, $17, $18, $19, $20, $21)`, [
    id, toDb(was.name), toKey(nameKey(was.name)), nameOrderKey(was.name), db(was.category), textArray(was.tags.map(toDb)), was.status, db(was.description),
    was.price === null ? null : priceCents(was.price), was.sku, was.barcode, searchKeyOf(was.name), textArray(searchStartsOf(was.name)),
    JSON.stringify(was.photos), version, Date.parse(was.createdAt), now,
    was.lowStockAt ?? null, stock?.onHand ?? null, stock?.reserved ?? null, stock?.available ?? null
  ])
  await tx.query('INSERT INTO plant_tags (tag, plant_id) SELECT t, $1 FROM unnest($2::text[]) AS t', [id, was.tags.map(toDb)])
  await tx.query('DELETE FROM trash WHERE id = $1', [id])
  tx.count(was.status as PlantStatus, 1)
  if (stock !== null) {
    tx.count('units_on_hand', stock.onHand)
    tx.count('units_reserved', stock.reserved)
  }
  // The fields are those it was deleted with: its history's entry names no change.
  tx.change('created', id, version, toRecord(plant), now, actor, NO_CHANGES, 'restored')
  return plant
}

/** Removes the plant from the trash for good, and the photo files nothing names any more. */
export async function purgeTrashed (tx: Tx, id: number): Promise<void> {
  const entry = await entryOf(tx, id)
  await releasePhotos(tx, entry.plant.photos)
  await tx.query('DELETE FROM trash WHERE id = $1', [id])
  // Gone for good: its history goes too (GET …/history is then 404, as for any unknown id).
  await tx.query('DELETE FROM history WHERE plant_id = $1', [id])
  await forgetStock(tx, [id])
}

/**
 * A purged plant's stock goes with it: its levels (else a location it held stock at could never be
 * deleted) and its ledger, kept as long as the plant's history. Trashing already took its units out
 * of the inventory, so no count moves here.
 */
async function forgetStock (client: Pick<pg.PoolClient, 'query'>, ids: number[]): Promise<void> {
  await client.query('DELETE FROM stock_levels WHERE plant_id = ANY ($1::bigint[])', [ids])
  await client.query('DELETE FROM stock_movements WHERE plant_id = ANY ($1::bigint[])', [ids])
}

async function releasePhotos (client: Pick<pg.PoolClient, 'query'>, photos: Photo[]): Promise<void> {
  // In name order (two instances lock files in one order).
  const names = photos.flatMap(fileNamesOf).sort()
  if (names.length === 0) return
  await client.query(UNREF_FILES, [names])
  await client.query(DROP_FILES, [[...new Set(names)]])
}

/** How many entries one transaction of the retention purge takes. */
const PURGE_BATCH = 200

/**
 * Purges the entries trashed at or before `cutoff`, oldest first, PURGE_BATCH a transaction (each
 * with its photos' references and its history). Only trash rows are deleted: a crash loses nothing outside the trash.
 * SKIP LOCKED: instances purging at once, or a restore holding an entry, never wait on each other.
 */
export async function purgeExpiredTrash (transaction: (work: (c: pg.PoolClient) => Promise<number>) => Promise<number>, cutoff: number): Promise<number> {
  return await purgeInBatches((batch) => transaction(async (c) => {
    const { rows } = await c.query<{ id: string, plant: string }>(`DELETE FROM trash WHERE id IN (
      SELECT id FROM trash WHERE trashed_at <= $1 ORDER BY trashed_at, id LIMIT $2 FOR UPDATE SKIP LOCKED) RETURNING id, plant`, [cutoff, batch])
    await releasePhotos(c, rows.flatMap((r) => (JSON.parse(r.plant) as StoredPlant).photos))
    if (rows.length > 0) {
      await c.query('DELETE FROM history WHERE plant_id = ANY ($1::bigint[])', [rows.map((r) => r.id)])
      await forgetStock(c, rows.map((r) => Number(r.id)))
    }
    return rows.length
  }), PURGE_BATCH)
}
