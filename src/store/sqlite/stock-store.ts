import type Database from 'better-sqlite3'
import { ANONYMOUS_WRITE } from '../../catalogue/changes.js'
import type { StoredPlant } from '../../catalogue/plant.js'
import { timestamp } from '../../catalogue/price-sku-barcode.js'
import type { Location, Movement, MovementResult, Reason, StockLevel } from '../../catalogue/stock.js'
import type { StockStore } from '../stock-store.js'
import type { StockWriteOp } from './stock-writes.js'
import { sqliteReservations } from './reservation-store.js'
import { ledgerReader } from './stock-ledger.js'
import { levelsSql } from './stock-migration.js'

// The SQLite store's stock (store/stock-store.ts): writes through the group commit (stock-writes.ts),
// reads on the store's read snapshot of the turn.

export function sqliteStockStore (db: Database.Database, read: <T>(fn: () => T) => T, write: <T>(op: StockWriteOp) => Promise<T>, now: () => number): StockStore {
  const s = {
    locations: db.prepare<[], { name: string, created_at: number }>('SELECT name, created_at FROM locations ORDER BY name'),
    known: db.prepare<[number, number], number>('SELECT 1 FROM plants WHERE id = ? UNION ALL SELECT 1 FROM trash WHERE id = ?').pluck(),
    // Main's level is on the plant's row, the others in stock_levels (stock-migration.ts levelsSql).
    levels: db.prepare<[{ id: number }], { location: string, on_hand: number, reserved: number }>(levelsSql('= @id'))
  }
  // The ledger is a chain per plant, walked from the plant's newest movement (stock-ledger.ts).
  const ledger = ledgerReader(db)
  return {
    ...sqliteReservations(db, read, write, now),
    locations: async () => read(() => s.locations.all()).map((r): Location => ({ name: r.name, createdAt: timestamp(r.created_at) })),
    addLocation: async (name) => await write<Location>({ kind: 'location-add', name, now: now(), actor: ANONYMOUS_WRITE.actor }),
    removeLocation: async (name) => { await write<undefined>({ kind: 'location-remove', name, now: now(), actor: ANONYMOUS_WRITE.actor }) },
    levels: async (id) => read(() => {
      if (s.known.get(id, id) === undefined) return undefined
      return s.levels.all({ id }).map((r): StockLevel => ({ location: r.location, onHand: r.on_hand, reserved: r.reserved, available: Math.max(0, r.on_hand - r.reserved) }))
    }),
    // The write's own promise, not one wrapped in an async function's: a sale is a till's hot path,
    // and each wrapper is promise turns on the event loop (write() never throws, it rejects).
    move: (id, input, idempotency, expectedVersions, { actor } = ANONYMOUS_WRITE) =>
      write<MovementResult>({ kind: 'stock-move', id, input, idempotency, expectedVersions, now: now(), actor }),
    movements: async (id, before, limit) => read(() => ledger(id, before, limit)?.map((r): Movement => ({
      seq: r.seq, at: timestamp(r.at), actor: r.actor, location: r.location, delta: r.delta, reason: r.reason as Reason, reference: r.reference, onHandAfter: r.on_hand_after
    }))),
    untrack: async (id, expectedVersions, { actor } = ANONYMOUS_WRITE) =>
      await write<StoredPlant>({ kind: 'stock-untrack', id, expectedVersions, now: now(), actor })
  }
}
