import { ANONYMOUS_WRITE } from '../../catalogue/changes.js'
import { IdempotencyKeyReused } from '../../catalogue/errors.js'
import { movementEntry, type FieldChanges } from '../../catalogue/history.js'
import { toRecord, type StoredPlant } from '../../catalogue/plant.js'
import { timestamp } from '../../catalogue/price-sku-barcode.js'
import {
  checkHold, countsOf, ENDED_KEPT_MS, EXPIRY_ACTOR, linesOf, plantAfter, plantsOf, reservationOf, RESERVATION_COLUMNS, STEP_REASONS, stepAbout, unitsByPlace,
  type CommitResult, type PlantCounts, type ReservationLine, type ReservationResult, type ReservationRow
} from '../../catalogue/reservation.js'
import { ReservationGone, ReservationLineUnknown, ReservationNotFound, stockCrossings, type StockCrossing } from '../../catalogue/stock.js'
import { digestedClaim, type IdempotencyClaim } from '../idempotency.js'
import type { ReservationStore } from '../reservation-store.js'
import type { Session } from './connection.js'
import type { Tx } from './group-commit.js'
import { earlierAnswer } from './earlier-answer.js'
import { ROW_COLUMNS, toPlant, type PlantRow } from './group-writes.js'

// The PostgreSQL store's reservations (store/reservation-store.ts). Each step is a unit of work of
// the group commit that locks what it reads before it checks: the reservation's row first, then
// its plants' rows in id order (FOR UPDATE), so a movement or another step of the same plants on
// any instance waits and then sees the committed counts. Refusals are thrown before anything is
// written (the group commit's rule for units of work).

interface Options {
  session: Session
  work: <T>(work: (tx: Tx) => Promise<T>) => Promise<T>
  now: () => number
  idempotencyTtlMs: number
}

export function postgresReservations ({ session, work, now, idempotencyTtlMs }: Options): ReservationStore {
  const earlier = async <T>(tx: Tx, claim: IdempotencyClaim | undefined, at: number): Promise<T | undefined> =>
    claim ? await earlierAnswer<T>(tx, claim, at, idempotencyTtlMs) : undefined

  /** Claims the key before the writes: a racing request with the same key waits here for this one's commit, then answers its result. */
  async function claimKey<T> (tx: Tx, claim: IdempotencyClaim | undefined, at: number): Promise<T | undefined> {
    if (!claim) return undefined
    const { rowCount } = await tx.query(`INSERT INTO idempotency_keys AS k (key, request_hash, plant_id, created_at) VALUES ($1, $2, 0, $3)
      ON CONFLICT (key) DO UPDATE SET request_hash = EXCLUDED.request_hash, plant_id = 0, response = NULL, created_at = EXCLUDED.created_at
      WHERE k.created_at <= $4`, [claim.key, claim.requestHash, at, at - idempotencyTtlMs])
    if (rowCount !== 0) return undefined
    const answer = await earlier<T>(tx, claim, at)
    if (answer) return answer
    throw new IdempotencyKeyReused(at, at + idempotencyTtlMs)
  }

  /** The plants' rows, locked in id order; those in `ids` that are not live are absent. */
  async function lockPlants (tx: Tx, ids: number[]): Promise<Map<number, StoredPlant>> {
    const { rows } = await tx.query<PlantRow>(`SELECT ${ROW_COLUMNS} FROM plants WHERE id = ANY($1) ORDER BY id FOR UPDATE`, [ids])
    return new Map(rows.map((r) => { const p = toPlant(r); return [p.id, p] }))
  }

  /** The plant's new version after a step: its row, one change with its history entry. */
  async function version (tx: Tx, step: 'hold' | 'release' | 'commit', reason: string, plant: StoredPlant, places: Map<string, number>, at: number, actor: string, reservation: string): Promise<StoredPlant> {
    const units = [...places.values()].reduce((a, b) => a + b, 0)
    const after = plantAfter(step, plant, units, at)
    await tx.query('UPDATE plants SET on_hand = $2, reserved = $3, available = $4, status = $5, version = $6, updated_at = $7 WHERE id = $1',
      [after.id, after.stock!.onHand, after.stock!.reserved, after.stock!.available, after.status, after.version, at])
    // A hold takes available down as a sale does: a crossing into low or no stock is sent as a movement's is.
    const events = stockCrossings(plant.stock, after.stock!, plant.lowStockAt)
    const crossing: StockCrossing | undefined = events.length > 0 ? { events, movement: null, level: null, reservation } : undefined
    tx.change('updated', after.id, after.version, toRecord(after), at, actor, JSON.parse(movementEntry(plant, after, reason, stepAbout(reservation, places))) as FieldChanges, undefined, crossing)
    if (after.status !== plant.status) {
      tx.count(plant.status, -1)
      tx.count(after.status, 1)
    }
    return after
  }

  async function lockHeld (tx: Tx, id: string, at: number): Promise<ReservationRow> {
    const { rows: [row] } = await tx.query<ReservationRow>(`SELECT ${RESERVATION_COLUMNS} FROM reservations WHERE id = $1 FOR UPDATE`, [id])
    if (!row) throw new ReservationNotFound(id)
    const seen = reservationOf(row, at)
    if (seen.state !== 'held') throw new ReservationGone(id, seen.state)
    return row
  }

  const unknownLines = (lines: ReservationLine[], known: (l: ReservationLine) => boolean): number[] => lines.flatMap((l, i) => known(l) ? [] : [i])

  /** Lets the units of reservations go (each released or expired), their plants locked in id order first. */
  async function end (tx: Tx, rows: ReservationRow[], state: 'released' | 'expired', at: number, actor: string): Promise<void> {
    const all = rows.map((r) => JSON.parse(r.lines) as ReservationLine[])
    const live = await lockPlants(tx, plantsOf(all.flat()))
    let units = 0
    for (const [n, lines] of all.entries()) {
      for (const [id, places] of unitsByPlace(lines)) {
        const total = [...places.values()].reduce((a, b) => a + b, 0)
        for (const [location, q] of places) {
          await tx.query('UPDATE stock_levels SET reserved = greatest(0, reserved - $3) WHERE plant_id = $1 AND location = $2', [id, location, q])
        }
        const plant = live.get(id)
        if (plant) {
          live.set(id, await version(tx, 'release', STEP_REASONS[state === 'released' ? 'release' : 'expire'], plant, places, at, actor, rows[n].id))
          units += total
          continue
        }
        // A plant in the trash keeps its totals there (counted nowhere until restored); a purged one has none.
        const { rows: [trashed] } = await tx.query<{ plant: string }>('SELECT plant FROM trash WHERE id = $1 FOR UPDATE', [id])
        const was = trashed && JSON.parse(trashed.plant) as StoredPlant
        if (was?.stock) await tx.query('UPDATE trash SET plant = $2 WHERE id = $1', [id, JSON.stringify({ ...was, stock: plantAfter('release', was, total, at).stock })])
      }
      await tx.query('UPDATE reservations SET state = $2, ended_at = $3 WHERE id = $1', [rows[n].id, state, at])
    }
    tx.count('units_reserved', -units)
  }

  /** Releases up to `limit` overdue held reservations in one unit of work (and forgets long-ended ones). */
  const expire = async (limit: number): Promise<number> => await work(async (tx) => {
    const at = now()
    // SKIP LOCKED: one being committed or released right now is that request's, not the expirer's.
    const { rows } = await tx.query<ReservationRow>(
      `SELECT ${RESERVATION_COLUMNS} FROM reservations WHERE state = 'held' AND expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED`, [at, limit])
    if (rows.length > 0) await end(tx, rows, 'expired', at, EXPIRY_ACTOR)
    await tx.query('DELETE FROM reservations WHERE state <> \'held\' AND ended_at < $1', [at - ENDED_KEPT_MS])
    return rows.length
  })

  return {
    reserve: async (input, claimed, { actor } = ANONYMOUS_WRITE) => await work(async (tx) => {
      const idempotency = digestedClaim(claimed)
      const at = now()
      const replay = await earlier<ReservationResult>(tx, idempotency, at)
      if (replay) return replay
      const lines = linesOf(input.lines)
      const live = await lockPlants(tx, plantsOf(lines))
      const gone = unknownLines(lines, (l) => live.has(l.plant))
      if (gone.length > 0) throw new ReservationLineUnknown('plant', gone)
      const { rows: places } = await tx.query<{ name: string }>('SELECT name FROM locations WHERE name = ANY($1) FOR SHARE', [[...new Set(lines.map((l) => l.location))]])
      const nowhere = unknownLines(lines, (l) => places.some((p) => p.name === l.location))
      if (nowhere.length > 0) throw new ReservationLineUnknown('location', nowhere)
      const { rows: levels } = await tx.query<{ plant_id: number, location: string, on_hand: number, reserved: number }>(
        'SELECT plant_id, location, on_hand, reserved FROM stock_levels WHERE plant_id = ANY($1)', [[...live.keys()]])
      checkHold(lines, (plant, location) => {
        const level = levels.find((l) => Number(l.plant_id) === plant && l.location === location)
        return level === undefined ? 0 : Math.max(0, Number(level.on_hand) - Number(level.reserved))
      })
      const raced = await claimKey<ReservationResult>(tx, idempotency, at)
      if (raced) return raced
      let units = 0
      const plants: PlantCounts[] = []
      for (const [id, byLocation] of unitsByPlace(lines)) {
        let total = 0
        for (const [location, q] of byLocation) {
          await tx.query('UPDATE stock_levels SET reserved = reserved + $3 WHERE plant_id = $1 AND location = $2', [id, location, q])
          total += q
        }
        plants.push(countsOf(await version(tx, 'hold', STEP_REASONS.hold, live.get(id)!, byLocation, at, actor, input.id)))
        units += total
      }
      tx.count('units_reserved', units)
      const expiresAt = at + input.ttlSeconds * 1000
      const row: ReservationRow = { id: input.id, state: 'held', lines: JSON.stringify(lines), created_at: at, expires_at: expiresAt, ended_at: null, actor }
      await tx.query(`INSERT INTO reservations (${RESERVATION_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [row.id, row.state, row.lines, row.created_at, row.expires_at, row.ended_at, row.actor])
      const result: ReservationResult = { reservation: reservationOf(row, at), plants, replayed: false }
      if (idempotency) await tx.query('UPDATE idempotency_keys SET response = $2 WHERE key = $1', [idempotency.key, JSON.stringify(result)])
      return result
    }),

    reservation: async (id) => {
      const { rows: [row] } = await session.run((c) => c.query<ReservationRow>(`SELECT ${RESERVATION_COLUMNS} FROM reservations WHERE id = $1`, [id]))
      return row === undefined ? undefined : reservationOf(row, now())
    },

    commitReservation: async (id, claimed, { actor } = ANONYMOUS_WRITE) => await work(async (tx) => {
      const idempotency = digestedClaim(claimed)
      const at = now()
      const replay = await earlier<CommitResult>(tx, idempotency, at)
      if (replay) return replay
      let row: ReservationRow
      try {
        row = await lockHeld(tx, id, at)
      } catch (error) {
        // The same commit racing itself (one key) waited on the reservation's lock: it answers the first one's result.
        const first = error instanceof ReservationGone ? await earlier<CommitResult>(tx, idempotency, at) : undefined
        if (first) return first
        throw error
      }
      const lines = JSON.parse(row.lines) as ReservationLine[]
      const live = await lockPlants(tx, plantsOf(lines))
      const gone = unknownLines(lines, (l) => live.has(l.plant))
      if (gone.length > 0) throw new ReservationLineUnknown('plant', gone)
      const raced = await claimKey<CommitResult>(tx, idempotency, at)
      if (raced) return raced
      const plants: PlantCounts[] = []
      for (const [pid, places] of unitsByPlace(lines)) plants.push(countsOf(await version(tx, 'commit', STEP_REASONS.commit, live.get(pid)!, places, at, actor, id)))
      const sales: CommitResult['sales'] = []
      for (const [line, l] of lines.entries()) {
        const { rows: [level] } = await tx.query<{ on_hand: number, reserved: number }>(
          'UPDATE stock_levels SET on_hand = on_hand - $3, reserved = greatest(0, reserved - $3) WHERE plant_id = $1 AND location = $2 RETURNING on_hand, reserved', [l.plant, l.location, l.quantity])
        const onHand = Number(level.on_hand)
        const reserved = Number(level.reserved)
        const { rows: [{ seq }] } = await tx.query<{ seq: number }>(`INSERT INTO stock_movements (plant_id, at, actor, location, delta, reason, reference, on_hand_after)
          VALUES ($1, $2, $3, $4, $5, 'sale', $6, $7) RETURNING seq`, [l.plant, at, actor, l.location, -l.quantity, id, onHand])
        sales.push({
          line,
          plant: l.plant,
          movement: { seq: Number(seq), at: timestamp(at), actor, location: l.location, delta: -l.quantity, reason: 'sale', reference: id, onHandAfter: onHand },
          level: { location: l.location, onHand, reserved, available: Math.max(0, onHand - reserved) }
        })
      }
      const units = lines.reduce((a, l) => a + l.quantity, 0)
      tx.count('units_on_hand', -units)
      tx.count('units_reserved', -units)
      await tx.query('UPDATE reservations SET state = \'committed\', ended_at = $2 WHERE id = $1', [id, at])
      const result: CommitResult = { reservation: reservationOf({ ...row, state: 'committed', ended_at: at }, at), sales, plants, replayed: false }
      if (idempotency) await tx.query('UPDATE idempotency_keys SET response = $2 WHERE key = $1', [idempotency.key, JSON.stringify(result)])
      return result
    }),

    releaseReservation: async (id, { actor } = ANONYMOUS_WRITE) => {
      const ended = await work(async (tx) => {
        const at = now()
        // One past its expiresAt that the expirer has not let go yet is let go now, as the expirer
        // would (expired, by `expiry`; its row locked, so the expirer skips it): the answer is 410.
        const { rows: [row] } = await tx.query<ReservationRow>(`SELECT ${RESERVATION_COLUMNS} FROM reservations WHERE id = $1 FOR UPDATE`, [id])
        if (!row) throw new ReservationNotFound(id)
        if (row.state !== 'held') throw new ReservationGone(id, row.state)
        const overdue = reservationOf(row, at).state === 'expired'
        await end(tx, [row], overdue ? 'expired' : 'released', at, overdue ? EXPIRY_ACTOR : actor)
        return overdue ? 'expired' : 'released'
      })
      if (ended === 'expired') throw new ReservationGone(id, 'expired')
    },

    overdue: async () => (await session.run((c) => c.query("SELECT 1 FROM reservations WHERE state = 'held' AND expires_at <= $1 LIMIT 1", [now()]))).rowCount! > 0,
    expireReservations: expire,

    leaseExpirer: async (owner, leaseMs) => {
      const at = now()
      return (await session.run((c) => c.query(
        'UPDATE leases SET owner = $1, lease_until = $2 WHERE name = \'reservation-expirer\' AND (owner IS NULL OR owner = $1 OR lease_until < $3)', [owner, at + leaseMs, at]))).rowCount! > 0
    },

    releaseExpirer: async (owner) => {
      await session.run((c) => c.query('UPDATE leases SET owner = NULL, lease_until = NULL WHERE name = \'reservation-expirer\' AND owner = $1', [owner]))
    }
  }
}
