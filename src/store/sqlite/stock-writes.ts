import type Database from 'better-sqlite3'
import { IdempotencyKeyReused, PlantNotFound, VersionMismatch } from '../../catalogue/errors.js'
import { fieldChanges, movementEntry, NO_CHANGES, type FieldChanges } from '../../catalogue/history.js'
import type { PlantStatus, StoredPlant } from '../../catalogue/plant.js'
import { timestamp } from '../../catalogue/price-sku-barcode.js'
import { applyMovement, stockCrossings, LocationNameTaken, MAIN_LOCATION, LocationNotEmpty, LocationNotFound, StockHeld, type Location, type MovementInput, type MovementResult, type StockCrossing } from '../../catalogue/stock.js'
import { sameRequest, type IdempotencyClaim } from '../idempotency.js'
import type { LevelCounts, PlantContext } from './plant-context.js'
import { INSERT_MOVEMENT } from './stock-ledger.js'
import { stockStateOf } from './stock-migration.js'
import { packMovement, unpackMovement } from './movement-answer.js'
import { RESERVATION_KINDS, reservationWriter, type ReservationWriteOp, type ReservationWriteResult } from './reservation-writes.js'

// Stock writes on SQLite, inside the writer's transaction (writes.ts): each movement reads the
// level and the plant's row and writes them back in the same transaction, which the single writer
// holds alone, so the check and the apply are one step no other write can come between.

export type StockWriteOp =
  | { kind: 'stock-move', id: number, input: MovementInput, idempotency?: IdempotencyClaim, expectedVersions?: number[], now: number, actor: string }
  | { kind: 'stock-untrack', id: number, expectedVersions?: number[], now: number, actor: string }
  | { kind: 'location-add', name: string, now: number, actor: string }
  | { kind: 'location-remove', name: string, now: number, actor: string }
  | ReservationWriteOp

/** What a stock write answers. */
export type StockWriteResult = MovementResult | StoredPlant | Location | ReservationWriteResult

const KINDS = new Set(['stock-move', 'stock-untrack', 'location-add', 'location-remove', ...RESERVATION_KINDS])
export const isStockWrite = (op: { kind: string }): op is StockWriteOp => KINDS.has(op.kind)

export type { PlantContext } from './plant-context.js'

/** The plant's UPDATE as it is, and with main's level set too (`main_on_hand = ?, main_reserved = ?` before the id). */
const withMain = (db: Database.Database, sql: string): [Database.Statement, Database.Statement] =>
  [db.prepare(sql), db.prepare(sql.replace(' WHERE id = ?', ', main_on_hand = ?, main_reserved = ? WHERE id = ?'))]

export function stockWriter (db: Database.Database, idempotencyTtlMs: number, plants: PlantContext): (op: StockWriteOp) => StockWriteResult {
  const reservations = reservationWriter(db, idempotencyTtlMs, plants)
  const setTotals = totalsWriter(db)
  const s = {
    location: db.prepare<[string], { name: string }>('SELECT name FROM locations WHERE name = ?'),
    addLocation: db.prepare('INSERT INTO locations (name, created_at) VALUES (?, ?)'),
    held: db.prepare<[string], number>('SELECT 1 FROM stock_levels WHERE location = ? AND (on_hand <> 0 OR reserved <> 0) LIMIT 1').pluck(),
    dropLevels: db.prepare('DELETE FROM stock_levels WHERE location = ?'),
    dropLocation: db.prepare('DELETE FROM locations WHERE name = ?'),
    level: db.prepare<[number, string], { on_hand: number, reserved: number }>('SELECT on_hand, reserved FROM stock_levels WHERE plant_id = ? AND location = ?'),
    setLevel: db.prepare('INSERT INTO stock_levels (plant_id, location, on_hand, reserved) VALUES (?, ?, ?, ?) ON CONFLICT (plant_id, location) DO UPDATE SET on_hand = excluded.on_hand'),
    // A count that changes nothing names the plant's newest movement, and at main its level (the second of the pair).
    setLedgerHead: withMain(db, 'UPDATE plants SET ledger_seq = ? WHERE id = ?'),
    untrack: db.prepare('UPDATE plants SET on_hand = NULL, reserved = NULL, available = NULL, stock_state = NULL, main_on_hand = NULL, main_reserved = NULL, version = ?, updated_at = ?, history_seq = ? WHERE id = ?'),
    dropPlantLevels: db.prepare('DELETE FROM stock_levels WHERE plant_id = ?'),
    ledger: db.prepare(INSERT_MOVEMENT),
    // A crossing into low or no stock rides on the movement's change (webhooks stock.low / stock.out).
    crossing: db.prepare('UPDATE changes SET stock_events = ? WHERE seq = ?')
  }

  /** A level at another location than main, in stock_levels. */
  const levelAt = (id: number, location: string): LevelCounts | undefined => {
    const row = s.level.get(id, location)
    return row && { onHand: row.on_hand, reserved: row.reserved }
  }

  /** The plant's new version: its row, one change, one history entry. Answers the history's head and the change's seq. */
  const version = (before: StoredPlant, after: StoredPlant, historySeq: number | null, changes: string, op: { now: number, actor: string }): [number, number] => {
    const head = plants.record(after.id, after.version, op.now, op.actor, changes, historySeq)
    const changeSeq = plants.change(after, op.now, op.actor)
    if (after.status !== before.status) {
      plants.count(before.status, -1)
      plants.count(after.status, 1)
    }
    return [head, changeSeq]
  }

  function move (op: Extract<StockWriteOp, { kind: 'stock-move' }>): MovementResult {
    const { idempotency, input, now } = op
    if (idempotency) {
      const earlier = plants.keys.find(idempotency.key, now - idempotencyTtlMs)
      if (earlier) {
        if (!sameRequest(earlier.request_hash, idempotency.requestHash)) throw new IdempotencyKeyReused(earlier.created_at, earlier.created_at + idempotencyTtlMs)
        return unpackMovement(earlier.response)
      }
    }
    const found = plants.load(op.id)
    if (!found) throw new PlantNotFound()
    const { plant, historySeq, ledgerSeq, main } = found
    if (op.expectedVersions && !op.expectedVersions.includes(plant.version)) throw new VersionMismatch()
    const location = input.location ?? MAIN_LOCATION
    // Main's level is on the plant's row, read with it (stock-migration.ts mainLevelMigration).
    const atMain = location === MAIN_LOCATION
    const row = atMain ? main : levelAt(op.id, location)
    // A level is only ever at a known location (a location's delete takes its levels): the location
    // is looked up only for the plant's first movement there.
    if (row === undefined && !s.location.get(location)) throw new LocationNotFound(location)
    const applied = applyMovement(input, location, row, plant.stock, plant.status as PlantStatus)
    const at = timestamp(now)
    const after: StoredPlant = applied.changes ? { ...plant, stock: applied.stock, status: applied.status, version: plant.version + 1, updatedAt: at } : plant
    // A count that finds the level as it is changes no plant (no version, change or history entry): the ledger keeps it.
    const [head, changeSeq] = applied.changes ? version(plant, after, historySeq, movementEntry(plant, after, input.reason, { location }), op) : [historySeq, 0]
    const seq = Number(s.ledger.run(op.id, now, op.actor, location, applied.delta, input.reason, input.reference ?? null, applied.level.onHand, ledgerSeq).lastInsertRowid)
    if (!applied.changes) s.setLedgerHead[atMain ? 1 : 0].run(seq, ...(atMain ? [applied.level.onHand, applied.level.reserved] : []), op.id)
    else setTotals(plant, after, now, head, seq, atMain ? applied.level : undefined)
    if (!atMain) s.setLevel.run(op.id, location, applied.level.onHand, applied.level.reserved)
    plants.units(applied.delta)
    const result: MovementResult = {
      movement: { seq, at, actor: op.actor, location, delta: applied.delta, reason: input.reason, reference: input.reference ?? null, onHandAfter: applied.level.onHand },
      level: applied.level,
      stock: applied.stock,
      id: op.id,
      version: after.version,
      replayed: false
    }
    const events = stockCrossings(plant.stock, applied.stock, plant.lowStockAt)
    if (events.length > 0) s.crossing.run(JSON.stringify({ events, movement: result.movement, level: result.level } satisfies StockCrossing), changeSeq)
    if (idempotency) plants.keys.put(idempotency.key, idempotency.requestHash, op.id, packMovement(result, now), now)
    return result
  }

  function untrack (op: Extract<StockWriteOp, { kind: 'stock-untrack' }>): StoredPlant {
    const found = plants.load(op.id)
    if (!found) throw new PlantNotFound()
    const { plant, historySeq } = found
    if (op.expectedVersions && !op.expectedVersions.includes(plant.version)) throw new VersionMismatch()
    if (plant.stock === null) return plant
    if (plant.stock.onHand !== 0 || plant.stock.reserved !== 0) throw new StockHeld(plant.stock.onHand, plant.stock.reserved)
    const after: StoredPlant = { ...plant, stock: null, version: plant.version + 1, updatedAt: timestamp(op.now) }
    const changes: FieldChanges = fieldChanges(plant, after)
    const [head] = version(plant, after, historySeq, JSON.stringify(changes ?? NO_CHANGES), op)
    s.untrack.run(after.version, op.now, head, op.id)
    s.dropPlantLevels.run(op.id)
    return after
  }

  return (op) => {
    switch (op.kind) {
      case 'stock-move': return move(op)
      case 'stock-untrack': return untrack(op)
      case 'location-add':
        if (s.location.get(op.name)) throw new LocationNameTaken(op.name)
        s.addLocation.run(op.name, op.now)
        return { name: op.name, createdAt: timestamp(op.now) }
      case 'location-remove':
        if (!s.location.get(op.name)) throw new LocationNotFound(op.name)
        if (s.held.get(op.name) !== undefined) throw new LocationNotEmpty(op.name)
        s.dropLevels.run(op.name)
        s.dropLocation.run(op.name)
        return undefined
      default: return reservations(op)
    }
  }
}

/**
 * The plant's row after a movement: its totals, version, history head and newest movement (ledger_seq:
 * the ledger is a chain per plant, stock-ledger.ts), and at main its level (stock-migration.ts
 * mainLevelMigration). Status and stock_state are named only when they change (a crossing into or
 * out of stock or low stock), as writes.ts's updates name an indexed column: an unchanged one costs
 * no index pages, and most sales cross nothing. stock_state is the movement's to keep (migration 32).
 */
function totalsWriter (db: Database.Database): (before: StoredPlant, after: StoredPlant, at: number, head: number | null, seq: number, main?: LevelCounts) => void {
  const statements = new Map<number, Database.Statement>()
  const statement = (status: boolean, state: boolean, main: boolean): Database.Statement => {
    const shape = (status ? 1 : 0) | (state ? 2 : 0) | (main ? 4 : 0)
    let found = statements.get(shape)
    if (found === undefined) {
      found = db.prepare('UPDATE plants SET on_hand = ?, reserved = ?, available = ?, version = ?, updated_at = ?, history_seq = ?, ledger_seq = ?' +
        `${status ? ', status = ?' : ''}${state ? ', stock_state = ?' : ''}${main ? ', main_on_hand = ?, main_reserved = ?' : ''} WHERE id = ?`)
      statements.set(shape, found)
    }
    return found
  }
  return (before, after, at, head, seq, main) => {
    const { onHand, reserved, available } = after.stock!
    const args: unknown[] = [onHand, reserved, available, after.version, at, head, seq]
    const status = after.status !== before.status
    if (status) args.push(after.status)
    const state = stockStateOf(available, after.lowStockAt)
    const stateChanged = state !== stockStateOf(before.stock?.available ?? null, before.lowStockAt)
    if (stateChanged) args.push(state)
    if (main !== undefined) args.push(main.onHand, main.reserved)
    args.push(after.id)
    statement(status, stateChanged, main !== undefined).run(args)
  }
}
