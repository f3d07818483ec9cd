import { IdempotencyKeyReused } from '../../catalogue/errors.js'
import { sameRequest, type IdempotencyClaim } from '../idempotency.js'
import type { Tx } from './group-commit.js'

/**
 * The answer kept under an Idempotency-Key (a movement's, a reservation's), marked replayed, or
 * undefined when the key is unused or older than `ttlMs`; the key used for another request (another
 * body, or one still without its answer) is refused.
 */
export async function earlierAnswer<T> (tx: Tx, claim: IdempotencyClaim, at: number, ttlMs: number): Promise<(T & { replayed: true }) | undefined> {
  const { rows: [row] } = await tx.query<{ request_hash: string, response: string | null, created_at: number }>(
    'SELECT request_hash, response, created_at FROM idempotency_keys WHERE key = $1 AND created_at > $2', [claim.key, at - ttlMs])
  if (!row) return undefined
  const usedAt = Number(row.created_at)
  if (!sameRequest(row.request_hash, claim.requestHash) || row.response === null) throw new IdempotencyKeyReused(usedAt, usedAt + ttlMs)
  return { ...JSON.parse(row.response) as T, replayed: true }
}
