import type pg from 'pg'
import { AdminRefused, type CatalogueKinds, type CatalogueSnapshot, type CopyOptions, type Kind } from '../admin-store.js'
import { MOVEMENT_COLUMNS } from '../stock-rows.js'
import { RESERVATION_COLUMNS } from '../../catalogue/reservation.js'
import { WEBHOOK_COLUMNS, DELIVERY_COLUMNS } from '../webhook-rows.js'
import { hasPlantsTable, PostgresSnapshot } from './snapshot.js'
import { toPostgresText } from './text-escape.js'

// A whole catalogue copied into PostgreSQL (plants migrate), as the PostgreSQL store keeps it: ids
// and versions (ETags stay valid), the sequences (an id or feed position handed out before is never
// handed out again), the feed, remembered Idempotency-Keys, API keys by their hash, the trash, the
// history, the webhooks (secrets, place in the feed, recent attempts), every photo file, and the
// stock: locations, levels and the ledger with its positions, and the reservations. The webhooks'
// delivery leases and the reservation expirer's are not copied: the first instance started on PostgreSQL takes them.

const ms = (column: string): string => `timestamptz 'epoch' + ${column} * interval '1 millisecond'`

const PLANT_COLUMNS = 'id, name, category, tags, status, version, photos, description, price, sku, barcode, created_at, updated_at, low_stock_at, on_hand, reserved, available'

/** Each kind's INSERT from a page of rows as JSON ($1); text and times as both engines keep them. */
const INSERTS: Record<Exclude<Kind, 'photoFiles'>, string> = {
  plants: `INSERT INTO plants (${PLANT_COLUMNS}) OVERRIDING SYSTEM VALUE
    SELECT ${PLANT_COLUMNS}
    FROM json_to_recordset($1::json) AS r(id bigint, name text, category text, tags text[], status text, version int, photos text,
      description text, price bigint, sku text, barcode text, created_at bigint, updated_at bigint,
      low_stock_at bigint, on_hand bigint, reserved bigint, available bigint)`,
  // Change records and stored answers are JSON text, which escapes U+0000: they are copied as they are.
  // With a movement's crossing (stock_events): a stock.low / stock.out not yet delivered is sent from PostgreSQL.
  changes: `INSERT INTO changes (seq, kind, plant_id, version, plant, at, actor, stock_events)
    SELECT * FROM json_to_recordset($1::json) AS r(seq bigint, kind text, plant_id bigint, version int, plant text, at bigint, actor text, stock_events text)`,
  idempotencyKeys: `INSERT INTO idempotency_keys (key, request_hash, plant_id, response, created_at)
    SELECT * FROM json_to_recordset($1::json) AS r(key text, request_hash text, plant_id bigint, response text, created_at bigint)`,
  // API keys by their hash, revoked ones included: clients keep their keys, a revoked one stays
  // refused, and keys stay required (a catalogue that held keys never opens up by moving).
  apiKeys: `INSERT INTO api_keys (name, scope, hash, created_at, expires_at, last_used_at, revoked_at)
    SELECT name, scope, hash, ${ms('created_at')}, ${ms('expires_at')}, ${ms('last_used_at')}, ${ms('revoked_at')}
    FROM json_to_recordset($1::json) AS r(name text, scope text, hash text, created_at bigint, expires_at bigint, last_used_at bigint, revoked_at bigint)`,
  // The trash, with the references its photos hold (photo_files' refs, copied as they are, count them).
  trash: `INSERT INTO trash (id, plant, version, trashed_at, trashed_by)
    SELECT * FROM json_to_recordset($1::json) AS r(id bigint, plant text, version int, trashed_at bigint, trashed_by text)`,
  history: `INSERT INTO history (plant_id, version, kind, at, actor, changes)
    SELECT * FROM json_to_recordset($1::json) AS r(plant_id bigint, version int, kind smallint, at bigint, actor text, changes text)`,
  webhooks: `INSERT INTO webhooks (${WEBHOOK_COLUMNS}) OVERRIDING SYSTEM VALUE
    SELECT * FROM json_to_recordset($1::json) AS r(id bigint, url text, events text, status text, secret text, previous_secret text,
      previous_secret_until bigint, cursor bigint, attempts int, next_attempt_at bigint, failing_since bigint, last_error text, created_at bigint)`,
  webhookDeliveries: `INSERT INTO webhook_deliveries (webhook_id, ${DELIVERY_COLUMNS}) OVERRIDING SYSTEM VALUE
    SELECT * FROM json_to_recordset($1::json) AS r(webhook_id bigint, n bigint, seq bigint, attempt int, at bigint, status_code int, error text, duration_ms int, response text, event text)`,
  // The migrations made main: the source's locations replace it (main among them, with its time).
  locations: `INSERT INTO locations (name, created_at)
    SELECT * FROM json_to_recordset($1::json) AS r(name text, created_at bigint)`,
  stockLevels: `INSERT INTO stock_levels (plant_id, location, on_hand, reserved)
    SELECT * FROM json_to_recordset($1::json) AS r(plant_id bigint, location text, on_hand bigint, reserved bigint)`,
  // The ledger with its positions: a movements cursor a client holds still means the same movement.
  stockMovements: `INSERT INTO stock_movements (${MOVEMENT_COLUMNS}) OVERRIDING SYSTEM VALUE
    SELECT * FROM json_to_recordset($1::json) AS r(seq bigint, plant_id bigint, at bigint, actor text, location text, delta bigint,
      reason text, reference text, on_hand_after bigint)`,
  // Open reservations keep holding (the levels' reserved copied above is theirs); ended ones still answer reads.
  reservations: `INSERT INTO reservations (${RESERVATION_COLUMNS})
    SELECT * FROM json_to_recordset($1::json) AS r(id text, state text, lines text, created_at bigint, expires_at bigint, ended_at bigint, actor text)`
}

/** PostgreSQL's text cannot hold U+0000: a plant's strings are escaped (text-escape.ts). */
const escaped = (r: CatalogueKinds['plants']): object => ({
  ...r,
  name: toPostgresText(r.name),
  category: r.category === null ? null : toPostgresText(r.category),
  description: r.description === null ? null : toPostgresText(r.description),
  tags: r.tags.map(toPostgresText)
})

/** Refuses a database that holds a catalogue already: a copy never mixes with one. */
async function refuseNonEmpty (client: pg.Client, address: string): Promise<void> {
  if (!await hasPlantsTable(client)) return
  const { rows: [existing] } = await client.query<{ n: number }>(
    "SELECT (SELECT count(*) FROM plants) + (SELECT count(*) FROM changes) + (SELECT count(*) FROM webhooks) + (SELECT value FROM meta WHERE key = 'feed_head') AS n")
  if (Number(existing.n) > 0) throw new AdminRefused(`${address} already holds a catalogue; migrate only into an empty one`)
}

/** Copies `source` into the (migrated, empty) database on `client` in one transaction; `verify` decides whether it commits. */
export async function copyInto (client: pg.Client, address: string, source: CatalogueSnapshot, { batchSize, verify }: CopyOptions): Promise<void> {
  await refuseNonEmpty(client, address)
  await client.query('BEGIN')
  try {
    // The history in the order it was written, so the retention purge still meets the oldest first.
    await client.query('DELETE FROM locations')
    for (const kind of ['plants', 'changes', 'idempotencyKeys', 'apiKeys', 'trash', 'history', 'webhooks', 'webhookDeliveries', 'locations', 'stockLevels', 'stockMovements', 'reservations'] as const) {
      for await (const page of source.rows(kind, batchSize, 'written')) {
        const rows = kind === 'plants' ? (page as Array<CatalogueKinds['plants']>).map(escaped) : page
        await client.query(INSERTS[kind], [JSON.stringify(rows)])
      }
    }
    await client.query('INSERT INTO plant_tags (tag, plant_id) SELECT DISTINCT t, id FROM plants, unnest(tags) AS t')
    for await (const [file] of source.rows('photoFiles', 1)) {
      await client.query('INSERT INTO photo_files (name, refs, bytes) VALUES ($1, $2, $3)', [file.name, file.refs, file.bytes])
    }
    const marks = await source.tallies()
    // Every identity moves past the highest handed out (deleted ones included): a plant or webhook
    // made after the move never gets an id a client, receiver or script still holds.
    for (const [table, column, last] of [['plants', 'id', marks.lastId], ['webhooks', 'id', marks.lastWebhookId], ['webhook_deliveries', 'n', marks.lastDeliveryN],
      ['stock_movements', 'seq', marks.lastMovementSeq]] as const) {
      if (last > 0) await client.query('SELECT setval(pg_get_serial_sequence($1, $2), $3, true)', [table, column, last])
    }
    // The inventory's counts were made by the migrations while plants was empty: count what was copied.
    await client.query("UPDATE meta SET value = (SELECT count(*) FROM plants WHERE status = substr(meta.key, 7)) WHERE key IN ('count_available', 'count_pending', 'count_sold')")
    // The inventory's units likewise, from the copied totals (null: a plant that does not track stock).
    await client.query(`UPDATE meta SET value = (SELECT coalesce(sum(CASE WHEN meta.key LIKE '%on_hand' THEN on_hand ELSE reserved END), 0) FROM plants)
      WHERE key IN ('count_units_on_hand', 'count_units_reserved')`)
    await client.query("UPDATE meta SET value = $1 WHERE key = 'feed_head'", [marks.feedHead])
    await client.query("UPDATE meta SET value = $1 WHERE key = 'feed_floor'", [marks.feedFloor])
    await verify(PostgresSnapshot.within(client))
    await client.query('COMMIT')
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  }
}
