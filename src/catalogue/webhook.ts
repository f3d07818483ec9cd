import type { ChangeKind } from './changes.js'
import { STOCK_EVENT_KINDS, type StockEventKind } from './stock.js'

// Webhooks in the catalogue's words: a subscription to the change feed, pushed to a URL.

export type WebhookStatus = 'active' | 'paused' | 'failing'
export const WEBHOOK_STATUSES: readonly WebhookStatus[] = ['active', 'paused', 'failing']
export const CHANGE_KINDS: readonly ChangeKind[] = ['created', 'updated', 'deleted']
/** What a webhook may subscribe to: the feed's kinds of change, and a plant's crossing into low or no stock. */
export type WebhookEvent = ChangeKind | StockEventKind
export const WEBHOOK_EVENTS: readonly WebhookEvent[] = [...CHANGE_KINDS, ...STOCK_EVENT_KINDS]

/** After a rotation the old secret keeps signing beside the new one this long, while receivers switch. */
export const SECRET_OVERLAP_MS = 24 * 3_600_000

export interface Webhook {
  id: number
  url: string
  events: WebhookEvent[]
  status: WebhookStatus
  /** `whsec_<base64>`: signs every delivery. */
  secret: string
  /** The secret before the last rotation, signing beside it until `previousSecretUntil`. */
  previousSecret: string | null
  /** Epoch milliseconds. */
  previousSecretUntil: number | null
  /** The last change delivered (or skipped as not subscribed): delivery resumes after it. */
  cursor: number
  /** Failed attempts at the change after the cursor (0 when the last one succeeded). */
  attempts: number
  /** When the next attempt is due (epoch ms); null: now. */
  nextAttemptAt: number | null
  /** When the failures at the change after the cursor began (epoch ms); null when none. */
  failingSince: number | null
  lastError: string | null
  createdAt: number
}

/** One attempt at delivering one change (seq 0: a test send). */
export interface DeliveryAttempt {
  seq: number
  attempt: number
  /** Epoch milliseconds. */
  at: number
  statusCode: number | null
  error: string | null
  durationMs: number
  /** The receiver's answer, its first 4 KiB as text; null (or absent) when none came. */
  response?: string | null
  /** What was sent: the change's kind, or a stock event's (stock.low, stock.out); absent or null when not known (recorded before it was kept, or no send was made). */
  event?: WebhookEvent | null
}

/** A recorded attempt with its place in the webhook's log (what a page of the log continues from). */
export interface LoggedAttempt extends DeliveryAttempt { n: number }

/** Which attempts a listing holds: test sends are kept and listed apart from deliveries of changes. */
export type AttemptKind = 'all' | 'changes' | 'tests' | WebhookEvent
export const ATTEMPT_KINDS: readonly AttemptKind[] = ['all', 'changes', 'tests', ...WEBHOOK_EVENTS]

/** What an attempt whose outcome came after its delivery began to stop says, besides its own error. */
export const CUT_BY_SHUTDOWN = 'delivery was stopping (the service shutting down, or the webhook paused or removed): not counted as a failure, and tried again when delivery resumes'

export class WebhookNotFound extends Error {}

/** The secrets a delivery is signed with now: the current one, and the previous one within its overlap. */
export function signingSecrets (webhook: Pick<Webhook, 'secret' | 'previousSecret' | 'previousSecretUntil'>, now: number): string[] {
  const secrets = [webhook.secret]
  if (webhook.previousSecret !== null && webhook.previousSecretUntil !== null && now < webhook.previousSecretUntil) secrets.push(webhook.previousSecret)
  return secrets
}
