import { ANONYMOUS_WRITE } from '../../catalogue/changes.js'
import { PlantNotFound, VersionMismatch } from '../../catalogue/errors.js'
import { fieldChanges, type FieldChanges } from '../../catalogue/history.js'
import { toRecord, type StoredPlant } from '../../catalogue/plant.js'
import { timestamp } from '../../catalogue/price-sku-barcode.js'
import {
  LocationNameTaken, LocationNotEmpty, LocationNotFound, StockHeld, type Location, type Movement, type MovementResult, type Reason, type StockLevel
} from '../../catalogue/stock.js'
import type { StockStore } from '../stock-store.js'
import type { Session } from './connection.js'
import type { Tx } from './group-commit.js'
import type { MoveOp } from './move-group.js'
import { ROW_COLUMNS, toPlant, type PlantRow } from './group-writes.js'
import { postgresReservations } from './reservations.js'
import { digestedClaim } from '../idempotency.js'

// The PostgreSQL store's stock (store/stock-store.ts). Movements are written by the group commit,
// set-based (move-group.ts): a group locks its plants' rows first (FOR UPDATE), so every movement of
// one plant, on any instance, checks and applies in turn against the committed level. Untracking
// locks its plant alike, as a unit of work: refusals are thrown before anything is written (the
// group commit's rule for units of work).

interface Options {
  session: Session
  /** Runs a unit of work in the group commit's transaction (its feed change and counts written with it). */
  work: <T>(work: (tx: Tx) => Promise<T>) => Promise<T>
  /** Queues a movement for the group commit, which writes a group's movements set-based (move-group.ts). */
  move: (op: MoveOp) => Promise<MovementResult>
  now: () => number
  idempotencyTtlMs: number
}

interface MovementRow { seq: number, at: number, actor: string, location: string, delta: number, reason: string, reference: string | null, on_hand_after: number }

/** The plant, locked for the rest of the transaction; refused when absent or not at an expected version. */
async function locked (tx: Tx, id: number, expectedVersions: number[] | undefined): Promise<StoredPlant> {
  const { rows: [row] } = await tx.query<PlantRow>(`SELECT ${ROW_COLUMNS} FROM plants WHERE id = $1 FOR UPDATE`, [id])
  if (!row) throw new PlantNotFound()
  const plant = toPlant(row)
  if (expectedVersions && !expectedVersions.includes(plant.version)) throw new VersionMismatch()
  return plant
}

/** The plant's new version: one 'updated' change, its history entry and the status counts. */
function versioned (tx: Tx, before: StoredPlant, after: StoredPlant, changes: FieldChanges, now: number, actor: string): void {
  tx.change('updated', after.id, after.version, toRecord(after), now, actor, changes)
  if (after.status !== before.status) {
    tx.count(before.status, -1)
    tx.count(after.status, 1)
  }
}

export function postgresStockStore ({ session, work, move, now, idempotencyTtlMs }: Options): StockStore {
  async function untrack (tx: Tx, id: number, expectedVersions: number[] | undefined, actor: string): Promise<StoredPlant> {
    const plant = await locked(tx, id, expectedVersions)
    if (plant.stock === null) return plant
    if (plant.stock.onHand !== 0 || plant.stock.reserved !== 0) throw new StockHeld(plant.stock.onHand, plant.stock.reserved)
    const at = now()
    const after: StoredPlant = { ...plant, stock: null, version: plant.version + 1, updatedAt: timestamp(at) }
    await tx.query('UPDATE plants SET on_hand = NULL, reserved = NULL, available = NULL, version = $2, updated_at = $3 WHERE id = $1', [id, after.version, at])
    await tx.query('DELETE FROM stock_levels WHERE plant_id = $1', [id])
    versioned(tx, plant, after, fieldChanges(plant, after), at, actor)
    return after
  }

  const known = async (id: number): Promise<boolean> => (await session.run((c) =>
    c.query('SELECT 1 FROM plants WHERE id = $1 UNION ALL SELECT 1 FROM trash WHERE id = $1', [id]))).rowCount! > 0

  return {
    ...postgresReservations({ session, work, now, idempotencyTtlMs }),
    locations: async () => (await session.run((c) => c.query<{ name: string, created_at: number }>('SELECT name, created_at FROM locations ORDER BY name'))).rows
      .map((r): Location => ({ name: r.name, createdAt: timestamp(Number(r.created_at)) })),
    addLocation: async (name) => await work(async (tx) => {
      const at = now()
      const { rowCount } = await tx.query('INSERT INTO locations (name, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING', [name, at])
      if (rowCount === 0) throw new LocationNameTaken(name)
      return { name, createdAt: timestamp(at) }
    }),
    removeLocation: async (name) => {
      await work(async (tx) => {
        const { rowCount } = await tx.query('SELECT 1 FROM locations WHERE name = $1 FOR UPDATE', [name])
        if (rowCount === 0) throw new LocationNotFound(name)
        const { rowCount: held } = await tx.query('SELECT 1 FROM stock_levels WHERE location = $1 AND (on_hand <> 0 OR reserved <> 0) LIMIT 1', [name])
        if (held! > 0) throw new LocationNotEmpty(name)
        await tx.query('DELETE FROM stock_levels WHERE location = $1', [name])
        await tx.query('DELETE FROM locations WHERE name = $1', [name])
      })
    },
    levels: async (id) => {
      if (!await known(id)) return undefined
      const { rows } = await session.run((c) => c.query<{ location: string, on_hand: number, reserved: number }>(
        'SELECT location, on_hand, reserved FROM stock_levels WHERE plant_id = $1 ORDER BY location', [id]))
      return rows.map((r): StockLevel => ({ location: r.location, onHand: Number(r.on_hand), reserved: Number(r.reserved), available: Math.max(0, Number(r.on_hand) - Number(r.reserved)) }))
    },
    move: async (id, input, idempotency, expectedVersions, { actor } = ANONYMOUS_WRITE) =>
      await move({ id, input, idempotency: digestedClaim(idempotency), expectedVersions, actor }),
    movements: async (id, before, limit) => {
      if (!await known(id)) return undefined
      const { rows } = await session.run((c) => c.query<MovementRow>(
        'SELECT seq, at, actor, location, delta, reason, reference, on_hand_after FROM stock_movements WHERE plant_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3',
        [id, before ?? Number.MAX_SAFE_INTEGER, limit]))
      return rows.map((r): Movement => ({
        seq: Number(r.seq), at: timestamp(Number(r.at)), actor: r.actor, location: r.location, delta: Number(r.delta), reason: r.reason as Reason, reference: r.reference, onHandAfter: Number(r.on_hand_after)
      }))
    },
    untrack: async (id, expectedVersions, { actor } = ANONYMOUS_WRITE) => await work((tx) => untrack(tx, id, expectedVersions, actor))
  }
}
