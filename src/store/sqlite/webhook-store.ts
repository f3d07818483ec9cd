import type Database from 'better-sqlite3'
import type { DeliveryAttempt, LoggedAttempt, Webhook } from '../../catalogue/webhook.js'
import { DELIVERY_COLUMNS, KIND_CONDITION, WEBHOOK_COLUMNS as COLUMNS, retryAfresh, toAttempt, toWebhook, type DeliveryRow, type WebhookRow as Row } from '../webhook-rows.js'
import type { AttemptOutcome, AttemptQuery, NewWebhook, WebhookChanges, WebhookLag, WebhookStore } from '../webhook-store.js'
import type { WebhookWriteOp } from './webhook-writes.js'

/** The webhooks migration: webhooks, their delivery state, and a short log of attempts. */
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

/** Each attempt keeps what its receiver answered (the first 4 KiB, as text); NULL: no answer, or recorded before. */
export const WEBHOOK_RESPONSES_MIGRATION = `
  ALTER TABLE webhook_deliveries ADD COLUMN response TEXT;
`

/** Each attempt keeps what it sent (the change's kind, or stock.low / stock.out), so the log lists and filters by it; NULL: recorded before. */
export const WEBHOOK_EVENTS_MIGRATION = `
  ALTER TABLE webhook_deliveries ADD COLUMN event TEXT;
`

const HEAD = "max(coalesce((SELECT max(seq) FROM changes), 0), (SELECT value FROM meta WHERE key = 'feed_floor'))"

/**
 * Subscriptions are changed on the store's own connection (rare: an operator's action), after the
 * open read snapshot is ended (`endRead`). The deliverer's writes (attempts, cursor, leases, several
 * a second with fast receivers) go to the group commit (`commit`: the writer thread), sharing the
 * plants' fsync and never blocking the event loop (webhook-writes.ts).
 */
export class SqliteWebhookStore implements WebhookStore {
  private readonly s

  constructor (private readonly db: Database.Database, private readonly endRead: () => void, private readonly commit: (op: WebhookWriteOp) => Promise<unknown>) {
    this.s = {
      insert: db.prepare<[string, string, string, number], Row>(
        `INSERT INTO webhooks (url, events, status, secret, cursor, created_at) VALUES (?, ?, 'active', ?, ${HEAD}, ?) RETURNING ${COLUMNS}`),
      list: db.prepare<[], Row>(`SELECT ${COLUMNS} FROM webhooks ORDER BY id`),
      get: db.prepare<[number], Row>(`SELECT ${COLUMNS} FROM webhooks WHERE id = ?`),
      remove: db.prepare<[number]>('DELETE FROM webhooks WHERE id = ?'),
      removeLog: db.prepare<[number]>('DELETE FROM webhook_deliveries WHERE webhook_id = ?'),
      rotate: db.prepare<[{ secret: string, now: number, until: number, id: number }], Row>(
        `UPDATE webhooks SET secret = @secret,
          previous_secret = CASE WHEN previous_secret_until > @now THEN previous_secret ELSE secret END,
          previous_secret_until = CASE WHEN previous_secret_until > @now THEN previous_secret_until ELSE @until END
        WHERE id = @id RETURNING ${COLUMNS}`),
      lag: db.prepare<[], WebhookLag>(
        `SELECT w.id, w.status, w.cursor, ${HEAD} AS head, w.attempts,
         (SELECT c.at FROM changes c WHERE c.seq > w.cursor ORDER BY c.seq LIMIT 1) AS oldestWaitingAt
         FROM webhooks w ORDER BY w.id`),
      // One statement a kind, each the index's walk back from `before`.
      deliveries: Object.fromEntries(Object.entries(KIND_CONDITION).map(([kind, condition]) => [kind, db.prepare<[number, number, number], DeliveryRow>(
        `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = ? AND n < ? AND ${condition} ORDER BY n DESC LIMIT ?`)]))
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
    if (changes.status !== undefined) { sets.push('status = ?'); args.push(changes.status) }
    sets.push(...retryAfresh(changes))
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

  async rotateSecret (id: number, secret: string, now: number, previousUntil: number): Promise<Webhook | undefined> {
    return this.write(() => {
      const row = this.s.rotate.get({ secret, now, until: previousUntil, id })
      return row && toWebhook(row)
    })
  }

  async recordAttempts (id: number, attempts: DeliveryAttempt[], outcome?: AttemptOutcome): Promise<void> {
    await this.commit({ kind: 'webhook-attempts', id, attempts, outcome })
  }

  async deliveries (id: number, { limit, before, kind = 'all' }: AttemptQuery): Promise<LoggedAttempt[]> {
    return this.s.deliveries[kind].all(id, before ?? Number.MAX_SAFE_INTEGER, limit).map(toAttempt)
  }

  async lag (): Promise<WebhookLag[]> {
    return this.s.lag.all()
  }

  async lease (id: number, owner: string, until: number, now: number): Promise<boolean> {
    return await this.commit({ kind: 'webhook-lease', id, owner, until, now }) === true
  }

  async release (id: number, owner: string): Promise<void> {
    if (!this.db.open) return
    await this.commit({ kind: 'webhook-release', id, owner })
  }

  private write<T> (fn: () => T): T {
    this.endRead()
    return this.db.transaction(fn).immediate()
  }
}
