import Database from 'better-sqlite3'
import { toRecord, type Plant } from '../../catalogue/plant.js'
import { positionOf, type PlantQuery, type Position } from '../../catalogue/query.js'
import type { CatalogueKinds, CatalogueSnapshot, CatalogueTallies, Kind, StockLevelRow } from '../admin-store.js'
import { MOVEMENT_COLUMNS } from '../stock-rows.js'
import { RESERVATION_COLUMNS } from '../../catalogue/reservation.js'
import { WEBHOOK_COLUMNS, DELIVERY_COLUMNS } from '../webhook-rows.js'
import { listSql, searchFunctions } from './list-query.js'
import { storedPhotoFiles } from './photo-writes.js'
import { keptAnswerAsJson } from './movement-answer.js'
import { PLANT_COLUMNS, tupleToPlant, type PlantTuple } from './plant-rows.js'
import { levelsSql, mainOnRow } from './stock-migration.js'

// A data folder read without the store: one read-only connection with a small page cache, inside one
// read transaction, so a whole export or copy is a single consistent snapshot and its memory stays
// low (the store keeps a writer thread and a 16 MB cache per connection, which a reader does not need).

export const hasTable = (db: Database.Database, name: string): boolean =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined

/** AUTOINCREMENT remembers the highest id ever handed out, deleted ones included. */
const handedOut = (db: Database.Database, table: string, column: string): number => Math.max(
  (db.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').pluck().get(table) as number | undefined) ?? 0,
  db.prepare(`SELECT coalesce(max(${column}), 0) FROM ${table}`).pluck().get() as number)

/** Each kind's query, in its order; a table a catalogue of an older release lacks reads as empty. */
const KIND_SQL: Record<Exclude<Kind, 'photoFiles'>, { table: string, sql: string }> = {
  plants: { table: 'plants', sql: 'SELECT id, name, category, tags, status, version, photos, description, price, sku, barcode, created_at, updated_at, low_stock_at, on_hand, reserved, available FROM plants ORDER BY id' },
  changes: { table: 'changes', sql: 'SELECT seq, kind, plant_id, version, plant, at, actor, stock_events FROM changes ORDER BY seq' },
  idempotencyKeys: { table: 'idempotency_keys', sql: 'SELECT key, request_hash, plant_id, response, created_at FROM idempotency_keys ORDER BY key' },
  apiKeys: { table: 'api_keys', sql: 'SELECT name, scope, hash, created_at, expires_at, last_used_at, revoked_at FROM api_keys ORDER BY name' },
  trash: { table: 'trash', sql: 'SELECT id, plant, version, trashed_at, trashed_by FROM trash ORDER BY id' },
  history: { table: 'history', sql: 'SELECT plant_id, version, kind, at, actor, changes FROM history ORDER BY plant_id, version' },
  webhooks: { table: 'webhooks', sql: `SELECT ${WEBHOOK_COLUMNS} FROM webhooks ORDER BY id` },
  webhookDeliveries: { table: 'webhook_deliveries', sql: `SELECT webhook_id, ${DELIVERY_COLUMNS} FROM webhook_deliveries ORDER BY n` },
  locations: { table: 'locations', sql: 'SELECT name, created_at FROM locations ORDER BY name' },
  stockLevels: { table: 'stock_levels', sql: 'SELECT plant_id, location, on_hand, reserved FROM stock_levels ORDER BY plant_id, location' },
  stockMovements: { table: 'stock_movements', sql: `SELECT ${MOVEMENT_COLUMNS} FROM stock_movements ORDER BY seq` },
  reservations: { table: 'reservations', sql: `SELECT ${RESERVATION_COLUMNS} FROM reservations ORDER BY id` }
}

/**
 * The keys with those still waiting in recent_keys (key-book.ts), each key once with its newest
 * answer: a key kept in both was used again after it expired, and the waiting row is the newer.
 */
const KEYS_WITH_RECENT = `SELECT key, request_hash, plant_id, response, created_at FROM (
    SELECT key, request_hash, plant_id, response, created_at FROM idempotency_keys WHERE key NOT IN (SELECT key FROM recent_keys)
    UNION ALL
    SELECT key, request_hash, plant_id, response, created_at FROM (SELECT key, request_hash, plant_id, response, created_at, max(n) FROM recent_keys GROUP BY key))
  ORDER BY key`

export class SqliteSnapshot implements CatalogueSnapshot {
  private readonly db: Database.Database

  constructor (file: string) {
    this.db = new Database(file, { readonly: true, fileMustExist: true })
    try {
      this.db.pragma('busy_timeout = 10000')
      this.db.pragma('cache_size = -2000')
      // One read transaction: every table is read from the same snapshot, however long the reading takes.
      this.db.prepare('BEGIN').run()
    } catch (err) {
      this.db.close()
      throw err
    }
  }

  async * plants (pageSize: number, query?: PlantQuery): AsyncGenerator<Plant[]> {
    if (query) {
      yield * this.found(pageSize, query)
      return
    }
    const page = this.db.prepare<[number, number], PlantTuple>(`SELECT ${PLANT_COLUMNS} FROM plants p WHERE id > ? ORDER BY id LIMIT ?`).raw(true)
    let afterId = 0
    for (;;) {
      const rows = page.all(afterId, pageSize)
      if (rows.length === 0) return
      yield rows.map((r) => toRecord(tupleToPlant(r)))
      afterId = rows[rows.length - 1][0]
    }
  }

  /** The store's own list query, walked in one snapshot; an export has no time limit, so its guard never stops it. */
  private async * found (pageSize: number, query: PlantQuery): AsyncGenerator<Plant[]> {
    this.db.function('query_guard', { deterministic: false }, (_id: unknown) => 1)
    searchFunctions(this.db, Infinity)
    // A SKU or barcode is matched by its own index's walk (the order's walk leaves them out).
    const driver = query.sku !== undefined || query.barcode !== undefined ? { kind: 'lookup' as const } : { kind: 'order' as const }
    let after: Position = { id: 0 }
    for (;;) {
      const { text, args } = listSql({ ...query, afterId: after.id, afterKey: after.key, afterValue: after.value, limit: pageSize }, driver)
      const rows = (this.db.prepare(text).raw(true).all(...args) as PlantTuple[]).map((r) => toRecord(tupleToPlant(r)))
      if (rows.length === 0) return
      yield rows
      after = positionOf(rows[rows.length - 1], query.sort)
    }
  }

  async * rows<K extends Kind> (kind: K, pageSize: number, order: 'written' | 'key' = 'key'): AsyncGenerator<Array<CatalogueKinds[K]>> {
    if (kind === 'photoFiles') {
      if (!hasTable(this.db, 'photo_files')) return
      for (const file of storedPhotoFiles(this.db)) yield [file as CatalogueKinds[K]]
      return
    }
    const { table, sql } = KIND_SQL[kind as Exclude<Kind, 'photoFiles'>]
    if (!hasTable(this.db, table)) return
    const text = this.sqlOf(kind, sql, order)
    const plants = kind === 'plants'
    // A movement's answer is kept packed on SQLite (movement-answer.ts): a copy gets it as JSON.
    const keys = kind === 'idempotencyKeys'
    let page: Array<CatalogueKinds[K]> = []
    for (const row of this.db.prepare(text).iterate() as IterableIterator<Record<string, unknown>>) {
      page.push((plants ? { ...row, tags: JSON.parse(row.tags as string) } : keys ? { ...row, response: keptAnswerAsJson(row.response as string) } : row) as CatalogueKinds[K])
      if (page.length >= pageSize) {
        yield page
        page = []
      }
    }
    if (page.length > 0) yield page
  }

  /** A kind's query as this catalogue's version needs it. */
  private sqlOf (kind: Kind, sql: string, order: 'written' | 'key'): string {
    // The history in the order it was written, for a copy whose retention purge meets the oldest first.
    if (kind === 'history' && order === 'written') return sql.replace('ORDER BY plant_id, version', 'ORDER BY seq')
    if (kind === 'idempotencyKeys' && hasTable(this.db, 'recent_keys')) return KEYS_WITH_RECENT
    // Main's level on the plant's row (migration 33): the rows and their order as stock_levels alone gave them before.
    if (kind === 'stockLevels' && mainOnRow(this.db)) return levelsSql()
    return sql
  }

  async tallies (): Promise<CatalogueTallies> {
    const db = this.db
    const count = (table: string): number => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number
    const byStatus = new Map((db.prepare('SELECT status, count(*) AS n FROM plants GROUP BY status').all() as Array<{ status: string, n: number }>).map((r) => [r.status, r.n]))
    const webhooks = hasTable(db, 'webhooks')
    return {
      plants: count('plants'),
      // A plant's tags are distinct already: its list's length is its tag rows.
      tags: db.prepare('SELECT coalesce(sum(json_array_length(tags)), 0) FROM plants').pluck().get() as number,
      changes: count('changes'),
      idempotencyKeys: hasTable(db, 'recent_keys') ? db.prepare(`SELECT count(*) FROM (${KEYS_WITH_RECENT})`).pluck().get() as number : count('idempotency_keys'),
      inventory: { available: byStatus.get('available') ?? 0, pending: byStatus.get('pending') ?? 0, sold: byStatus.get('sold') ?? 0 },
      lastId: handedOut(db, 'plants', 'id'),
      feedHead: handedOut(db, 'changes', 'seq'),
      feedFloor: db.prepare("SELECT value FROM meta WHERE key = 'feed_floor'").pluck().get() as number,
      lastWebhookId: webhooks ? handedOut(db, 'webhooks', 'id') : 0,
      lastDeliveryN: webhooks ? handedOut(db, 'webhook_deliveries', 'n') : 0,
      lastMovementSeq: hasTable(db, 'stock_movements') ? handedOut(db, 'stock_movements', 'seq') : 0
    }
  }

  async levels (ids: number[]): Promise<StockLevelRow[]> {
    if (ids.length === 0 || !hasTable(this.db, 'stock_levels')) return []
    const these = 'IN (SELECT value FROM json_each(@ids))'
    const sql = mainOnRow(this.db) ? levelsSql(these) : `SELECT plant_id, location, on_hand, reserved FROM stock_levels WHERE plant_id ${these} ORDER BY plant_id, location`
    return this.db.prepare(sql).all({ ids: JSON.stringify(ids) }) as StockLevelRow[]
  }

  async close (): Promise<void> {
    if (this.db.inTransaction) this.db.prepare('COMMIT').run()
    this.db.close()
  }
}
