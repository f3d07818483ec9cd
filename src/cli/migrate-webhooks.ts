import { createHash } from 'node:crypto'
import type Database from 'better-sqlite3'
import type pg from 'pg'

// The webhooks' part of `plants migrate`: each subscription with its id, secrets (the receiver
// keeps verifying signatures), events, status, place in the feed and attempt state, and the log of
// its recent attempts. Both engines keep the same columns, times in epoch milliseconds; the
// delivery lease is not copied: the first instance started on PostgreSQL takes it.

const WEBHOOK_COLUMNS = 'id, url, events, status, secret, previous_secret, previous_secret_until, cursor, attempts, next_attempt_at, failing_since, last_error, created_at'
const WEBHOOK_TYPES = 'id bigint, url text, events text, status text, secret text, previous_secret text, previous_secret_until bigint, cursor bigint, attempts int, next_attempt_at bigint, failing_since bigint, last_error text, created_at bigint'
const DELIVERY_COLUMNS = 'n, webhook_id, seq, attempt, at, status_code, error, duration_ms, response'
const DELIVERY_TYPES = 'n bigint, webhook_id bigint, seq bigint, attempt int, at bigint, status_code int, error text, duration_ms int, response text'

export interface WebhookCounts { webhooks: number, webhookDeliveries: number, webhookDigest: string }

type Row = Record<string, string | number | null>

/** The webhooks' and attempts' counts and a digest of every row, in id order (BIGINTs read from PostgreSQL as numbers again). */
function digestOf (webhooks: Row[], deliveries: Row[]): WebhookCounts {
  const hash = createHash('sha256')
  const numbers = (row: Row): unknown[] => Object.values(row).map((v) => typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v)
  for (const r of webhooks) hash.update(JSON.stringify(numbers(r))).update('\n')
  hash.update('deliveries\n')
  for (const r of deliveries) hash.update(JSON.stringify(numbers(r))).update('\n')
  return { webhooks: webhooks.length, webhookDeliveries: deliveries.length, webhookDigest: hash.digest('hex') }
}

/** A data folder made before webhooks existed has no such tables. */
const hasWebhooks = (db: Database.Database): boolean =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'webhooks'").get() !== undefined

function sourceRows (db: Database.Database): { webhooks: Row[], deliveries: Row[] } {
  if (!hasWebhooks(db)) return { webhooks: [], deliveries: [] }
  return {
    webhooks: db.prepare(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks ORDER BY id`).all() as Row[],
    deliveries: db.prepare(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries ORDER BY n`).all() as Row[]
  }
}

export function sourceWebhookCounts (db: Database.Database): WebhookCounts {
  const { webhooks, deliveries } = sourceRows(db)
  return digestOf(webhooks, deliveries)
}

export async function targetWebhookCounts (client: pg.Client): Promise<WebhookCounts> {
  const webhooks = (await client.query<Row>(`SELECT ${WEBHOOK_COLUMNS} FROM webhooks ORDER BY id`)).rows
  const deliveries = (await client.query<Row>(`SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries ORDER BY n`)).rows
  return digestOf(webhooks, deliveries)
}

/**
 * Copies the webhooks and their attempts with their ids, and moves both identity sequences past the
 * highest ever handed out (AUTOINCREMENT remembers deleted ones): a webhook made after the move
 * gets a new id, never one a deleted webhook's receiver or an operator's script still holds.
 */
export async function copyWebhooks (db: Database.Database, client: pg.Client): Promise<void> {
  if (!hasWebhooks(db)) return
  const { webhooks, deliveries } = sourceRows(db)
  if (webhooks.length > 0) {
    await client.query(`INSERT INTO webhooks (${WEBHOOK_COLUMNS}) OVERRIDING SYSTEM VALUE
      SELECT * FROM json_to_recordset($1::json) AS r(${WEBHOOK_TYPES})`, [JSON.stringify(webhooks)])
  }
  if (deliveries.length > 0) {
    await client.query(`INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS}) OVERRIDING SYSTEM VALUE
      SELECT * FROM json_to_recordset($1::json) AS r(${DELIVERY_TYPES})`, [JSON.stringify(deliveries)])
  }
  const last = (table: string, column: string): number => Math.max(
    (db.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').get(table) as { seq: number } | undefined)?.seq ?? 0,
    (db.prepare(`SELECT coalesce(max(${column}), 0) AS n FROM ${table}`).get() as { n: number }).n)
  for (const [table, column] of [['webhooks', 'id'], ['webhook_deliveries', 'n']]) {
    const n = last(table, column)
    if (n > 0) await client.query(`SELECT setval(pg_get_serial_sequence('${table}', '${column}'), $1, true)`, [n])
  }
}
