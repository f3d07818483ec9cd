import type { WriteMeta } from '../catalogue/changes.js'
import type { StoredPlant } from '../catalogue/plant.js'
import type { Location, Movement, MovementInput, MovementResult, StockLevel } from '../catalogue/stock.js'
import type { IdempotencyClaim } from './idempotency.js'
import type { ReservationStore } from './reservation-store.js'

// Stock behind the store (catalogue/stock.ts), exposed by PlantStore as `stock`. Each movement is one
// write that checks and applies, in the same transaction as the plant's new totals, version, feed
// change and history entry.

export interface StockStore extends ReservationStore {
  locations (): Promise<Location[]>
  /** Refused: LocationNameTaken. */
  addLocation (name: string): Promise<Location>
  /** Refused: LocationNotFound, LocationNotEmpty (a plant, live or in the trash, holds stock there). */
  removeLocation (name: string): Promise<void>
  /** The plant's level at each location it has held stock at; undefined when no plant has the id. */
  levels (id: number): Promise<StockLevel[] | undefined>
  /**
   * Applies a movement (catalogue/stock.ts applyMovement): the plant's new version, one 'updated'
   * change, a history entry (none of the three for a count that finds the level as it is: the
   * ledger keeps it, the answer carries the version as it was). Refused: PlantNotFound, VersionMismatch, LocationNotFound,
   * InsufficientStock, StockChanged, MovementInvalid, IdempotencyKeyReused. A claim used before
   * with the same request answers the first result, `replayed`, and moves nothing.
   */
  move (id: number, input: MovementInput, idempotency?: IdempotencyClaim, expectedVersions?: number[], meta?: WriteMeta): Promise<MovementResult>
  /** The ledger, newest first, of the movements below `before`; undefined when no plant has the id. */
  movements (id: number, before: number | undefined, limit: number): Promise<Movement[] | undefined>
  /** Stops tracking (stock null, the levels gone): refused with StockHeld unless it holds none; PlantNotFound, VersionMismatch. */
  untrack (id: number, expectedVersions?: number[], meta?: WriteMeta): Promise<StoredPlant>
}
