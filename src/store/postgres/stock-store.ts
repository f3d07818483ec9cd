import { ANONYMOUS_WRITE } from '../../catalogue/changes.js'
import { IdempotencyKeyReused, PlantNotFound, VersionMismatch } from '../../catalogue/errors.js'
import { fieldChanges, movementChanges, type FieldChanges } from '../../catalogue/history.js'
import { toRecord, type PlantStatus, type StoredPlant } from '../../catalogue/plant.js'
import { timestamp } from '../../catalogue/price-sku-barcode.js'
import {
  applyMovement, stockCrossings, LocationNameTaken, LocationNotEmpty, LocationNotFound, MAIN_LOCATION, StockHeld,
  type Location, type Movement, type MovementInput, type MovementResult, type Reason, type StockCrossing, type StockLevel
} from '../../catalogue/stock.js'
import type { IdempotencyClaim } from '../idempotency.js'
import type { StockStore } from '../stock-store.js'
import type { Session } from './connection.js'
import type { Tx } from './group-commit.js'
import { earlierAnswer } from './earlier-answer.js'
import { ROW_COLUMNS, toPlant, type PlantRow } from './group-writes.js'
import { postgresReservations } from './reservations.js'

// The PostgreSQL store's stock (store/stock-store.ts). A movement locks its plant's row first (FOR
// UPDATE), so every movement of one plant, on any instance, checks and applies in turn against the
// committed level: the check and the write are one step under that lock. Refusals are thrown before
// anything is written (the group commit's rule for units of work).

interface Options {
  session: Session
  /** Runs a unit of work in the group commit's transaction (its feed change and counts written with it). */
  work: <T>(work: (tx: Tx) => Promise<T>) => Promise<T>
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

/** The plant's new version: one 'updated' change (with a movement's crossing into low or no stock), its history entry and the status counts. */
function versioned (tx: Tx, before: StoredPlant, after: StoredPlant, changes: FieldChanges, now: number, actor: string, crossing?: StockCrossing): void {
  tx.change('updated', after.id, after.version, toRecord(after), now, actor, changes, undefined, crossing)
  if (after.status !== before.status) {
    tx.count(before.status, -1)
    tx.count(after.status, 1)
  }
}

/**
 * A movement's first round trip: the plant locked (FOR UPDATE: every movement of it, on any
 * instance, waits here for the one before to commit), its location shared (FOR SHARE: a location's
 * delete waits for it), and its Idempotency-Key's earlier use, if any.
 */
const LOCK_MOVE = `WITH p AS (SELECT ${ROW_COLUMNS} FROM plants WHERE id = $1 FOR UPDATE),
  loc AS (SELECT 1 FROM locations WHERE name = $2 FOR SHARE)
SELECT p.*, k.request_hash AS key_hash, k.response AS key_response, k.created_at AS key_at, EXISTS (SELECT 1 FROM loc) AS location_known
FROM (SELECT 1) AS one LEFT JOIN idempotency_keys k ON k.key = $3::text AND k.created_at > $4::bigint LEFT JOIN p ON true`

/** The second: the location's level, and the ledger's next position for the movement's answer. */
const READ_LEVEL = `SELECT l.on_hand, l.reserved, nextval(pg_get_serial_sequence('stock_movements', 'seq')) AS seq
FROM (SELECT 1) AS one LEFT JOIN stock_levels l ON l.plant_id = $1::bigint AND l.location = $2::text`

/**
 * The third, every write of the movement: its key claimed with its answer (a key held by a racing
 * request waits for that request's commit, and then claims nothing), and only if claimed (or none
 * sent), the plant's totals, the location's level and the ledger's row. Answers whether it applied.
 */
const WRITE_MOVE = `WITH claim AS (
  INSERT INTO idempotency_keys AS k (key, request_hash, plant_id, response, created_at)
  SELECT $16::text, $17::text, $1::bigint, $18::text, $7::bigint WHERE $16::text IS NOT NULL
  ON CONFLICT (key) DO UPDATE SET request_hash = EXCLUDED.request_hash, plant_id = EXCLUDED.plant_id, response = EXCLUDED.response, created_at = EXCLUDED.created_at
  WHERE k.created_at <= $19::bigint
  RETURNING 1
), go AS (SELECT 1 WHERE $16::text IS NULL OR EXISTS (SELECT 1 FROM claim)),
plant AS (UPDATE plants SET on_hand = $2::bigint, reserved = $3::bigint, available = $4::bigint, status = $5::text, version = $6::bigint, updated_at = $7::bigint
  WHERE id = $1::bigint AND version <> $6::bigint AND EXISTS (SELECT 1 FROM go)),
level AS (INSERT INTO stock_levels (plant_id, location, on_hand, reserved) SELECT $1::bigint, $8::text, $9::bigint, $10::bigint FROM go
  ON CONFLICT (plant_id, location) DO UPDATE SET on_hand = EXCLUDED.on_hand),
ledger AS (INSERT INTO stock_movements (seq, plant_id, at, actor, location, delta, reason, reference, on_hand_after) OVERRIDING SYSTEM VALUE
  SELECT $11::bigint, $1::bigint, $7::bigint, $12::text, $8::text, $13::bigint, $14::text, $15::text, $9::bigint FROM go)
SELECT EXISTS (SELECT 1 FROM go) AS applied`

export function postgresStockStore ({ session, work, now, idempotencyTtlMs }: Options): StockStore {
  async function move (tx: Tx, id: number, input: MovementInput, claim: IdempotencyClaim | undefined, expectedVersions: number[] | undefined, actor: string): Promise<MovementResult> {
    const at = now()
    const location = input.location ?? MAIN_LOCATION
    const { rows: [row] } = await tx.query<PlantRow & { key_hash: string | null, key_response: string | null, key_at: number | null, location_known: boolean }>(
      LOCK_MOVE, [id, location, claim?.key ?? null, at - idempotencyTtlMs])
    if (claim && row.key_hash !== null) {
      const usedAt = Number(row.key_at)
      if (row.key_hash !== claim.requestHash || row.key_response === null) throw new IdempotencyKeyReused(usedAt, usedAt + idempotencyTtlMs)
      return { ...JSON.parse(row.key_response) as MovementResult, replayed: true }
    }
    if (row.id === null) throw new PlantNotFound()
    const plant = toPlant(row)
    if (expectedVersions && !expectedVersions.includes(plant.version)) throw new VersionMismatch()
    if (!row.location_known) throw new LocationNotFound(location)
    // Read after the plant's lock is held (a statement of its own, so a snapshot taken since): every
    // movement of the plant committed before this one is in it.
    const { rows: [level] } = await tx.query<{ on_hand: number | null, reserved: number | null, seq: number }>(READ_LEVEL, [id, location])
    const applied = applyMovement(input, location, level.on_hand === null ? undefined : { onHand: Number(level.on_hand), reserved: Number(level.reserved) },
      plant.stock, plant.status as PlantStatus)
    // A count that finds the level as it is changes no plant (same version: the plant's UPDATE skips it, no change is made): the ledger keeps it.
    const after: StoredPlant = applied.changes ? { ...plant, stock: applied.stock, status: applied.status, version: plant.version + 1, updatedAt: timestamp(at) } : plant
    const seq = Number(level.seq)
    const result: MovementResult = {
      movement: { seq, at: timestamp(at), actor, location, delta: applied.delta, reason: input.reason, reference: input.reference ?? null, onHandAfter: applied.level.onHand },
      level: applied.level,
      stock: applied.stock,
      id,
      version: after.version,
      replayed: false
    }
    const { rows: [{ applied: written }] } = await tx.query<{ applied: boolean }>(WRITE_MOVE, [
      id, applied.stock.onHand, applied.stock.reserved, applied.stock.available, applied.status, after.version, at,
      location, applied.level.onHand, applied.level.reserved, seq, actor, applied.delta, input.reason, input.reference ?? null,
      claim?.key ?? null, claim?.requestHash ?? null, claim ? JSON.stringify(result) : null, at - idempotencyTtlMs])
    if (!written) {
      // A racing request with the same key committed first (its claim waited here for that commit): its result is the answer.
      const earlier = await earlierAnswer<MovementResult>(tx, claim!, at, idempotencyTtlMs)
      if (earlier) return earlier
      throw new IdempotencyKeyReused(at, at + idempotencyTtlMs)
    }
    const events = stockCrossings(plant.stock, applied.stock, plant.lowStockAt)
    const crossing = events.length > 0 ? { events, movement: result.movement, level: result.level } : undefined
    if (applied.changes) versioned(tx, plant, after, JSON.parse(movementChanges(fieldChanges(plant, after), input.reason, { location })) as FieldChanges, at, actor, crossing)
    tx.count('units_on_hand', applied.delta)
    return result
  }

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
      await work((tx) => move(tx, id, input, idempotency, expectedVersions, actor)),
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
