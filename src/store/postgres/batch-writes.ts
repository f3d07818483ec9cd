import { BatchRefused, type BatchOperation, type BatchRefusal, type BatchResult } from '../../catalogue/batch.js'
import { IdempotencyKeyReused } from '../../catalogue/errors.js'
import { completeFields, type StoredPlant } from '../../catalogue/plant.js'
import type { CreateResult, IdempotencyClaim } from '../plant-store.js'
import type { Tx } from './group-commit.js'
import { writeGroup, type Outcome, type WriteOp } from './group-writes.js'
import { sameRequest } from '../idempotency.js'

// A batch on PostgreSQL: the same set-based writes as a group of single writes (group-writes.ts),
// run as one unit of work in the group commit's transaction, inside a savepoint, so that any
// refusal takes back the whole batch (its Idempotency-Key claim included) and nothing else.

const CLAIM = `
INSERT INTO idempotency_keys AS k (key, request_hash, created_at) VALUES ($1, $2, $3)
ON CONFLICT (key) DO UPDATE SET request_hash = EXCLUDED.request_hash, plant_id = NULL, response = NULL, created_at = EXCLUDED.created_at
WHERE k.created_at <= $4
RETURNING key`
const EARLIER = 'SELECT request_hash, response, created_at FROM idempotency_keys WHERE key = $1'
const ANSWER = 'UPDATE idempotency_keys SET response = $2 WHERE key = $1'

export const toWriteOp = (o: BatchOperation, actor: string): WriteOp => o.op === 'create'
  ? { kind: 'create', fields: completeFields(o.fields), actor }
  : o.op === 'update'
    ? { kind: 'update', id: o.id, fields: completeFields(o.fields), expectedVersions: o.expectedVersions, actor }
    : o.op === 'patch'
      ? { kind: 'patch', id: o.id, patch: o.patch, expectedVersions: o.expectedVersions, actor }
      : { kind: 'remove', id: o.id, expectedVersions: o.expectedVersions, actor }

/**
 * Applies `ops` in order inside the caller's transaction. writeGroup puts off a write that wants a
 * SKU an earlier write of its group moves (no outcome: one statement cannot see the move); here that
 * write starts the next segment instead, after the segment before it is written again without it,
 * so the writes land, and their feed changes follow each other, in the batch's order.
 * `after`, for a batch written beside the one before it (GroupCommit.runBeside): its plants are
 * locked and its outcomes worked out meanwhile, but it claims, checks SKUs, writes and answers
 * (a refusal too) only once `after` has resolved; when `after` rejects, it throws that and writes nothing.
 */
export async function writeBatch (tx: Tx, ops: WriteOp[], idempotency: IdempotencyClaim | undefined, now: number, idempotencyTtlMs: number, after?: Promise<unknown>): Promise<BatchResult> {
  const turn = after === undefined ? undefined : async (): Promise<void> => { await after }
  await tx.query('SAVEPOINT batch')
  if (idempotency) {
    await turn?.()
    const { rows } = await tx.query(CLAIM, [idempotency.key, idempotency.requestHash, now, now - idempotencyTtlMs])
    if (rows.length === 0) {
      await tx.query('RELEASE SAVEPOINT batch')
      const { rows: [earlier] } = await tx.query<{ request_hash: string, response: string | null, created_at: string }>(EARLIER, [idempotency.key])
      if (earlier === undefined || !sameRequest(earlier.request_hash, idempotency.requestHash) || earlier.response === null) {
        // created_at is a BIGINT (a string from pg); a key purged meanwhile is dated now.
        const usedAt = earlier === undefined ? now : Number(earlier.created_at)
        throw new IdempotencyKeyReused(usedAt, usedAt + idempotencyTtlMs)
      }
      return { plants: JSON.parse(earlier.response) as Array<StoredPlant | null>, replayed: true }
    }
  }
  const outcomes: Outcome[] = []
  let head: number | undefined
  // Only a write that sets a SKU can be put off: without one, the batch is one segment, and its
  // savepoint (two round trips, one of them after the batch's turn) is left out.
  const segments = ops.some(setsSku)
  while (outcomes.length < ops.length) {
    const rest = ops.slice(outcomes.length)
    if (segments) await tx.query('SAVEPOINT segment')
    let [written, moved] = await writeGroup(tx, rest, now, idempotencyTtlMs, false, turn)
    const putOff = written.findIndex((o) => o === undefined)
    // The first write of a segment has nothing before it to wait for.
    if (putOff === 0 || (putOff > 0 && !segments)) throw new Error('a batch write was put off with no write before it that moves its SKU')
    if (putOff > 0) {
      await tx.query('ROLLBACK TO SAVEPOINT segment');
      [written, moved] = await writeGroup(tx, rest.slice(0, putOff), now, idempotencyTtlMs, false, turn)
    }
    if (segments) await tx.query('RELEASE SAVEPOINT segment')
    outcomes.push(...(putOff >= 0 ? written.slice(0, putOff) : written))
    head = moved ?? head
  }
  // Answered in turn too: a refusal of this batch is not told before the batch ahead of it is settled.
  await turn?.()
  const refusals: BatchRefusal[] = []
  outcomes.forEach((o, index) => { if (o?.ok === false) refusals.push({ index, error: o.error as Error }) })
  if (refusals.length > 0) {
    await tx.query('ROLLBACK TO SAVEPOINT batch')
    await tx.query('RELEASE SAVEPOINT batch')
    throw new BatchRefused(refusals)
  }
  const plants = outcomes.map((o) => {
    const value = (o as { value: CreateResult | StoredPlant | undefined }).value
    return value === undefined ? null : 'replayed' in value ? value.plant : value
  })
  if (idempotency) await tx.query(ANSWER, [idempotency.key, JSON.stringify(plants)])
  await tx.query('RELEASE SAVEPOINT batch')
  if (head !== undefined) tx.moved(head)
  return { plants, replayed: false }
}

/** Whether a write gives its plant a SKU (writeGroup puts off one that wants a SKU another write of its group moves). */
const setsSku = (op: WriteOp): boolean =>
  op.kind === 'patch' ? typeof op.patch.sku === 'string' : op.kind !== 'remove' && op.fields.sku !== null
