import type { AttemptKind, DeliveryAttempt, LoggedAttempt, Webhook, WebhookEvent, WebhookStatus } from '../catalogue/webhook.js'

// The webhooks' storage, one implementation per engine beside the plants (sqlite/, postgres/):
// subscriptions, each with its delivery cursor and attempt state, and a short log of attempts.

export interface NewWebhook { url: string, events: WebhookEvent[], secret: string }
export interface WebhookChanges { url?: string, events?: WebhookEvent[], status?: WebhookStatus }

/** What one attempt leaves behind: the cursor moves on a success; the attempt state says what comes next. */
export interface AttemptOutcome {
  /** The cursor after this attempt (it never moves back: an older one is ignored). */
  cursor: number
  attempts: number
  nextAttemptAt: number | null
  failingSince: number | null
  lastError: string | null
  /** Set to 'failing' when retries ran out; otherwise the status stays as it is. */
  failing: boolean
}

/** Where a webhook stands against the feed, from its stored cursor (the metrics read it). */
export interface WebhookLag {
  id: number
  status: WebhookStatus
  cursor: number
  /** The feed's head: the last change committed. */
  head: number
  /** When the oldest change after the cursor was committed (epoch ms); null when it has every change. */
  oldestWaitingAt: number | null
  /** Failed attempts in a row at the change after the cursor. */
  attempts: number
}

/** Attempts at changes kept per webhook for GET /v3/webhooks/{id}/deliveries, and test sends as many again (apart: a run of tests pushes out no delivery). */
export const DELIVERIES_KEPT = 1000

/** A page of a webhook's attempts: newest first, those before `before` (an attempt's n) when given. */
export interface AttemptQuery { limit: number, before?: number, kind?: AttemptKind }

export interface WebhookStore {
  /** Starts at the feed's head: a new webhook hears of changes from now on. */
  create (webhook: NewWebhook, now: number): Promise<Webhook>
  list (): Promise<Webhook[]>
  get (id: number): Promise<Webhook | undefined>
  /** Undefined when there is no such webhook. Resuming (status active) clears the attempt state, keeping the cursor. */
  update (id: number, changes: WebhookChanges): Promise<Webhook | undefined>
  remove (id: number): Promise<boolean>
  /**
   * A new secret; the current one signs beside it until `previousUntil`. Rotated again while an
   * earlier rotation's overlap runs (after `now`), the secret from before that overlap keeps
   * signing until its own end and the one in between goes: a receiver still holding the first
   * secret (its operator lost the new one, or it leaked) is not cut off at once.
   */
  rotateSecret (id: number, secret: string, now: number, previousUntil: number): Promise<Webhook | undefined>
  /** Records attempts, oldest first, and what they leave behind (pruning the log to DELIVERIES_KEPT of each kind), in one transaction. */
  recordAttempts (id: number, attempts: DeliveryAttempt[], outcome?: AttemptOutcome): Promise<void>
  /** Recorded attempts, newest first. */
  deliveries (id: number, query: AttemptQuery): Promise<LoggedAttempt[]>
  /**
   * Takes or renews the delivery lease on a webhook for `owner` until `until` (epoch ms): true when
   * `owner` holds it now, false when another instance holds an unexpired lease. One instance delivers each webhook.
   */
  lease (id: number, owner: string, until: number, now: number): Promise<boolean>
  /** Every webhook's place against the feed's head, oldest webhook first: one read for all. */
  lag (): Promise<WebhookLag[]>
  /** Gives the lease up (a clean stop): another instance may take it at once. */
  release (id: number, owner: string): Promise<void>
}
