import { timestamp } from '../../catalogue/price-sku-barcode.js'
import type { MovementResult, Reason } from '../../catalogue/stock.js'

// A movement's answer as its Idempotency-Key keeps it on SQLite (key-book.ts): its values in a fixed
// order, without the names, JSON.stringify's object of ~350 bytes cut to ~90. The key's row is
// appended at every sale and copied again when the waiting keys move into the indexed table, and its
// size was most of what the key cost the writer thread (bench/results/issue-49-stock.md, stop 60).
// The `m` in front keeps it apart from every answer kept as JSON (an object, or a batch's array),
// which older files, a copy from PostgreSQL and the other writes keep: an answer is read either way.

type Packed = [seq: number, at: number, actor: string, location: string, delta: number, reason: Reason, reference: string | null, onHandAfter: number,
  levelOnHand: number, levelReserved: number, levelAvailable: number, onHand: number, reserved: number, available: number, id: number, version: number]

const MARK = 'm'

/**
 * The answer to keep; `at`: the movement's time in epoch ms, as it was written. The text JSON.stringify
 * writes of the Packed array, written by hand (its numbers are integers): one a sale, at half the cost.
 */
export function packMovement (r: MovementResult, at: number): string {
  const { movement: m, level: l, stock: s } = r
  const text = (x: string | null): string => x === null ? 'null' : JSON.stringify(x)
  return `${MARK}[${m.seq},${at},${text(m.actor)},${text(m.location)},${m.delta},${text(m.reason)},${text(m.reference)},${m.onHandAfter},` +
    `${l.onHand},${l.reserved},${l.available},${s.onHand},${s.reserved},${s.available},${r.id},${r.version}]`
}

/** The answer kept, packed or as JSON, as a replay answers it. */
export function unpackMovement (kept: string): MovementResult {
  if (!kept.startsWith(MARK)) return { ...JSON.parse(kept) as MovementResult, replayed: true }
  const [seq, at, actor, location, delta, reason, reference, onHandAfter, levelOnHand, levelReserved, levelAvailable, onHand, reserved, available, id, version] = JSON.parse(kept.slice(1)) as Packed
  return {
    movement: { seq, at: timestamp(at), actor, location, delta, reason, reference, onHandAfter },
    level: { location, onHand: levelOnHand, reserved: levelReserved, available: levelAvailable },
    stock: { onHand, reserved, available },
    id,
    version,
    replayed: true
  }
}

/** A kept answer as JSON, as another engine keeps it (a copy of the catalogue: snapshot.ts). */
export const keptAnswerAsJson = (kept: string): string =>
  kept.startsWith(MARK) ? JSON.stringify({ ...unpackMovement(kept), replayed: false }) : kept
