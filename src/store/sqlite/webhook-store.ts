import type Database from 'better-sqlite3'
import type { DeliveryAttempt, Webhook } from '../../catalogue/webhook.js'
import { WEBHOOK_COLUMNS as COLUMNS, toAttempt, toWebhook, type DeliveryRow, type WebhookRow as Row } from '../webhook-rows.js'
import { DELIVERIES_KEPT, type AttemptOutcome, type NewWebhook, type WebhookChanges, type WebhookStore } from '../webhook-store.js'

/** The webhooks migration (issue 28): webhooks, their delivery state, and a short log of attempts. */
export const WEBHOOKS_MIGRATION = `
  CREATE TABLE webhooks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    url TEXT NOT NULL,
    events TEXT NOT NULL,
    status TEXT NOT NULL,
    secret TEXT NOT NULL,
    previous_secret TEXT,
    previous_secret_until INTEGER,
    -- The last change delivered: delivery resumes after it.
    cursor INTEGER NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    failing_since INTEGER,
    last_error TEXT,
    -- The process delivering this webhook (WORKERS > 1 share the file), until lease_until.
    lease_owner TEXT,
    lease_until INTEGER,
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE TABLE webhook_deliveries (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    at INTEGER NOT NULL,
    status_code INTEGER,
    error TEXT,
    duration_ms INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, n);
`

const HEAD = "max(coalesce((SELECT max(seq) FROM changes), 0), (SELECT value FROM meta WHERE key = 'feed_floor'))"

/**
 * On the store's own connection: these writes are few and small (a cursor a delivery), so they
 * commit here like the hourly purge does, after the open read snapshot is ended (`endRead`).
 */
export class SqliteWebhookStore implements WebhookStore {
  private readonly s

  constructor (private readonly db: Database.Database, private readonly endRead: () => void) {
    this.s = {
      insert: db.prepare<[string, string, string, number], Row>(
        `INSERT INTO webhooks (url, events, status, secret, cursor, created_at) VALUES (?, ?, 'active', ?, ${HEAD}, ?) RETURNING ${COLUMNS}`),
      list: db.prepare<[], Row>(`SELECT ${COLUMNS} FROM webhooks ORDER BY id`),
      get: db.prepare<[number], Row>(`SELECT ${COLUMNS} FROM webhooks WHERE id = ?`),
      remove: db.prepare<[number]>('DELETE FROM webhooks WHERE id = ?'),
      removeLog: db.prepare<[number]>('DELETE FROM webhook_deliveries WHERE webhook_id = ?'),
      rotate: db.prepare<[string, number, number], Row>(
        `UPDATE webhooks SET previous_secret = secret, secret = ?, previous_secret_until = ? WHERE id = ? RETURNING ${COLUMNS}`),
      log: db.prepare<[number, number, number, number, number | null, string | null, number]>(
        'INSERT INTO webhook_deliveries (webhook_id, seq, attempt, at, status_code, error, duration_ms) VALUES (?, ?, ?, ?, ?, ?, ?)'),
      prune: db.prepare<[number, number, number]>(
        'DELETE FROM webhook_deliveries WHERE webhook_id = ? AND n <= (SELECT n FROM webhook_deliveries WHERE webhook_id = ? ORDER BY n DESC LIMIT 1 OFFSET ?)'),
      outcome: db.prepare<[number, number, number | null, number | null, string | null, number, number, number]>(
        `UPDATE webhooks SET cursor = max(cursor, ?), attempts = ?, next_attempt_at = ?, failing_since = ?, last_error = ?,
         status = CASE WHEN ? = 1 AND status = 'active' THEN 'failing' ELSE status END WHERE id = ? AND cursor <= ?`),
      deliveries: db.prepare<[number, number], DeliveryRow>(
        'SELECT seq, attempt, at, status_code, error, duration_ms FROM webhook_deliveries WHERE webhook_id = ? ORDER BY n DESC LIMIT ?'),
      lease: db.prepare<[string, number, number, string, number]>(
        'UPDATE webhooks SET lease_owner = ?, lease_until = ? WHERE id = ? AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)'),
      release: db.prepare<[number, string]>('UPDATE webhooks SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?')
    }
  }

  async create (webhook: NewWebhook, now: number): Promise<Webhook> {
    return this.write(() => toWebhook(this.s.insert.get(webhook.url, JSON.stringify(webhook.events), webhook.secret, now)!))
  }

  async list (): Promise<Webhook[]> {
    return this.s.list.all().map(toWebhook)
  }

  async get (id: number): Promise<Webhook | undefined> {
    const row = this.s.get.get(id)
    return row && toWebhook(row)
  }

  async update (id: number, changes: WebhookChanges): Promise<Webhook | undefined> {
    const sets: string[] = []
    const args: unknown[] = []
    if (changes.url !== undefined) { sets.push('url = ?'); args.push(changes.url) }
    if (changes.events !== undefined) { sets.push('events = ?'); args.push(JSON.stringify(changes.events)) }
    if (changes.status !== undefined) {
      sets.push('status = ?')
      args.push(changes.status)
      // Resumed: the change after the cursor is tried again at once, its retries counted afresh.
      if (changes.status === 'active') sets.push('attempts = 0', 'next_attempt_at = NULL', 'failing_since = NULL')
    }
    if (sets.length === 0) return await this.get(id)
    return this.write(() => {
      const row = this.db.prepare<unknown[], Row>(`UPDATE webhooks SET ${sets.join(', ')} WHERE id = ? RETURNING ${COLUMNS}`).get(...args, id)
      return row && toWebhook(row)
    })
  }

  async remove (id: number): Promise<boolean> {
    return this.write(() => {
      this.s.removeLog.run(id)
      return this.s.remove.run(id).changes > 0
    })
  }

  async rotateSecret (id: number, secret: string, previousUntil: number): Promise<Webhook | undefined> {
    return this.write(() => {
      const row = this.s.rotate.get(secret, previousUntil, id)
      return row && toWebhook(row)
    })
  }

  async recordAttempts (id: number, attempts: DeliveryAttempt[], outcome?: AttemptOutcome): Promise<void> {
    this.write(() => {
      for (const attempt of attempts) this.s.log.run(id, attempt.seq, attempt.attempt, attempt.at, attempt.statusCode, attempt.error, Math.round(attempt.durationMs))
      this.s.prune.run(id, id, DELIVERIES_KEPT)
      if (outcome) {
        this.s.outcome.run(outcome.cursor, outcome.attempts, outcome.nextAttemptAt, outcome.failingSince, outcome.lastError,
          outcome.failing ? 1 : 0, id, outcome.cursor)
      }
    })
  }

  async deliveries (id: number, limit: number): Promise<DeliveryAttempt[]> {
    return this.s.deliveries.all(id, limit).map(toAttempt)
  }

  async lease (id: number, owner: string, until: number, now: number): Promise<boolean> {
    return this.write(() => this.s.lease.run(owner, until, id, owner, now).changes > 0)
  }

  async release (id: number, owner: string): Promise<void> {
    if (!this.db.open) return
    this.write(() => { this.s.release.run(id, owner) })
  }

  private write<T> (fn: () => T): T {
    this.endRead()
    return this.db.transaction(fn).immediate()
  }
}
