import type Database from 'better-sqlite3'
import { IdempotencyKeyReused } from '../../catalogue/errors.js'
import { movementEntry } from '../../catalogue/history.js'
import type { StoredPlant } from '../../catalogue/plant.js'
import { timestamp } from '../../catalogue/price-sku-barcode.js'
import {
  checkHold, countsOf, ENDED_KEPT_MS, EXPIRY_ACTOR, linesOf, plantAfter, plantsOf, reservationOf, RESERVATION_COLUMNS, STEP_REASONS, stepAbout, unitsByPlace,
  type CommitResult, type NewReservation, type PlantCounts, type ReservationLine, type ReservationResult, type ReservationRow
} from '../../catalogue/reservation.js'
import { MAIN_LOCATION, ReservationGone, ReservationLineUnknown, ReservationNotFound, stockCrossings, type StockCrossing } from '../../catalogue/stock.js'
import { sameRequest, type IdempotencyClaim } from '../idempotency.js'
import type { PlantContext } from './plant-context.js'
import { INSERT_MOVEMENT } from './stock-ledger.js'
import { stockStateOf } from './stock-migration.js'

// Reservations on SQLite, inside the writer's transaction (writes.ts): each step reads the
// reservation, the plants and their levels and writes them back in the one transaction the single
// writer holds alone, so what it checks cannot change before it applies. Every refusal is thrown
// before anything is written (a refused write leaves nothing in the shared transaction).

export type ReservationWriteOp =
  | { kind: 'reserve', input: NewReservation, idempotency?: IdempotencyClaim, now: number, actor: string }
  | { kind: 'reservation-commit', id: string, idempotency?: IdempotencyClaim, now: number, actor: string }
  | { kind: 'reservation-release', id: string, now: number, actor: string }
  | { kind: 'reservation-expire', now: number, limit: number, actor: string }
  | { kind: 'expirer-lease', owner: string, until: number, now: number }
  | { kind: 'expirer-release', owner: string }

export const RESERVATION_KINDS = ['reserve', 'reservation-commit', 'reservation-release', 'reservation-expire', 'expirer-lease', 'expirer-release']
export type ReservationWriteResult = ReservationResult | CommitResult | number | boolean | 'expired' | undefined

/** The reservations, and the expirer's lease (one row: whichever instance holds it releases what is overdue). */
export const RESERVATIONS_MIGRATION = `
  CREATE TABLE reservations (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    lines TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    ended_at INTEGER,
    actor TEXT NOT NULL
  ) STRICT;
  -- The expirer walks the held ones by expiry; ended ones are forgotten by age.
  CREATE INDEX reservations_held ON reservations (expires_at) WHERE state = 'held';
  CREATE INDEX reservations_ended ON reservations (ended_at) WHERE state <> 'held';
  CREATE TABLE leases (name TEXT PRIMARY KEY, owner TEXT, lease_until INTEGER) STRICT;
  INSERT INTO leases (name) VALUES ('reservation-expirer');
`

export function reservationWriter (db: Database.Database, idempotencyTtlMs: number, plants: PlantContext): (op: ReservationWriteOp) => ReservationWriteResult {
  const s = {
    get: db.prepare<[string], ReservationRow>(`SELECT ${RESERVATION_COLUMNS} FROM reservations WHERE id = ?`),
    insert: db.prepare('INSERT INTO reservations (id, state, lines, created_at, expires_at, ended_at, actor) VALUES (?, \'held\', ?, ?, ?, NULL, ?)'),
    end: db.prepare('UPDATE reservations SET state = ?, ended_at = ? WHERE id = ?'),
    overdue: db.prepare<[number, number], ReservationRow>(`SELECT ${RESERVATION_COLUMNS} FROM reservations WHERE state = 'held' AND expires_at <= ? ORDER BY expires_at LIMIT ?`),
    forget: db.prepare("DELETE FROM reservations WHERE state <> 'held' AND ended_at < ?"),
    location: db.prepare<[string], number>('SELECT 1 FROM locations WHERE name = ?').pluck(),
    level: db.prepare<[number, string], { on_hand: number, reserved: number }>('SELECT on_hand, reserved FROM stock_levels WHERE plant_id = ? AND location = ?'),
    moveLevel: db.prepare('UPDATE stock_levels SET on_hand = on_hand - ?, reserved = max(0, reserved + ?) WHERE plant_id = ? AND location = ?'),
    // A live plant's main level is on its row (stock-migration.ts mainLevelMigration); null columns stay null, as a missing level row stays missing.
    mainLevel: db.prepare<[number], { on_hand: number, reserved: number }>('SELECT main_on_hand AS on_hand, main_reserved AS reserved FROM plants WHERE id = ? AND main_on_hand IS NOT NULL'),
    moveMain: db.prepare('UPDATE plants SET main_on_hand = main_on_hand - ?, main_reserved = max(0, main_reserved + ?) WHERE id = ?'),
    setPlant: db.prepare('UPDATE plants SET on_hand = ?, reserved = ?, available = ?, status = ?, version = ?, updated_at = ?, history_seq = ? WHERE id = ?'),
    // A step keeps the plant's stock_state (stock-migration.ts, migration 32), named only when it changes.
    setPlantState: db.prepare('UPDATE plants SET on_hand = ?, reserved = ?, available = ?, status = ?, version = ?, updated_at = ?, history_seq = ?, stock_state = ? WHERE id = ?'),
    trashed: db.prepare<[number], string>('SELECT plant FROM trash WHERE id = ?').pluck(),
    setTrashed: db.prepare('UPDATE trash SET plant = ? WHERE id = ?'),
    ledger: db.prepare(INSERT_MOVEMENT),
    // Each sale the newest of its plant's ledger (stock-ledger.ts: a chain per plant).
    ledgerHead: db.prepare<[number], number | null>('SELECT ledger_seq FROM plants WHERE id = ?').pluck(),
    setLedgerHead: db.prepare('UPDATE plants SET ledger_seq = ? WHERE id = ?'),
    units: db.prepare('UPDATE meta SET value = value + ? WHERE key = ?'),
    lease: db.prepare("UPDATE leases SET owner = ?, lease_until = ? WHERE name = 'reservation-expirer' AND (owner IS NULL OR owner = ? OR lease_until < ?)"),
    release: db.prepare("UPDATE leases SET owner = NULL, lease_until = NULL WHERE name = 'reservation-expirer' AND owner = ?"),
    crossing: db.prepare('UPDATE changes SET stock_events = ? WHERE seq = ?')
  }

  /** A live plant's level at a location: main's on its row, the others' in stock_levels. */
  const level = (plant: number, location: string): { on_hand: number, reserved: number } | undefined =>
    location === MAIN_LOCATION ? s.mainLevel.get(plant) : s.level.get(plant, location)
  /** Moves a level by `sold` units on hand and `held` reserved: a live plant's main on its row, the others' (and a trashed plant's main) in stock_levels. */
  const moveLevel = (live: boolean, sold: number, held: number, plant: number, location: string): void => {
    if (live && location === MAIN_LOCATION) s.moveMain.run(sold, held, plant)
    else s.moveLevel.run(sold, held, plant, location)
  }

  /** The answer kept under the claim, or undefined when it was not used (refused: another request used it). */
  function earlier<T> (claim: IdempotencyClaim | undefined, now: number): T | undefined {
    if (!claim) return undefined
    const row = plants.keys.find(claim.key, now - idempotencyTtlMs)
    if (!row) return undefined
    if (!sameRequest(row.request_hash, claim.requestHash)) throw new IdempotencyKeyReused(row.created_at, row.created_at + idempotencyTtlMs)
    return { ...JSON.parse(row.response) as T, replayed: true }
  }

  /** The live plants the lines name, refused (naming each line) when one is not live. */
  function livePlants (lines: ReservationLine[]): Map<number, { plant: StoredPlant, historySeq: number | null }> {
    const found = new Map(plantsOf(lines).map((id) => [id, plants.load(id)] as const))
    const unknown = lines.flatMap((l, i) => found.get(l.plant) === undefined ? [i] : [])
    if (unknown.length > 0) throw new ReservationLineUnknown('plant', unknown)
    return found as Map<number, { plant: StoredPlant, historySeq: number | null }>
  }

  /** The plant's new version after a step: its row, one change, a history entry with the step's reason. */
  function version (step: 'hold' | 'release' | 'commit', reason: string, live: { plant: StoredPlant, historySeq: number | null }, places: Map<string, number>, now: number, actor: string, reservation: string): StoredPlant {
    const units = [...places.values()].reduce((a, b) => a + b, 0)
    const { plant, historySeq } = live
    const after = plantAfter(step, plant, units, now)
    const head = plants.record(after.id, after.version, now, actor, movementEntry(plant, after, reason, stepAbout(reservation, places)), historySeq)
    const changeSeq = plants.change(after, now, actor)
    // A hold takes available down as a sale does: a crossing into low or no stock is sent as a movement's is.
    const events = stockCrossings(plant.stock, after.stock!, plant.lowStockAt)
    if (events.length > 0) s.crossing.run(JSON.stringify({ events, movement: null, level: null, reservation } satisfies StockCrossing), changeSeq)
    if (after.status !== plant.status) {
      plants.count(plant.status, -1)
      plants.count(after.status, 1)
    }
    const { onHand, reserved, available } = after.stock!
    const state = stockStateOf(available, after.lowStockAt)
    if (state === stockStateOf(plant.stock?.available ?? null, plant.lowStockAt)) s.setPlant.run(onHand, reserved, available, after.status, after.version, now, head, after.id)
    else s.setPlantState.run(onHand, reserved, available, after.status, after.version, now, head, state, after.id)
    return after
  }

  /** The reservation, refused when unknown or no longer held (a held one past its expiresAt is gone too). */
  function held (id: string, now: number): ReservationRow {
    const row = s.get.get(id)
    if (!row) throw new ReservationNotFound(id)
    const seen = reservationOf(row, now)
    if (seen.state !== 'held') throw new ReservationGone(id, seen.state)
    return row
  }

  function reserve (op: Extract<ReservationWriteOp, { kind: 'reserve' }>): ReservationResult {
    const replay = earlier<ReservationResult>(op.idempotency, op.now)
    if (replay) return replay
    const lines = linesOf(op.input.lines)
    const live = livePlants(lines)
    const nowhere = lines.flatMap((l, i) => s.location.get(l.location) === undefined ? [i] : [])
    if (nowhere.length > 0) throw new ReservationLineUnknown('location', nowhere)
    checkHold(lines, (plant, location) => {
      const at = level(plant, location)
      return at === undefined ? 0 : Math.max(0, at.on_hand - at.reserved)
    })
    let units = 0
    const counts: PlantCounts[] = []
    for (const [id, places] of unitsByPlace(lines)) {
      let total = 0
      for (const [location, n] of places) {
        moveLevel(true, 0, n, id, location)
        total += n
      }
      counts.push(countsOf(version('hold', STEP_REASONS.hold, live.get(id)!, places, op.now, op.actor, op.input.id)))
      units += total
    }
    s.units.run(units, 'units_reserved')
    const expiresAt = op.now + op.input.ttlSeconds * 1000
    s.insert.run(op.input.id, JSON.stringify(lines), op.now, expiresAt, op.actor)
    const result: ReservationResult = { reservation: reservationOf(s.get.get(op.input.id)!, op.now), plants: counts, replayed: false }
    if (op.idempotency) plants.keys.put(op.idempotency.key, op.idempotency.requestHash, 0, JSON.stringify(result), op.now)
    return result
  }

  /** Lets a reservation's units go (released or expired); a plant in the trash keeps its totals there, one purged has none. */
  function end (row: ReservationRow, state: 'released' | 'expired', now: number, actor: string): void {
    const lines = JSON.parse(row.lines) as ReservationLine[]
    let units = 0
    for (const [id, places] of unitsByPlace(lines)) {
      const total = [...places.values()].reduce((a, b) => a + b, 0)
      const live = plants.load(id)
      for (const [location, n] of places) moveLevel(live !== undefined, 0, -n, id, location)
      if (live) {
        version('release', STEP_REASONS[state === 'released' ? 'release' : 'expire'], live, places, now, actor, row.id)
        units += total
        continue
      }
      const trashed = s.trashed.get(id)
      if (trashed !== undefined) {
        const was = JSON.parse(trashed) as StoredPlant
        if (was.stock) s.setTrashed.run(JSON.stringify({ ...was, stock: plantAfter('release', was, total, now).stock }), id)
      }
    }
    s.units.run(-units, 'units_reserved')
    s.end.run(state, now, row.id)
  }

  function commit (op: Extract<ReservationWriteOp, { kind: 'reservation-commit' }>): CommitResult {
    const replay = earlier<CommitResult>(op.idempotency, op.now)
    if (replay) return replay
    const row = held(op.id, op.now)
    const lines = JSON.parse(row.lines) as ReservationLine[]
    const live = livePlants(lines)
    const sales: CommitResult['sales'] = []
    const after = new Map<number, StoredPlant>()
    for (const [id, places] of unitsByPlace(lines)) {
      after.set(id, version('commit', STEP_REASONS.commit, live.get(id)!, places, op.now, op.actor, op.id))
    }
    lines.forEach((l, line) => {
      moveLevel(true, l.quantity, -l.quantity, l.plant, l.location)
      const left = level(l.plant, l.location)!
      const seq = Number(s.ledger.run(l.plant, op.now, op.actor, l.location, -l.quantity, 'sale', op.id, left.on_hand, s.ledgerHead.get(l.plant) ?? null).lastInsertRowid)
      s.setLedgerHead.run(seq, l.plant)
      sales.push({
        line,
        plant: l.plant,
        movement: { seq, at: timestamp(op.now), actor: op.actor, location: l.location, delta: -l.quantity, reason: 'sale', reference: op.id, onHandAfter: left.on_hand },
        level: { location: l.location, onHand: left.on_hand, reserved: left.reserved, available: Math.max(0, left.on_hand - left.reserved) }
      })
    })
    const units = lines.reduce((a, l) => a + l.quantity, 0)
    s.units.run(-units, 'units_on_hand')
    s.units.run(-units, 'units_reserved')
    s.end.run('committed', op.now, op.id)
    const result: CommitResult = {
      reservation: reservationOf(s.get.get(op.id)!, op.now),
      sales,
      plants: [...after.values()].map(countsOf),
      replayed: false
    }
    if (op.idempotency) plants.keys.put(op.idempotency.key, op.idempotency.requestHash, 0, JSON.stringify(result), op.now)
    return result
  }

  return (op) => {
    switch (op.kind) {
      case 'reserve': return reserve(op)
      case 'reservation-commit': return commit(op)
      case 'reservation-release': {
        // One past its expiresAt that the expirer has not let go yet is let go now, as the expirer
        // would (expired, by `expiry`): the caller is then answered 410 with state expired.
        const row = s.get.get(op.id)
        if (row !== undefined && row.state === 'held' && reservationOf(row, op.now).state === 'expired') {
          end(row, 'expired', op.now, EXPIRY_ACTOR)
          return 'expired'
        }
        end(held(op.id, op.now), 'released', op.now, op.actor)
        return undefined
      }
      case 'reservation-expire': {
        const due = s.overdue.all(op.now, op.limit)
        for (const row of due) end(row, 'expired', op.now, op.actor)
        s.forget.run(op.now - ENDED_KEPT_MS)
        return due.length
      }
      case 'expirer-lease': return s.lease.run(op.owner, op.until, op.owner, op.now).changes > 0
      case 'expirer-release':
        s.release.run(op.owner)
        return undefined
    }
  }
}
