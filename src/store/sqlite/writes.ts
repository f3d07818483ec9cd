import Database from 'better-sqlite3'
import { nameKey } from '../../catalogue/name-key.js'
import { nameOrderKey } from '../../catalogue/name-order.js'
import type { BatchResult } from '../../catalogue/batch.js'
import { fieldChanges, fieldsAt, KIND_CODES, NO_CHANGES, sameFields, type FieldChanges } from '../../catalogue/history.js'
import { photoRefusalOf, type NewPhoto, type Photo, type PhotoRefusal } from '../../catalogue/photo.js'
import { stockOf, toRecord, type PlantFields, type PlantPatch, type PlantStatus, type StockTotals, type StoredPlant } from '../../catalogue/plant.js'
import { filterKey } from '../../catalogue/query.js'
import { canonicalPrice, formatCents, priceCents, skuKey, timestamp } from '../../catalogue/price-sku-barcode.js'
import type { CreateResult, IdempotencyClaim } from '../plant-store.js'
import { historyForgetter, historySince, INSERT_HISTORY } from './history.js'
import { stockForgetter } from './trash.js'
import { photoFiles } from './photo-writes.js'
import { keyBook } from './key-book.js'
import { stockStateOf } from './stock-migration.js'
import { searchBacklog } from './search-backlog.js'
import { isWebhookWrite, webhookWriter, type WebhookWriteOp } from './webhook-writes.js'
import { isStockWrite, stockWriter, type StockWriteOp, type StockWriteResult } from './stock-writes.js'
import { IdempotencyKeyReused, PlantNotFound, VersionMismatch } from '../../catalogue/errors.js'
import { MAIN_LOCATION, stockRefusalOf, type StockRefusal } from '../../catalogue/stock.js'
import { boundsWidener } from './category-name-bounds.js'
import { sameRequest } from '../idempotency.js'
import { PLANT_COLUMNS, tupleToPlant, type PlantTuple } from './plant-rows.js'

// The write side of the SQLite store as plain data in, plain data out, so the same code commits
// in the calling thread (an in-memory database) or in the writer thread (a database file).

/** A write of a plant's fields: what the single routes do, and what a batch is made of. */
export type PlantWriteOp =
  | { kind: 'create', fields: PlantFields, idempotency?: IdempotencyClaim, now: number, actor: string }
  /** `reverted`: a revert's fields, which the history names as such. */
  | { kind: 'update', id: number, fields: PlantFields, expectedVersions?: number[], now: number, actor: string, reverted?: true }
  | { kind: 'patch', id: number, patch: PlantPatch, expectedVersions?: number[], now: number, actor: string }
  | { kind: 'remove', id: number, expectedVersions?: number[], now: number, actor: string }

/** One write; `now` is taken by the caller so the store's clock stays the caller's; `actor` is who makes it (WriteMeta). */
export type WriteOp =
  | PlantWriteOp
  /** Plant writes applied all or nothing (a savepoint in the group's transaction); the key covers them all. `results: false`: answered with no plants (BatchOptions). */
  | { kind: 'batch', ops: PlantWriteOp[], idempotency?: IdempotencyClaim, now: number, actor: string, results?: false }
  | { kind: 'add-photo', id: number, photo: NewPhoto, expectedVersions?: number[], now: number, actor: string }
  | { kind: 'remove-photo', id: number, photoId: string, expectedVersions?: number[], now: number, actor: string }
  | { kind: 'order-photos', id: number, order: string[], expectedVersions?: number[], now: number, actor: string }
  /** Brings a plant back from the trash (trash.ts) under its id, as a new version. */
  | { kind: 'restore-trashed', id: number, expectedVersions?: number[], now: number, actor: string }
  /** Removes a plant from the trash for good, with its photos' references and its history (no change: the plant was deleted already). */
  | { kind: 'purge-trashed', id: number, now: number, actor: string }
  /** The webhook deliverer's attempts, cursor and leases (webhook-writes.ts): no change, no plant. */
  | WebhookWriteOp
  /** Locations and movements (stock-writes.ts). */
  | StockWriteOp
  /** Gives a plant the fields it had at `version` (its history walked back), as an update would. */
  | { kind: 'revert', id: number, version: number, expectedVersions?: number[], status: boolean, now: number, actor: string }

export type Refusal = 'not-found' | 'trashed-not-found' | 'version-mismatch' | 'version-not-kept' | 'idempotency-key-reused' | 'sku-taken' | 'batch' | 'stock' | PhotoRefusal
/** A refused write of a batch, by its index in the batch. */
export interface IndexedRefusal { index: number, refusal: Refusal, sku?: string, holder?: number }
/** An Idempotency-Key's first use and the end of its keeping (epoch ms), for 'idempotency-key-reused'. */
export interface KeyUse { usedAt: number, keptUntil: number }
/** A refusal, with the SKU and the plant holding it for 'sku-taken', and each refused write for 'batch'. */
export type Outcome =
  | { ok: true, value: CreateResult | BatchResult | StockWriteResult }
  | { ok: false, refusal: Refusal, sku?: string, holder?: number, refusals?: IndexedRefusal[], key?: KeyUse, stock?: StockRefusal }
/** Every write of a group commits together, or the group fails as a whole. */
export type GroupResult = { outcomes: Outcome[] } | { failure: { code?: string, message: string } }

/** How much of the database file is memory-mapped for reads (a larger file is read beyond it as before). */
export const MMAP_BYTES = 1024 * 1024 * 1024

/** Opens a connection with the settings every connection to the catalogue must have (a file's, ':memory:', or an in-memory copy of a serialised database). */
export function connect (filename: string | Buffer): Database.Database {
  const db = new Database(filename)
  db.pragma('journal_mode = WAL')
  // FULL: a commit is fsynced before it returns, so an acknowledged write survives power loss.
  db.pragma('synchronous = FULL')
  db.pragma('busy_timeout = 5000')
  // Reads of the file go through a memory map instead of a pread into SQLite's own page cache: a
  // random read on 1,000,000 plants no longer pays a system call per page. The mapped pages are the
  // OS page cache, shared by every connection and counted as file pages (RssFile), not as the
  // process's own memory (RssAnon). Writes still go through the WAL with write() and fsync.
  db.pragma(`mmap_size = ${MMAP_BYTES}`)
  return db
}

class Refused {
  constructor (readonly refusal: Refusal, readonly sku?: string, readonly holder?: number, readonly refusals?: IndexedRefusal[], readonly key?: KeyUse, readonly stock?: StockRefusal) {}
}

/** A plant's row as the writes read it (price in cents, times in epoch milliseconds). */
interface CurrentRow {
  version: number,
  name: string,
  category: string | null,
  tags: string,
  status: PlantStatus,
  photos: string,
  description: string | null,
  price: number | null,
  sku: string | null,
  barcode: string | null,
  created_at: number,
  updated_at: number,
  low_stock_at: number | null,
  on_hand: number | null,
  reserved: number | null,
  available: number | null,
  /** The seq of its newest history entry (history.ts), null before history was kept. */
  history_seq: number | null,
  /** The seq of its newest movement (stock-ledger.ts), null before its first. */
  ledger_seq: number | null
}

/** The plant as a stock write reads it: PlantTuple, then history_seq, ledger_seq and its level at main (main_on_hand, main_reserved: null while it has none). */
type StockTuple = PlantTuple & { 17: number | null, 18: number | null, 19: number | null, 20: number | null }

/** The stored plant a write answers: its fields (price as the record shows it) and times. */
function storedPlant (id: number, fields: PlantFields, photos: Photo[], version: number, createdAt: number, updatedAt: number, stock: StockTotals | null): StoredPlant {
  const { name, category, tags, status, description, price, sku, barcode, lowStockAt } = fields
  return { id, name, category, tags, status, description, price: canonicalPrice(price), sku, barcode, stock, lowStockAt, photos, createdAt: timestamp(createdAt), updatedAt: timestamp(updatedAt), version }
}

/** The stock's totals as a row holds them. */
const stockOfRow = (row: CurrentRow): StockTotals | null => stockOf(row.on_hand, row.reserved, row.available)

/** The fields of a stored row (price back to its record form). */
const fieldsOf = (row: CurrentRow): PlantFields => ({
  name: row.name,
  category: row.category,
  tags: JSON.parse(row.tags),
  status: row.status,
  description: row.description,
  price: row.price === null ? null : formatCents(row.price),
  sku: row.sku,
  barcode: row.barcode,
  lowStockAt: row.low_stock_at
})

const centsOf = (price: string | null): number | null => price === null ? null : priceCents(price)!

/** Returns a function that runs a batch of writes in one transaction: one commit, one fsync. */
export function batchWriter (db: Database.Database, idempotencyTtlMs: number): (batch: WriteOp[]) => GroupResult {
  const s = {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    savepoint: db.prepare('SAVEPOINT batch'),
    release: db.prepare('RELEASE batch'),
    rollbackTo: db.prepare('ROLLBACK TO batch'),
    current: db.prepare<[number], CurrentRow>(
      'SELECT version, name, category, tags, status, photos, description, price, sku, barcode, created_at, updated_at, low_stock_at, on_hand, reserved, available, history_seq, ledger_seq FROM plants WHERE id = ?'),
    // A stock write reads the plant as an array, as a list does (plant-rows.ts), with main's level
    // beside it: a keyed row object, built by better-sqlite3 a property at a time, cost a sale's
    // read ~1 µs a column and made every later read of it slower (bench/results/issue-49-stock.md, stop 63).
    stockCurrent: db.prepare<[number], StockTuple>(`SELECT ${PLANT_COLUMNS}, p.history_seq, p.ledger_seq, p.main_on_hand, p.main_reserved FROM plants p WHERE p.id = ?`).raw(true),
    // The plant holding a SKU (ignoring case): the unique index plants_sku answers it.
    skuHolder: db.prepare<[string], number>('SELECT id FROM plants WHERE sku IS NOT NULL AND lower(sku) = ?').pluck(),
    setPhotos: db.prepare('UPDATE plants SET photos = ?, version = ?, updated_at = ?, history_seq = ? WHERE id = ?'),
    // A new plant's first entry is written once its id is known.
    setHistoryHead: db.prepare('UPDATE plants SET history_seq = ? WHERE id = ?'),
    insert: db.prepare('INSERT INTO plants (name, name_key, name_order_key, category, tags, status, description, price, sku, barcode, low_stock_at, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)'),
    count: db.prepare("UPDATE sqlite_sequence SET seq = seq + ? WHERE name = 'status:' || ?"),
    // The units the plants that track stock hold (stock-writes.ts keeps them through movements).
    units: db.prepare("UPDATE meta SET value = value + ? WHERE key = 'units_on_hand'"),
    unitsReserved: db.prepare("UPDATE meta SET value = value + ? WHERE key = 'units_reserved'"),
    delete: db.prepare('DELETE FROM plants WHERE id = ?'),
    // A tag row is keyed by the tag's key, the one the tag filter compares (catalogue/query.ts filterKey).
    insertTag: db.prepare('INSERT INTO plant_tags (tag_key, tag, plant_id) VALUES (?, ?, ?)'),
    deleteTag: db.prepare('DELETE FROM plant_tags WHERE tag_key = ? AND tag = ? AND plant_id = ?'),
    // A deleted plant moves to the trash (trash.ts); a restore inserts it again under its id.
    trash: db.prepare('INSERT INTO trash (id, plant, version, trashed_at, trashed_by, history_seq, ledger_seq) VALUES (?, ?, ?, ?, ?, ?, ?)'),
    trashed: db.prepare<[number], { plant: string, version: number, history_seq: number | null, ledger_seq: number | null }>('SELECT plant, version, history_seq, ledger_seq FROM trash WHERE id = ?'),
    untrash: db.prepare('DELETE FROM trash WHERE id = ?'),
    insertAgain: db.prepare('INSERT INTO plants (id, name, name_key, name_order_key, category, tags, status, description, price, sku, barcode, photos, version, created_at, updated_at, history_seq, low_stock_at, on_hand, reserved, available, ledger_seq, stock_state, main_on_hand, main_reserved) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    // A live plant's main level is on its row; one in the trash keeps it in stock_levels, as its other levels (stock-migration.ts).
    trashMain: db.prepare(`INSERT INTO stock_levels (plant_id, location, on_hand, reserved) SELECT id, '${MAIN_LOCATION}', main_on_hand, main_reserved FROM plants WHERE id = ? AND main_on_hand IS NOT NULL`),
    trashedMain: db.prepare<[number], { on_hand: number, reserved: number }>(`DELETE FROM stock_levels WHERE plant_id = ? AND location = '${MAIN_LOCATION}' RETURNING on_hand, reserved`),
    // index_remove / index_add: what the write changes in the name search index (search-backlog.ts).
    insertChange: db.prepare('INSERT INTO changes (kind, plant_id, version, plant, at, index_remove, index_add, actor) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    // Every change records its version in the plant's history (history.ts), in the same transaction.
    insertHistory: db.prepare(INSERT_HISTORY)
  }
  const files = photoFiles(db)
  const widenBounds = boundsWidener(db)
  const keys = keyBook(db)
  const moveUnits = (stock: StockTotals | null, sign: 1 | -1): void => {
    if (stock === null) return
    s.units.run(sign * stock.onHand)
    s.unitsReserved.run(sign * stock.reserved)
  }
  /** A key used for another request: the 422 says when, and until when the key is kept. */
  const reused = (usedAt: number): Refused =>
    new Refused('idempotency-key-reused', undefined, undefined, undefined, { usedAt, keptUntil: usedAt + idempotencyTtlMs })
  const webhooks = webhookWriter(db)
  const stockWrite = stockWriter(db, idempotencyTtlMs, {
    load: (id) => {
      const row = s.stockCurrent.get(id)
      if (row === undefined) return undefined
      const main = row[19] === null ? undefined : { onHand: row[19], reserved: row[20]! }
      return { plant: tupleToPlant(row), historySeq: row[17], ledgerSeq: row[18], main }
    },
    record: (id, version, now, actor, changes, prev) => Number(s.insertHistory.run(id, version, KIND_CODES.updated, now, actor, changes, prev).lastInsertRowid),
    change: (plant, now, actor) => Number(s.insertChange.run('updated', plant.id, plant.version, JSON.stringify(toRecord(plant)), now, null, null, actor).lastInsertRowid),
    count: (status, delta) => { count(status, delta) },
    units: (delta) => { unitsMoved += delta },
    keys
  })
  /** A stock write, its refusals as the writer's. */
  const stockWrites = (op: StockWriteOp): StockWriteResult => {
    try {
      return stockWrite(op)
    } catch (error) {
      if (error instanceof IdempotencyKeyReused) throw reused(error.usedAt)
      if (error instanceof Refused) throw error
      const refusal = stockRefusalOf(error)
      if (refusal !== undefined) throw new Refused('stock', undefined, undefined, undefined, undefined, refusal)
      if (error instanceof PlantNotFound) throw new Refused('not-found')
      if (error instanceof VersionMismatch) throw new Refused('version-mismatch')
      throw error
    }
  }
  const since = historySince(db)
  const forgetHistory = historyForgetter(db)
  const forgetStock = stockForgetter(db)
  /** Appends a version to the plant's history after `prev`; answers its seq, the plant's new history_seq. */
  const record = (kind: keyof typeof KIND_CODES, id: number, version: number, now: number, actor: string, changes: FieldChanges, prev: number | null): number =>
    Number(s.insertHistory.run(id, version, KIND_CODES[kind], now, actor, JSON.stringify(changes), prev).lastInsertRowid)

  // An update names the indexed columns (name_key, name_order_key, status, category, price, sku, barcode) only when
  // they change, so an unchanged one costs no index pages: on a large catalogue every touched page is
  // a random one in the WAL.
  const updates = new Map<number, Database.Statement>()
  const updateStatement = (name: boolean, status: boolean, category: boolean, price: boolean, sku: boolean, barcode: boolean): Database.Statement => {
    const mask = (name ? 1 : 0) + (status ? 2 : 0) + (category ? 4 : 0) + (price ? 8 : 0) + (sku ? 16 : 0) + (barcode ? 32 : 0)
    let statement = updates.get(mask)
    if (!statement) {
      const set = ['tags = ?', 'version = ?', 'updated_at = ?', 'description = ?', 'history_seq = ?', 'low_stock_at = ?', ...(name ? ['name = ?', 'name_key = ?', 'name_order_key = ?'] : []), ...(status ? ['status = ?'] : []),
        ...(category ? ['category = ?'] : []), ...(price ? ['price = ?'] : []), ...(sku ? ['sku = ?'] : []), ...(barcode ? ['barcode = ?'] : [])]
      statement = db.prepare(`UPDATE plants SET ${set.join(', ')} WHERE id = ?`)
      updates.set(mask, statement)
    }
    return statement
  }

  // The search index is written behind (search-backlog.ts): a write names its index change in its change row.
  const search = searchBacklog(db)

  // The status counts change with the batch and are written once, at its end, in its transaction.
  const counts = new Map<string, number>()
  const count = (status: string, delta: number): void => { counts.set(status, (counts.get(status) ?? 0) + delta) }
  // So do the units on hand the group's movements move: one statement a group, not one a sale.
  let unitsMoved = 0

  /** Refuses a SKU another plant than `id` has (the writes of a batch run one after another: no race). */
  const claimSku = (sku: string | null, id: number | undefined): void => {
    if (sku === null) return
    const holder = s.skuHolder.get(skuKey(sku))
    if (holder !== undefined && holder !== id) throw new Refused('sku-taken', sku, holder)
  }

  // Each write refuses (not found, version mismatch, SKU taken) before it changes anything, so a
  // refused write leaves nothing behind in the shared transaction.
  function apply (op: WriteOp): CreateResult | BatchResult | StockWriteResult {
    if (isWebhookWrite(op)) return webhooks(op)
    if (isStockWrite(op)) return stockWrites(op)
    if (op.kind === 'batch') return applyBatch(op)
    const now = op.now
    if (op.kind === 'create') {
      const { fields, idempotency } = op
      if (idempotency) {
        const earlier = keys.find(idempotency.key, now - idempotencyTtlMs)
        if (earlier) {
          if (!sameRequest(earlier.request_hash, idempotency.requestHash)) throw reused(earlier.created_at)
          return { plant: JSON.parse(earlier.response) as StoredPlant, replayed: true }
        }
      }
      const { name, category, tags, status, description, price, sku, barcode, lowStockAt } = fields
      claimSku(sku, undefined)
      const key = nameKey(name)
      const orderKey = nameOrderKey(name)
      const id = Number(s.insert.run(name, key, orderKey, category, JSON.stringify(tags), status, description, centsOf(price), sku, barcode, lowStockAt, now, now).lastInsertRowid)
      widenBounds(category, orderKey)
      for (const tag of tags) s.insertTag.run(filterKey(tag), tag, id)
      count(status, 1)
      const plant = storedPlant(id, fields, [], 1, now, now, null)
      if (idempotency) keys.put(idempotency.key, idempotency.requestHash, id, JSON.stringify(plant), now)
      s.insertChange.run('created', id, 1, JSON.stringify(toRecord(plant)), now, null, key, op.actor)
      s.setHistoryHead.run(record('created', id, 1, now, op.actor, fieldChanges(null, plant), null), id)
      return { plant, replayed: false }
    }
    if (op.kind === 'restore-trashed' || op.kind === 'purge-trashed') return fromTrash(op)
    if (op.kind === 'revert') return revert(op)
    const current = s.current.get(op.id)
    if (!current) throw new Refused('not-found')
    if (op.expectedVersions && !op.expectedVersions.includes(current.version)) throw new Refused('version-mismatch')
    if (op.kind === 'remove') {
      s.trashMain.run(op.id)
      s.delete.run(op.id)
      for (const tag of JSON.parse(current.tags) as string[]) s.deleteTag.run(filterKey(tag), tag, op.id)
      // The photos' files keep their references: the trash names them until the plant is purged.
      const was = storedPlant(op.id, fieldsOf(current), JSON.parse(current.photos) as Photo[], current.version, current.created_at, current.updated_at, stockOfRow(current))
      const head = record('deleted', op.id, current.version + 1, now, op.actor, NO_CHANGES, current.history_seq)
      s.trash.run(op.id, JSON.stringify(was), current.version + 1, now, op.actor, head, current.ledger_seq)
      count(current.status, -1)
      // Its stock goes to the trash with it: counted nowhere until a restore.
      moveUnits(was.stock, -1)
      s.insertChange.run('deleted', op.id, current.version + 1, null, now, nameKey(current.name), null, op.actor)
      return undefined
    }
    if (op.kind === 'add-photo' || op.kind === 'remove-photo' || op.kind === 'order-photos') {
      const before = JSON.parse(current.photos) as Photo[]
      let photos: Photo[]
      try {
        photos = op.kind === 'add-photo'
          ? files.add(before, op.photo)
          : op.kind === 'remove-photo' ? files.remove(before, op.photoId) : files.order(before, op.order)
      } catch (err) {
        const refusal = photoRefusalOf(err)
        throw refusal === undefined ? err : new Refused(refusal)
      }
      const version = current.version + 1
      const plant = storedPlant(op.id, fieldsOf(current), photos, version, current.created_at, now, stockOfRow(current))
      const head = record('updated', op.id, version, now, op.actor, fieldChanges({ ...plant, photos: before }, plant), current.history_seq)
      s.setPhotos.run(JSON.stringify(photos), version, now, head, op.id)
      s.insertChange.run('updated', op.id, version, JSON.stringify(toRecord(plant)), now, null, null, op.actor)
      return plant
    }
    const before: string[] = JSON.parse(current.tags)
    const { id } = op
    // The merge happens here, against the row as it is in this transaction: concurrent patches of
    // different fields both keep their change.
    const fields: PlantFields = op.kind === 'update' ? op.fields : { ...fieldsOf(current), ...op.patch }
    const photos = JSON.parse(current.photos) as Photo[]
    const stock = stockOfRow(current)
    if (op.kind === 'patch' && Object.keys(op.patch).length === 0) return storedPlant(id, fields, photos, current.version, current.created_at, current.updated_at, stock)
    const { name, category, tags, status, description, sku, barcode, lowStockAt } = fields
    const price = centsOf(fields.price)
    if (sku !== null && (current.sku === null || skuKey(sku) !== skuKey(current.sku))) claimSku(sku, id)
    const version = current.version + 1
    const nameChanged = name !== current.name
    const statusChanged = status !== current.status
    const categoryChanged = category !== current.category
    const priceChanged = price !== current.price
    const skuChanged = sku !== current.sku
    const barcodeChanged = barcode !== current.barcode
    const [oldKey, newKey] = nameChanged ? [nameKey(current.name), nameKey(name)] : []
    const reindexed = oldKey !== newKey
    const plant = storedPlant(id, fields, photos, version, current.created_at, now, stock)
    const was = storedPlant(id, { ...fieldsOf(current), tags: before }, photos, current.version, current.created_at, current.updated_at, stock)
    const head = record(op.kind === 'update' && op.reverted === true ? 'reverted' : 'updated', id, version, now, op.actor, fieldChanges(was, plant), current.history_seq)
    const args: unknown[] = [JSON.stringify(tags), version, now, description, head, lowStockAt]
    const orderKey = nameChanged ? nameOrderKey(name) : undefined
    if (nameChanged) args.push(name, newKey, orderKey)
    if (statusChanged) args.push(status)
    if (categoryChanged) args.push(category)
    if (priceChanged) args.push(price)
    if (skuChanged) args.push(sku)
    if (barcodeChanged) args.push(barcode)
    updateStatement(nameChanged, statusChanged, categoryChanged, priceChanged, skuChanged, barcodeChanged).run(...args, id)
    if (nameChanged || categoryChanged) widenBounds(category, orderKey ?? nameOrderKey(name))
    if (statusChanged) {
      count(current.status, -1)
      count(status, 1)
    }
    // Only the tags that come or go are written.
    for (const tag of before) if (!tags.includes(tag)) s.deleteTag.run(filterKey(tag), tag, id)
    for (const tag of tags) if (!before.includes(tag)) s.insertTag.run(filterKey(tag), tag, id)
    s.insertChange.run('updated', id, version, JSON.stringify(toRecord(plant)), now, reindexed ? oldKey : null, reindexed ? newKey : null, op.actor)
    return plant
  }

  /** A restore from the trash (refused when another plant has taken its SKU since), or a purge. */
  function fromTrash (op: Extract<WriteOp, { kind: 'restore-trashed' | 'purge-trashed' }>): StoredPlant | undefined {
    const entry = s.trashed.get(op.id)
    if (!entry) throw new Refused('trashed-not-found')
    const was = JSON.parse(entry.plant) as StoredPlant
    if (op.kind === 'purge-trashed') {
      files.release(was.photos)
      s.untrash.run(op.id)
      forgetHistory(op.id, entry.history_seq)
      forgetStock(op.id, entry.ledger_seq)
      return undefined
    }
    if (op.expectedVersions && !op.expectedVersions.includes(entry.version)) throw new Refused('version-mismatch')
    const { name, category, tags, description, price, sku, barcode } = was
    const lowStockAt = was.lowStockAt ?? null
    const stock = was.stock ?? null
    const status = was.status as PlantStatus
    claimSku(sku, undefined)
    const version = entry.version + 1
    const createdAt = Date.parse(was.createdAt)
    const key = nameKey(name)
    const head = record('restored', op.id, version, op.now, op.actor, NO_CHANGES, entry.history_seq)
    const orderKey = nameOrderKey(name)
    widenBounds(category, orderKey)
    const main = s.trashedMain.get(op.id)
    s.insertAgain.run(op.id, name, key, orderKey, category, JSON.stringify(tags), status, description, centsOf(price), sku, barcode, JSON.stringify(was.photos), version, createdAt, op.now, head,
      lowStockAt, stock?.onHand ?? null, stock?.reserved ?? null, stock?.available ?? null, entry.ledger_seq, stockStateOf(stock?.available ?? null, lowStockAt), main?.on_hand ?? null, main?.reserved ?? null)
    for (const tag of tags) s.insertTag.run(filterKey(tag), tag, op.id)
    count(status, 1)
    moveUnits(stock, 1)
    s.untrash.run(op.id)
    const plant = storedPlant(op.id, { name, category, tags, status, description, price, sku, barcode, lowStockAt }, was.photos, version, createdAt, op.now, stock)
    s.insertChange.run('created', op.id, version, JSON.stringify(toRecord(plant)), op.now, null, key, op.actor)
    return plant
  }

  /**
   * A revert: the fields at `version`, from the history walked back from now (the status kept unless
   * `op.status`); written as an update (its SKU claimed as any update's), or nothing at all when
   * they are the fields already.
   */
  function revert (op: Extract<WriteOp, { kind: 'revert' }>): StoredPlant {
    const current = s.current.get(op.id)
    if (!current) throw new Refused('not-found')
    if (op.expectedVersions && !op.expectedVersions.includes(current.version)) throw new Refused('version-mismatch')
    const now = fieldsOf(current)
    const then = fieldsAt(now, current.version, op.version, since(op.id, current.history_seq, op.version))
    if (then === undefined) throw new Refused('version-not-kept')
    const fields = op.status ? then : { ...then, status: now.status }
    if (sameFields(fields, now)) return storedPlant(op.id, now, JSON.parse(current.photos) as Photo[], current.version, current.created_at, current.updated_at, stockOfRow(current))
    return apply({ kind: 'update', id: op.id, fields, now: op.now, actor: op.actor, reverted: true }) as StoredPlant
  }

  /**
   * The writes of a batch, each through apply() as if sent alone, inside a savepoint: every refusal
   * is collected (the writes after one still run, so each is judged against the plants as the
   * writes before it would leave them), and any refusal rolls the savepoint back, counts included.
   * The answer is kept under the Idempotency-Key (plant_id 0: no single plant).
   */
  function applyBatch (op: Extract<WriteOp, { kind: 'batch' }>): BatchResult {
    const { idempotency, now } = op
    if (idempotency) {
      const earlier = keys.find(idempotency.key, now - idempotencyTtlMs)
      if (earlier) {
        if (!sameRequest(earlier.request_hash, idempotency.requestHash)) throw reused(earlier.created_at)
        return { plants: op.results === false ? [] : JSON.parse(earlier.response) as Array<StoredPlant | null>, replayed: true }
      }
    }
    const countsBefore = new Map(counts)
    const plants: Array<StoredPlant | null> = []
    const refusals: IndexedRefusal[] = []
    s.savepoint.run()
    op.ops.forEach((write, index) => {
      try {
        const value = apply(write) as CreateResult | StoredPlant | undefined
        plants.push(value === undefined ? null : 'replayed' in value ? value.plant : value)
      } catch (error) {
        if (!(error instanceof Refused)) throw error
        refusals.push({ index, refusal: error.refusal, sku: error.sku, holder: error.holder })
        plants.push(null)
      }
    })
    if (refusals.length > 0) {
      s.rollbackTo.run()
      s.release.run()
      counts.clear()
      for (const [status, delta] of countsBefore) counts.set(status, delta)
      throw new Refused('batch', undefined, undefined, refusals)
    }
    s.release.run()
    if (idempotency) keys.put(idempotency.key, idempotency.requestHash, 0, JSON.stringify(plants), now)
    return { plants: op.results === false ? [] : plants, replayed: false }
  }

  return (batch) => {
    const outcomes: Outcome[] = []
    counts.clear()
    unitsMoved = 0
    try {
      s.begin.run()
      keys.begin()
      for (const op of batch) {
        try {
          outcomes.push({ ok: true, value: apply(op) })
        } catch (error) {
          if (!(error instanceof Refused)) throw error // anything else aborts the whole batch
          outcomes.push({ ok: false, refusal: error.refusal, sku: error.sku, holder: error.holder, refusals: error.refusals, key: error.key, stock: error.stock })
        }
      }
      search.settle(batch.reduce((n, op) => n + (op.kind === 'batch' ? op.ops.length : isWebhookWrite(op) || isStockWrite(op) ? 0 : 1), 0))
      for (const [status, delta] of counts) if (delta !== 0) s.count.run(delta, status)
      if (unitsMoved !== 0) s.units.run(unitsMoved)
      keys.settle()
      s.commit.run()
      return { outcomes }
    } catch (err) {
      if (db.inTransaction) {
        try { s.rollback.run() } catch { /* the connection is already out of the transaction */ }
      }
      // The rollback took back the group's keys, or a move of the waiting ones: the map follows the table.
      keys.reload()
      const { code, message } = err as { code?: unknown, message?: unknown }
      return { failure: { code: typeof code === 'string' ? code : undefined, message: String(message ?? err) } }
    }
  }
}
