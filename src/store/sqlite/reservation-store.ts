import type Database from 'better-sqlite3'
import { ANONYMOUS_WRITE } from '../../catalogue/changes.js'
import { ReservationGone } from '../../catalogue/stock.js'
import { EXPIRY_ACTOR, reservationOf, RESERVATION_COLUMNS, type CommitResult, type ReservationResult, type ReservationRow } from '../../catalogue/reservation.js'
import type { ReservationStore } from '../reservation-store.js'
import type { StockWriteOp } from './stock-writes.js'

// The SQLite store's reservations (store/reservation-store.ts): every step through the group
// commit (reservation-writes.ts), reads on the store's read snapshot of the turn.

export function sqliteReservations (db: Database.Database, read: <T>(fn: () => T) => T, write: <T>(op: StockWriteOp) => Promise<T>, now: () => number): ReservationStore {
  const get = db.prepare<[string], ReservationRow>(`SELECT ${RESERVATION_COLUMNS} FROM reservations WHERE id = ?`)
  const overdue = db.prepare<[number], number>("SELECT 1 FROM reservations WHERE state = 'held' AND expires_at <= ? LIMIT 1").pluck()
  return {
    reserve: async (input, idempotency, { actor } = ANONYMOUS_WRITE) => await write<ReservationResult>({ kind: 'reserve', input, idempotency, now: now(), actor }),
    reservation: async (id) => {
      const row = read(() => get.get(id))
      return row === undefined ? undefined : reservationOf(row, now())
    },
    commitReservation: async (id, idempotency, { actor } = ANONYMOUS_WRITE) => await write<CommitResult>({ kind: 'reservation-commit', id, idempotency, now: now(), actor }),
    releaseReservation: async (id, { actor } = ANONYMOUS_WRITE) => {
      // Overdue, it was let go as expired in the write: the answer is that it is gone.
      if (await write<'expired' | undefined>({ kind: 'reservation-release', id, now: now(), actor }) === 'expired') throw new ReservationGone(id, 'expired')
    },
    overdue: async () => read(() => overdue.get(now())) !== undefined,
    expireReservations: async (limit) => await write<number>({ kind: 'reservation-expire', now: now(), limit, actor: EXPIRY_ACTOR }),
    leaseExpirer: async (owner, leaseMs) => {
      const at = now()
      return await write<boolean>({ kind: 'expirer-lease', owner, until: at + leaseMs, now: at })
    },
    releaseExpirer: async (owner) => { await write<undefined>({ kind: 'expirer-release', owner }) }
  }
}
