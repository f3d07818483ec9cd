import type { PlantStatus, StockTotals } from './plant.js'

// Stock in the catalogue's own words: locations, levels, movements and their rules (what a
// movement may do, how the totals follow, how the status follows the stock). Both engines apply a
// movement through applyMovement, inside the one write that checks and applies it.

/** Every catalogue has this location; a movement that names none uses it. */
export const MAIN_LOCATION = 'main'
export const LOCATION_NAME_PATTERN = '^[a-z0-9-]{1,64}$'

export const REASONS = ['received', 'sale', 'return', 'damaged', 'count', 'correction'] as const
export type Reason = typeof REASONS[number]
/** What a till (scope `sell`) may record; every reason needs `write`. */
export const SELL_REASONS: readonly Reason[] = ['sale', 'return']

/** The sign a delta must have for its reason (count sets, correction goes either way). */
const SIGN: Partial<Record<Reason, 1 | -1>> = { received: 1, return: 1, sale: -1, damaged: -1 }

/** A movement as asked for: a delta with its reason, or a count (compare and set on the location's onHand). */
export type MovementInput =
  | { delta: number, reason: Exclude<Reason, 'count'>, location?: string, reference?: string }
  | { set: number, expected?: number, reason: 'count', location?: string, reference?: string }

export interface Location { name: string, createdAt: string }
/** One location's level of one plant. */
export interface StockLevel { location: string, onHand: number, reserved: number, available: number }
/** A movement as the ledger keeps it. */
export interface Movement {
  seq: number
  at: string
  actor: string
  location: string
  delta: number
  reason: Reason
  reference: string | null
  onHandAfter: number
}

/** What a movement answers: the movement, the location's and the plant's new counts, and the plant's new version (its ETag). */
export interface MovementResult {
  movement: Movement
  level: StockLevel
  stock: StockTotals
  id: number
  version: number
  /** True when an earlier request with the same Idempotency-Key made the movement. */
  replayed: boolean
}

export class LocationNotFound extends Error {
  constructor (readonly location: string) { super(`no location named ${location}`) }
}
export class LocationNameTaken extends Error {
  constructor (readonly location: string) { super(`a location named ${location} exists`) }
}
export class LocationNotEmpty extends Error {
  constructor (readonly location: string) { super(`location ${location} holds stock`) }
}
/** A movement that would take the location's available below 0: nothing applied. */
export class InsufficientStock extends Error {
  /** The plant's other places with units available, by name: the refusal names them (filled in by the route, after the refusal). */
  elsewhere: Array<{ location: string, available: number }> = []
  /** The plant does not track stock (filled in by the route, after the refusal): said instead of "0 available". */
  untracked = false
  /** `reserved`: what reservations hold at the location, which no movement or count may take. */
  constructor (readonly available: number, readonly location: string, readonly reserved = 0) { super(`only ${available} available at ${location}`) }
}
/** A count whose `expected` is not the location's onHand: nothing applied. */
export class StockChanged extends Error {
  constructor (readonly onHand: number, readonly location: string) { super(`the count at ${location} is ${onHand}`) }
}
/** Stop tracking a plant that still holds stock. */
export class StockHeld extends Error {
  constructor (readonly onHand: number, readonly reserved: number) { super(`the plant holds ${onHand} on hand, ${reserved} reserved`) }
}
/** A delta whose sign its reason does not allow (a sale that adds), or 0. */
export class MovementInvalid extends Error {}

/** A line of a reservation that cannot be held in full: by its index, with what its plant has available at its location. */
export interface ShortLine {
  index: number
  plant: number
  location: string
  quantity: number
  available: number
  /** The plant does not track stock (filled in by the route, after the refusal): said instead of "0 available". */
  untracked?: boolean
  /** The plant's other places with units available (filled in by the route, after the refusal). */
  elsewhere?: Array<{ location: string, available: number }>
}
/** A reservation some of whose lines cannot be held (lines of one plant and location counted together): nothing held. */
export class ReservationShort extends Error {
  constructor (readonly lines: ShortLine[]) { super(`${lines.length} line(s) cannot be held`) }
}
/** A reservation line naming a plant (not live) or a location that does not exist: nothing held. */
export class ReservationLineUnknown extends Error {
  constructor (readonly what: 'plant' | 'location', readonly indexes: number[]) { super(`unknown ${what} in line(s) ${indexes.join(', ')}`) }
}
export class ReservationNotFound extends Error {
  constructor (readonly id: string) { super(`no reservation ${id}`) }
}
/** A reservation already committed, released or expired (or past its expiresAt): nothing applied. */
export class ReservationGone extends Error {
  constructor (readonly id: string, readonly state: string) { super(`reservation ${id} is ${state}`) }
}

/** The reason's rule for a delta: refused with MovementInvalid. */
export function checkDelta (reason: Reason, delta: number): void {
  if (delta === 0) throw new MovementInvalid('a delta of 0 moves nothing')
  const sign = SIGN[reason]
  if (sign !== undefined && Math.sign(delta) !== sign) throw new MovementInvalid(`a ${reason} must ${sign > 0 ? 'add' : 'take'} stock (delta ${sign > 0 ? '> 0' : '< 0'})`)
}

/** What a movement does to a location's level and the plant's totals and status, worked out before anything is written. */
export interface Applied {
  delta: number
  level: StockLevel
  stock: StockTotals
  status: PlantStatus
  /**
   * False for a count that finds the level as it is (a tracked plant, delta 0): the ledger keeps it
   * (who counted, when), but the plant does not change (no new version, change or history entry).
   */
  changes: boolean
}

/**
 * Applies `input` to the location's level (absent: nothing held there yet) and the plant's totals
 * (null: it starts tracking now). Refused: StockChanged (a count's `expected`), InsufficientStock
 * (the location's available below 0), MovementInvalid.
 */
export function applyMovement (input: MovementInput, location: string, level: { onHand: number, reserved: number } | undefined, totals: StockTotals | null, status: PlantStatus): Applied {
  const onHand = level?.onHand ?? 0
  const reserved = level?.reserved ?? 0
  let delta: number
  if ('set' in input) {
    if (input.expected !== undefined && input.expected !== onHand) throw new StockChanged(onHand, location)
    delta = input.set - onHand
  } else {
    checkDelta(input.reason, input.delta)
    delta = input.delta
  }
  const after = onHand + delta
  if (after - reserved < 0 || after < 0) throw new InsufficientStock(Math.max(0, onHand - reserved), location, reserved)
  const before = totals ?? { onHand: 0, reserved: 0, available: 0 }
  const stock = { onHand: before.onHand + delta, reserved: before.reserved, available: Math.max(0, before.onHand + delta - before.reserved) }
  return {
    delta,
    level: { location, onHand: after, reserved, available: after - reserved },
    stock,
    status: statusAfter(status, totals === null ? null : totals.available, stock.available),
    changes: delta !== 0 || totals === null
  }
}

/**
 * Status follows stock at a crossing: to 0 available sets `sold`, above 0 from `sold` sets
 * `available`; `pending` is a hold set by hand and is left alone. Between crossings a status set
 * by hand stands. A plant that starts tracking crosses from nothing.
 */
export function statusAfter (status: PlantStatus, before: number | null, after: number): PlantStatus {
  if (status === 'pending') return status
  if (after === 0 && (before === null || before > 0)) return 'sold'
  if (after > 0 && (before === null || before === 0) && status === 'sold') return 'available'
  return status
}

/** What webhooks may subscribe to beside the feed's kinds of change: a plant crossing into low or no stock. */
export const STOCK_EVENT_KINDS = ['stock.low', 'stock.out'] as const
export type StockEventKind = typeof STOCK_EVENT_KINDS[number]

/**
 * A movement, or a reservation's hold, that crossed into low or no stock, kept on its change's row
 * (the durable feed) for the webhooks.
 */
export interface StockCrossing {
  /** stock.low, stock.out or both (from above lowStockAt straight to 0 crosses both), in that order. */
  events: StockEventKind[]
  /** The movement that crossed; null when a reservation's hold did. */
  movement: Movement | null
  /** The movement's location after it; null for a reservation (its lines may name several). */
  level: StockLevel | null
  /** The reservation whose hold crossed (absent: a movement did). */
  reservation?: string
}

/**
 * The crossings of one movement: into low stock (available from above lowStockAt to at or below
 * it) and into none (available from above 0 to 0). A plant that stays low crosses nothing; one
 * lifted above and taken down again crosses again. As for the status, a plant's first movement
 * crosses from nothing (`before` null): a first count of 0 is out of stock, one at or below
 * lowStockAt is low. Without lowStockAt a plant is never low.
 */
export function stockCrossings (before: StockTotals | null, after: StockTotals, lowStockAt: number | null): StockEventKind[] {
  const events: StockEventKind[] = []
  const low = (stock: StockTotals | null): boolean => stock !== null && lowStockAt !== null && stock.available <= lowStockAt
  if (low(after) && !low(before)) events.push('stock.low')
  if (after.available === 0 && (before === null || before.available > 0)) events.push('stock.out')
  return events
}

/** The most a page of the ledger holds, and the size of a page when none is asked for. */
export const MOVEMENTS_PAGE_MAX = 100
export const MOVEMENTS_PAGE_DEFAULT = 20

/** A stock refusal as plain data: what crosses from the SQLite writer thread to the event loop. */
export type StockRefusal =
  | { error: 'location-not-found' | 'location-name-taken' | 'location-not-empty', location: string }
  | { error: 'insufficient-stock', available: number, location: string, reserved: number, elsewhere?: Array<{ location: string, available: number }>, untracked?: boolean }
  | { error: 'stock-changed', onHand: number, location: string }
  | { error: 'stock-held', onHand: number, reserved: number }
  | { error: 'movement-invalid', message: string }
  | { error: 'reservation-short', lines: ShortLine[] }
  | { error: 'reservation-line-unknown', what: 'plant' | 'location', indexes: number[] }
  | { error: 'reservation-not-found', id: string }
  | { error: 'reservation-gone', id: string, state: string }

/** The refusal of a stock error, or undefined for any other error. */
export function stockRefusalOf (error: unknown): StockRefusal | undefined {
  if (error instanceof LocationNotFound) return { error: 'location-not-found', location: error.location }
  if (error instanceof LocationNameTaken) return { error: 'location-name-taken', location: error.location }
  if (error instanceof LocationNotEmpty) return { error: 'location-not-empty', location: error.location }
  if (error instanceof InsufficientStock) return { error: 'insufficient-stock', available: error.available, location: error.location, reserved: error.reserved, elsewhere: error.elsewhere, untracked: error.untracked }
  if (error instanceof StockChanged) return { error: 'stock-changed', onHand: error.onHand, location: error.location }
  if (error instanceof StockHeld) return { error: 'stock-held', onHand: error.onHand, reserved: error.reserved }
  if (error instanceof MovementInvalid) return { error: 'movement-invalid', message: error.message }
  if (error instanceof ReservationShort) return { error: 'reservation-short', lines: error.lines }
  if (error instanceof ReservationLineUnknown) return { error: 'reservation-line-unknown', what: error.what, indexes: error.indexes }
  if (error instanceof ReservationNotFound) return { error: 'reservation-not-found', id: error.id }
  if (error instanceof ReservationGone) return { error: 'reservation-gone', id: error.id, state: error.state }
  return undefined
}

/** The error a refusal stands for. */
export function stockErrorOf (r: StockRefusal): Error {
  switch (r.error) {
    case 'location-not-found': return new LocationNotFound(r.location)
    case 'location-name-taken': return new LocationNameTaken(r.location)
    case 'location-not-empty': return new LocationNotEmpty(r.location)
    case 'insufficient-stock': return new InsufficientStock(r.available, r.location, r.reserved)
    case 'stock-changed': return new StockChanged(r.onHand, r.location)
    case 'stock-held': return new StockHeld(r.onHand, r.reserved)
    case 'movement-invalid': return new MovementInvalid(r.message)
    case 'reservation-short': return new ReservationShort(r.lines)
    case 'reservation-line-unknown': return new ReservationLineUnknown(r.what, r.indexes)
    case 'reservation-not-found': return new ReservationNotFound(r.id)
    case 'reservation-gone': return new ReservationGone(r.id, r.state)
  }
}
