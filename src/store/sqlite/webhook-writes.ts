import type Database from 'better-sqlite3'
import type { DeliveryAttempt } from '../../catalogue/webhook.js'
import { DELIVERIES_KEPT, type AttemptOutcome } from '../webhook-store.js'

// The deliverer's own writes (attempts, the cursor, leases), committed by the writer thread in the
// group commit beside the plants' writes. Made on the event loop's connection they cost an fsync
// there each, and a BEGIN IMMEDIATE while the writer thread held the lock slept in SQLite's busy
// handler (1, 2, 5, 10 ms …) with the whole event loop stopped.

export type WebhookWriteOp =
  | { kind: 'webhook-attempts', id: number, attempts: DeliveryAttempt[], outcome?: AttemptOutcome }
  | { kind: 'webhook-lease', id: number, owner: string, until: number, now: number }
  | { kind: 'webhook-release', id: number, owner: string }

export const isWebhookWrite = (op: { kind: string }): op is WebhookWriteOp => op.kind.startsWith('webhook-')

/** Applies one webhook write inside the caller's transaction; a lease answers whether `owner` holds it. */
export function webhookWriter (db: Database.Database): (op: WebhookWriteOp) => boolean | undefined {
  let s: ReturnType<typeof prepare> | undefined
  return (op) => {
    s ??= prepare(db)
    if (op.kind === 'webhook-lease') return s.lease.run(op.owner, op.until, op.id, op.owner, op.now).changes > 0
    if (op.kind === 'webhook-release') { s.release.run(op.id, op.owner); return undefined }
    const { id, attempts, outcome } = op
    for (const a of attempts) s.log.run(id, a.seq, a.attempt, a.at, a.statusCode, a.error, Math.round(a.durationMs), a.response ?? null, a.event ?? null)
    if (attempts.some((a) => a.seq > 0)) s.pruneChanges.run(id, id, DELIVERIES_KEPT)
    if (attempts.some((a) => a.seq === 0)) s.pruneTests.run(id, id, DELIVERIES_KEPT)
    if (outcome) {
      s.outcome.run(outcome.cursor, outcome.attempts, outcome.nextAttemptAt, outcome.failingSince, outcome.lastError,
        outcome.failing ? 1 : 0, id, outcome.cursor)
    }
    return undefined
  }
}

// Prepared at the first webhook write: a writer thread of a catalogue without webhooks prepares nothing.
function prepare (db: Database.Database) {
  return {
    log: db.prepare<[number, number, number, number, number | null, string | null, number, string | null, string | null]>(
      'INSERT INTO webhook_deliveries (webhook_id, seq, attempt, at, status_code, error, duration_ms, response, event) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'),
    // Deliveries of changes and test sends are kept apart, each to its own count.
    pruneChanges: db.prepare<[number, number, number]>(
      'DELETE FROM webhook_deliveries WHERE webhook_id = ? AND seq > 0 AND n <= (SELECT n FROM webhook_deliveries WHERE webhook_id = ? AND seq > 0 ORDER BY n DESC LIMIT 1 OFFSET ?)'),
    pruneTests: db.prepare<[number, number, number]>(
      'DELETE FROM webhook_deliveries WHERE webhook_id = ? AND seq = 0 AND n <= (SELECT n FROM webhook_deliveries WHERE webhook_id = ? AND seq = 0 ORDER BY n DESC LIMIT 1 OFFSET ?)'),
    // An instance whose lease was taken over may finish late: its older cursor changes nothing.
    outcome: db.prepare<[number, number, number | null, number | null, string | null, number, number, number]>(
      `UPDATE webhooks SET cursor = max(cursor, ?), attempts = ?, next_attempt_at = ?, failing_since = ?, last_error = ?,
       status = CASE WHEN ? = 1 AND status = 'active' THEN 'failing' ELSE status END WHERE id = ? AND cursor <= ?`),
    lease: db.prepare<[string, number, number, string, number]>(
      'UPDATE webhooks SET lease_owner = ?, lease_until = ? WHERE id = ? AND (lease_owner IS NULL OR lease_owner = ? OR lease_until < ?)'),
    release: db.prepare<[number, string]>('UPDATE webhooks SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?')
  }
}
