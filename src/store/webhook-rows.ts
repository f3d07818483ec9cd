import type { ChangeKind } from '../catalogue/changes.js'
import type { DeliveryAttempt, Webhook, WebhookStatus } from '../catalogue/webhook.js'

// Webhook rows as both engines store them (the same columns), turned into the catalogue's words.

export interface WebhookRow {
  id: number,
  url: string,
  events: string,
  status: WebhookStatus,
  secret: string,
  previous_secret: string | null,
  previous_secret_until: number | null,
  cursor: number,
  attempts: number,
  next_attempt_at: number | null,
  failing_since: number | null,
  last_error: string | null,
  created_at: number
}
export interface DeliveryRow { seq: number, attempt: number, at: number, status_code: number | null, error: string | null, duration_ms: number }

export const WEBHOOK_COLUMNS = 'id, url, events, status, secret, previous_secret, previous_secret_until, cursor, attempts, next_attempt_at, failing_since, last_error, created_at'

export const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  url: r.url,
  events: JSON.parse(r.events) as ChangeKind[],
  status: r.status,
  secret: r.secret,
  previousSecret: r.previous_secret,
  previousSecretUntil: r.previous_secret_until,
  cursor: r.cursor,
  attempts: r.attempts,
  nextAttemptAt: r.next_attempt_at,
  failingSince: r.failing_since,
  lastError: r.last_error,
  createdAt: r.created_at
})

export const toAttempt = (r: DeliveryRow): DeliveryAttempt =>
  ({ seq: r.seq, attempt: r.attempt, at: r.at, statusCode: r.status_code, error: r.error, durationMs: r.duration_ms })
