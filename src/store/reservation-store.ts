import type { WriteMeta } from '../catalogue/changes.js'
import type { CommitResult, NewReservation, Reservation, ReservationResult } from '../catalogue/reservation.js'
import type { IdempotencyClaim } from './idempotency.js'

// Reservations behind the store (catalogue/reservation.ts), part of `stock`. Every step is one write
// that checks and applies: the plants it touches each get a new version, one 'updated' change and a
// history entry, in the same transaction as the reservation's new state.

export interface ReservationStore {
  /**
   * Holds every line or none. Refused: ReservationShort (every short line), ReservationLineUnknown,
   * IdempotencyKeyReused. A claim used before with the same request answers the first result, `replayed`.
   */
  reserve (input: NewReservation, idempotency?: IdempotencyClaim, meta?: WriteMeta): Promise<ReservationResult>
  /** Undefined when there is none with the id (or it ended longer ago than it is kept). */
  reservation (id: string): Promise<Reservation | undefined>
  /** Each line a sale with the reservation as reference. Refused: ReservationNotFound, ReservationGone, ReservationLineUnknown (a plant gone to the trash), IdempotencyKeyReused. */
  commitReservation (id: string, idempotency?: IdempotencyClaim, meta?: WriteMeta): Promise<CommitResult>
  /** Lets the units go. Refused: ReservationNotFound, ReservationGone. */
  releaseReservation (id: string, meta?: WriteMeta): Promise<void>
  /** Whether any held reservation is past its expiresAt (a read: the expirer writes only when there is work). */
  overdue (): Promise<boolean>
  /** Releases up to `limit` held reservations whose expiresAt has passed (by the store's clock), as expired; answers how many (and forgets long-ended ones). */
  expireReservations (limit: number): Promise<number>
  /** Takes or renews the expirer's lease for `owner` for `leaseMs` from now (the store's clock): true when `owner` holds it now. */
  leaseExpirer (owner: string, leaseMs: number): Promise<boolean>
  /** Gives the expirer's lease up (a clean stop): another instance may take it at once. */
  releaseExpirer (owner: string): Promise<void>
}
