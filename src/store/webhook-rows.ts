import { WEBHOOK_EVENTS, type AttemptKind, type LoggedAttempt, type Webhook, type WebhookEvent, type WebhookStatus } from '../catalogue/webhook.js'
import type { WebhookChanges } from './webhook-store.js'

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
export interface DeliveryRow { n: number, seq: number, attempt: number, at: number, status_code: number | null, error: string | null, duration_ms: number, response: string | null, event: string | null }

export const DELIVERY_COLUMNS = 'n, seq, attempt, at, status_code, error, duration_ms, response, event'

/**
 * The rows of a kind (SQL the same in both engines): a test send is seq 0, a change's delivery
 * above (its stock events too, sent at the change's seq); a kind of change or a stock event's by
 * what was sent (`event`: null for an attempt recorded before it was kept).
 */
export const KIND_CONDITION: Record<AttemptKind, string> = {
  all: 'TRUE',
  changes: 'seq > 0',
  tests: 'seq = 0',
  ...Object.fromEntries(WEBHOOK_EVENTS.map((e) => [e, `event = '${e}'`])) as Record<WebhookEvent, string>
}

export const WEBHOOK_COLUMNS = 'id, url, events, status, secret, previous_secret, previous_secret_until, cursor, attempts, next_attempt_at, failing_since, last_error, created_at'

export const toWebhook = (r: WebhookRow): Webhook => ({
  id: r.id,
  url: r.url,
  events: JSON.parse(r.events) as WebhookEvent[],
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

export const toAttempt = (r: DeliveryRow): LoggedAttempt =>
  ({ n: Number(r.n), seq: Number(r.seq), attempt: r.attempt, at: Number(r.at), statusCode: r.status_code, error: r.error, durationMs: r.duration_ms, response: r.response, event: r.event as WebhookEvent | null })

/**
 * The columns an update resets besides those it names (SQL the same in both engines): resumed, a
 * webhook tries the change after its cursor at once, its retries counted afresh and no longer
 * failing; given a new address, it tries that at once too (a wait earned by the old one, up to
 * hours, would hold back the fix), its retries counted afresh.
 */
export function retryAfresh (changes: WebhookChanges): string[] {
  const resumed = changes.status === 'active'
  if (!resumed && changes.url === undefined) return []
  // A new address starts its 3 days afresh too, unless the webhook stays failing (its status says since when).
  return ['attempts = 0', 'next_attempt_at = NULL', resumed ? 'failing_since = NULL' : "failing_since = CASE WHEN status = 'failing' THEN failing_since ELSE NULL END"]
}
