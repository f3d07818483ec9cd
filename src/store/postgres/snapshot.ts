import pg from 'pg'
import { toRecord, type Plant } from '../../catalogue/plant.js'
import { positionOf, type PlantQuery, type Position } from '../../catalogue/query.js'
import { CatalogueUnreachable, type CatalogueKinds, type CatalogueSnapshot, type CatalogueTallies, type Kind, type StockLevelRow } from '../admin-store.js'
import { MOVEMENT_COLUMNS } from '../stock-rows.js'
import { RESERVATION_COLUMNS } from '../../catalogue/reservation.js'
import { WEBHOOK_COLUMNS, DELIVERY_COLUMNS } from '../webhook-rows.js'
import { parseDatabaseUrl, types } from './connection.js'
import { ROW_COLUMNS, toPlant, type PlantRow } from './group-writes.js'
import { listQuery } from './list-query.js'
import { fromPostgresText, toPostgresText } from './text-escape.js'

/** The URL without its password or parameters, for messages. */
export function redactUrl (url: string): string {
  const u = new URL(url)
  return `${u.protocol}//${u.username ? `${u.username}${u.password ? ':***' : ''}@` : ''}${u.host}${u.pathname}`
}

/** One connection of the command line's own (BIGINTs as numbers, as the store's); a failure to connect names the address. */
export async function connectAdmin (databaseUrl: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: parseDatabaseUrl(databaseUrl).connectionString, types, connectionTimeoutMillis: 10_000, application_name: 'plants' })
  client.on('error', () => {}) // a lost connection fails the query in progress, which reports it
  try {
    await client.connect()
  } catch (err) {
    await client.end().catch(() => {})
    throw new CatalogueUnreachable(redactUrl(databaseUrl), err)
  }
  return client
}

/** Whether the database holds the store's tables (the service creates them when it first starts). */
export async function hasPlantsTable (client: pg.Client): Promise<boolean> {
  const { rows } = await client.query<{ present: boolean }>("SELECT to_regclass('plants') IS NOT NULL AS present")
  return rows[0].present
}

const ms = (column: string): string => `round(extract(epoch FROM ${column}) * 1000)::float8 AS ${column}`
const unescape = (s: string | null): string | null => s === null ? null : fromPostgresText(s)

/** Each kind read a keyset page at a time: its columns, its table, the key it is ordered by (byte order for text, as SQLite's). */
const KIND_SQL: Record<Kind, { columns: string, table: string, key: string[] }> = {
  plants: { columns: 'id, name, category, tags, status, version, photos, description, price, sku, barcode, created_at, updated_at, low_stock_at, on_hand, reserved, available', table: 'plants', key: ['id'] },
  changes: { columns: 'seq, kind, plant_id, version, plant, at, actor, stock_events', table: 'changes', key: ['seq'] },
  idempotencyKeys: { columns: 'key, request_hash, plant_id, response, created_at', table: 'idempotency_keys', key: ['key COLLATE "C"'] },
  apiKeys: { columns: `name, scope, hash, ${['created_at', 'expires_at', 'last_used_at', 'revoked_at'].map(ms).join(', ')}`, table: 'api_keys', key: ['name COLLATE "C"'] },
  trash: { columns: 'id, plant, version, trashed_at, trashed_by', table: 'trash', key: ['id'] },
  history: { columns: 'plant_id, version, kind, at, actor, changes', table: 'history', key: ['plant_id', 'version'] },
  photoFiles: { columns: 'name, refs, bytes', table: 'photo_files', key: ['name COLLATE "C"'] },
  webhooks: { columns: WEBHOOK_COLUMNS, table: 'webhooks', key: ['id'] },
  webhookDeliveries: { columns: `webhook_id, ${DELIVERY_COLUMNS}`, table: 'webhook_deliveries', key: ['n'] },
  locations: { columns: 'name, created_at', table: 'locations', key: ['name COLLATE "C"'] },
  stockLevels: { columns: 'plant_id, location, on_hand, reserved', table: 'stock_levels', key: ['plant_id', 'location COLLATE "C"'] },
  stockMovements: { columns: MOVEMENT_COLUMNS, table: 'stock_movements', key: ['seq'] },
  reservations: { columns: RESERVATION_COLUMNS, table: 'reservations', key: ['id COLLATE "C"'] }
}

/** The column a key expression reads (`name COLLATE "C"` reads name). */
const keyColumn = (key: string): string => key.split(' ')[0]

/**
 * A catalogue in PostgreSQL read on one connection, in one transaction: its own REPEATABLE READ READ
 * ONLY one (an export, while instances keep writing), or the one a copy is being written in.
 */
export class PostgresSnapshot implements CatalogueSnapshot {
  private constructor (private readonly client: pg.Client, private readonly owned: boolean) {}

  static async open (client: pg.Client): Promise<PostgresSnapshot> {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    return new PostgresSnapshot(client, true)
  }

  /** What a transaction in progress on `client` holds; closing it leaves the transaction and the connection to their owner. */
  static within (client: pg.Client): PostgresSnapshot {
    return new PostgresSnapshot(client, false)
  }

  async * plants (pageSize: number, query?: PlantQuery): AsyncGenerator<Plant[]> {
    let after: Position = { id: 0 }
    for (;;) {
      // Every column, store fields and times included: an export edited and imported again merges
      // what its rows say, so a column read as empty here would clear it in the catalogue. With a
      // query, the store's own list query (its filters and order), walked in this one snapshot.
      const { text, values } = query === undefined
        ? { text: `SELECT ${ROW_COLUMNS} FROM plants WHERE id > $1 ORDER BY id LIMIT $2`, values: [after.id, pageSize] }
        : listQuery({ ...query, tags: query.tags.map(toPostgresText), afterId: after.id, afterKey: after.key, afterValue: after.value, limit: pageSize }, LIST_COLUMNS)
      const { rows } = await this.client.query<PlantRow>(text, values)
      if (rows.length === 0) return
      const page = rows.map((r) => toRecord(toPlant(r)))
      yield page
      after = positionOf(page[page.length - 1], query?.sort ?? 'id')
    }
  }

  async * rows<K extends Kind> (kind: K, pageSize: number): AsyncGenerator<Array<CatalogueKinds[K]>> {
    const { columns, table, key } = KIND_SQL[kind]
    // One file a page: each may be megabytes, and only one is held in memory.
    const limit = kind === 'photoFiles' ? 1 : pageSize
    const order = key.join(', ')
    let after: unknown[] | undefined
    for (;;) {
      const where = after === undefined ? '' : `WHERE (${order}) > (${key.map((_k, i) => `$${i + 2}`).join(', ')})`
      const { rows } = await this.client.query<Record<string, any>>(`SELECT ${columns} FROM ${table} ${where} ORDER BY ${order} LIMIT $1`, [limit, ...after ?? []])
      if (rows.length === 0) return
      yield (kind === 'plants' ? rows.map(plantRow) : rows) as Array<CatalogueKinds[K]>
      const last = rows[rows.length - 1]
      after = key.map((k) => last[keyColumn(k)])
    }
  }

  async tallies (): Promise<CatalogueTallies> {
    const { rows: [c] } = await this.client.query<Record<string, number>>(`SELECT
      (SELECT count(*) FROM plants) AS plants,
      (SELECT count(*) FROM plant_tags) AS tags,
      (SELECT count(*) FROM changes) AS changes,
      (SELECT count(*) FROM idempotency_keys) AS keys,
      (SELECT value FROM meta WHERE key = 'feed_head') AS feed_head,
      (SELECT value FROM meta WHERE key = 'feed_floor') AS feed_floor`)
    // The counts the service reads for its inventory, kept by every write.
    const { rows: counts } = await this.client.query<{ status: 'available' | 'pending' | 'sold', n: number }>(
      "SELECT substr(key, 7) AS status, value AS n FROM meta WHERE key IN ('count_available', 'count_pending', 'count_sold')")
    const inventory = { available: 0, pending: 0, sold: 0 }
    for (const { status, n } of counts) inventory[status] = Number(n)
    return {
      plants: c.plants,
      tags: c.tags,
      changes: c.changes,
      idempotencyKeys: c.keys,
      inventory,
      lastId: await this.handedOut('plants', 'id'),
      feedHead: Number(c.feed_head),
      feedFloor: Number(c.feed_floor),
      lastWebhookId: await this.handedOut('webhooks', 'id'),
      lastDeliveryN: await this.handedOut('webhook_deliveries', 'n'),
      lastMovementSeq: await this.handedOut('stock_movements', 'seq')
    }
  }

  async levels (ids: number[]): Promise<StockLevelRow[]> {
    if (ids.length === 0) return []
    const { rows } = await this.client.query<StockLevelRow>(`SELECT plant_id, location, on_hand, reserved FROM stock_levels
      WHERE plant_id = ANY($1::bigint[]) ORDER BY plant_id, location COLLATE "C"`, [ids])
    return rows
  }

  /** The highest id an identity column has handed out (0 before its first). */
  private async handedOut (table: string, column: string): Promise<number> {
    const { rows: [{ name }] } = await this.client.query<{ name: string }>('SELECT pg_get_serial_sequence($1, $2) AS name', [table, column])
    const { rows: [s] } = await this.client.query<{ last_value: number, is_called: boolean }>(`SELECT last_value, is_called FROM ${name}`)
    return s.is_called ? Number(s.last_value) : 0
  }

  async close (): Promise<void> {
    if (!this.owned) return
    await this.client.query('COMMIT').catch(() => {})
    await this.client.end().catch(() => {})
  }
}

/** ROW_COLUMNS of the list query's `p`. */
const LIST_COLUMNS = ROW_COLUMNS.split(', ').map((c) => `p.${c}`).join(', ')

/** A plant's row as both engines hand it over: PostgreSQL's escapes undone. */
const plantRow = (r: Record<string, any>): CatalogueKinds['plants'] => ({
  ...r as CatalogueKinds['plants'], name: fromPostgresText(r.name), category: unescape(r.category), description: unescape(r.description), tags: (r.tags as string[]).map(fromPostgresText)
})
