import type { DeliveryAttempt, LoggedAttempt, Webhook } from '../../catalogue/webhook.js'
import { DELIVERY_COLUMNS, KIND_CONDITION, WEBHOOK_COLUMNS as COLUMNS, retryAfresh, toAttempt, toWebhook } from '../webhook-rows.js'
import { DELIVERIES_KEPT, type AttemptOutcome, type AttemptQuery, type NewWebhook, type WebhookChanges, type WebhookLag, type WebhookStore } from '../webhook-store.js'
import type { Session } from './connection.js'

/** The webhooks on PostgreSQL: shared by every instance, each webhook delivered by the one holding its lease. */
export class PostgresWebhookStore implements WebhookStore {
  constructor (private readonly session: Session) {}

  async create (webhook: NewWebhook, now: number): Promise<Webhook> {
    const { rows } = await this.session.run((c) => c.query(
      `INSERT INTO webhooks (url, events, status, secret, cursor, created_at)
       VALUES ($1, $2, 'active', $3, (SELECT value FROM meta WHERE key = 'feed_head'), $4) RETURNING ${COLUMNS}`,
      [webhook.url, JSON.stringify(webhook.events), webhook.secret, now]))
    return toWebhook(rows[0])
  }

  async list (): Promise<Webhook[]> {
    const { rows } = await this.session.run((c) => c.query(`SELECT ${COLUMNS} FROM webhooks ORDER BY id`))
    return rows.map(toWebhook)
  }

  async get (id: number): Promise<Webhook | undefined> {
    const { rows } = await this.session.run((c) => c.query(`SELECT ${COLUMNS} FROM webhooks WHERE id = $1`, [id]))
    return rows[0] && toWebhook(rows[0])
  }

  async update (id: number, changes: WebhookChanges): Promise<Webhook | undefined> {
    const sets: string[] = []
    const args: unknown[] = [id]
    const set = (column: string, value: unknown): void => { args.push(value); sets.push(`${column} = $${args.length}`) }
    if (changes.url !== undefined) set('url', changes.url)
    if (changes.events !== undefined) set('events', JSON.stringify(changes.events))
    if (changes.status !== undefined) set('status', changes.status)
    sets.push(...retryAfresh(changes))
    if (sets.length === 0) return await this.get(id)
    const { rows } = await this.session.run((c) => c.query(`UPDATE webhooks SET ${sets.join(', ')} WHERE id = $1 RETURNING ${COLUMNS}`, args))
    return rows[0] && toWebhook(rows[0])
  }

  async remove (id: number): Promise<boolean> {
    return await this.session.transaction(async (c) => {
      await c.query('DELETE FROM webhook_deliveries WHERE webhook_id = $1', [id])
      return ((await c.query('DELETE FROM webhooks WHERE id = $1', [id])).rowCount ?? 0) > 0
    })
  }

  async rotateSecret (id: number, secret: string, now: number, previousUntil: number): Promise<Webhook | undefined> {
    const { rows } = await this.session.run((c) => c.query(
      `UPDATE webhooks SET secret = $2,
         previous_secret = CASE WHEN previous_secret_until > $3 THEN previous_secret ELSE secret END,
         previous_secret_until = CASE WHEN previous_secret_until > $3 THEN previous_secret_until ELSE $4 END
       WHERE id = $1 RETURNING ${COLUMNS}`,
      [id, secret, now, previousUntil]))
    return rows[0] && toWebhook(rows[0])
  }

  async recordAttempts (id: number, attempts: DeliveryAttempt[], outcome?: AttemptOutcome): Promise<void> {
    await this.session.transaction(async (c) => {
      if (attempts.length > 0) {
        // One statement for the lot: a batch of deliveries costs one round trip.
        await c.query(`INSERT INTO webhook_deliveries (webhook_id, seq, attempt, at, status_code, error, duration_ms, response, event)
          SELECT $1, * FROM unnest($2::bigint[], $3::int[], $4::bigint[], $5::int[], $6::text[], $7::int[], $8::text[], $9::text[])`,
        [id, attempts.map((a) => a.seq), attempts.map((a) => a.attempt), attempts.map((a) => a.at), attempts.map((a) => a.statusCode),
          attempts.map((a) => a.error), attempts.map((a) => Math.round(a.durationMs)), attempts.map((a) => a.response ?? null), attempts.map((a) => a.event ?? null)])
      }
      // Deliveries of changes and test sends are kept apart, each to its own count.
      for (const kind of ['changes', 'tests'] as const) {
        if (!attempts.some((a) => (a.seq === 0) === (kind === 'tests'))) continue
        await c.query(`DELETE FROM webhook_deliveries WHERE webhook_id = $1 AND ${KIND_CONDITION[kind]} AND n <= (
          SELECT n FROM webhook_deliveries WHERE webhook_id = $1 AND ${KIND_CONDITION[kind]} ORDER BY n DESC LIMIT 1 OFFSET $2)`, [id, DELIVERIES_KEPT])
      }
      if (outcome) {
        // An instance whose lease was taken over may finish late: its older cursor changes nothing.
        await c.query(`UPDATE webhooks SET cursor = greatest(cursor, $2), attempts = $3, next_attempt_at = $4, failing_since = $5, last_error = $6,
          status = CASE WHEN $7 AND status = 'active' THEN 'failing' ELSE status END WHERE id = $1 AND cursor <= $2`,
        [id, outcome.cursor, outcome.attempts, outcome.nextAttemptAt, outcome.failingSince, outcome.lastError, outcome.failing])
      }
    })
  }

  async deliveries (id: number, { limit, before, kind = 'all' }: AttemptQuery): Promise<LoggedAttempt[]> {
    const { rows } = await this.session.run((c) => c.query(
      `SELECT ${DELIVERY_COLUMNS} FROM webhook_deliveries WHERE webhook_id = $1 AND n < $2 AND ${KIND_CONDITION[kind]} ORDER BY n DESC LIMIT $3`,
      [id, before ?? Number.MAX_SAFE_INTEGER, limit]))
    return rows.map(toAttempt)
  }

  async lag (): Promise<WebhookLag[]> {
    const { rows } = await this.session.run((c) => c.query<WebhookLag>(
      `SELECT w.id, w.status, w.cursor, (SELECT value FROM meta WHERE key = 'feed_head') AS head, w.attempts,
       (SELECT c.at FROM changes c WHERE c.seq > w.cursor ORDER BY c.seq LIMIT 1) AS "oldestWaitingAt"
       FROM webhooks w ORDER BY w.id`))
    return rows
  }

  async lease (id: number, owner: string, until: number, now: number): Promise<boolean> {
    // SKIP LOCKED: an instance renewing or taking the lease right now is not waited for; it has it.
    const { rowCount } = await this.session.run((c) => c.query(
      `UPDATE webhooks w SET lease_owner = $2, lease_until = now() + $3 * interval '1 millisecond'
       FROM (SELECT id FROM webhooks WHERE id = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until < now())
             FOR UPDATE SKIP LOCKED) free
       WHERE w.id = free.id`, [id, owner, Math.max(0, until - now)]))
    return (rowCount ?? 0) > 0
  }

  async release (id: number, owner: string): Promise<void> {
    await this.session.run((c) => c.query('UPDATE webhooks SET lease_owner = NULL, lease_until = NULL WHERE id = $1 AND lease_owner = $2', [id, owner]))
  }
}
