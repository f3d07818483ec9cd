import type { MovementAbout } from './history.js'
import type { PlantStatus, StockTotals, StoredPlant } from './plant.js'
import { timestamp } from './price-sku-barcode.js'
import { MAIN_LOCATION, ReservationShort, statusAfter, type Movement, type ShortLine, type StockLevel } from './stock.js'

// Reservations in the catalogue's own words: a checkout holds units of plants for a while, then
// commits them (each line a sale) or lets them go. Both engines work out each step with these
// rules inside the one write that checks and applies it.

export const RESERVATION_LINES_MAX = 100
export const TTL_SECONDS_MIN = 30
export const TTL_SECONDS_MAX = 86_400

export const RESERVATION_STATES = ['held', 'committed', 'released', 'expired'] as const
export type ReservationState = typeof RESERVATION_STATES[number]

/** A line as held: the location filled in (`main` when the request named none). */
export interface ReservationLine { plant: number, quantity: number, location: string }

/** A reservation as asked for; `id` is chosen by the caller (the route), so a replay answers the first one's. */
export interface NewReservation { id: string, lines: Array<{ plant: number, quantity: number, location?: string }>, ttlSeconds: number }

export interface Reservation {
  id: string
  state: ReservationState
  lines: ReservationLine[]
  createdAt: string
  expiresAt: string
  /** When it was committed, released or expired; null while held. */
  endedAt: string | null
  actor: string
}

/** A plant's version and totals after a reservation's step: what a till shows as left, and the version its next If-Match names. */
export interface PlantCounts { id: number, version: number, stock: StockTotals }

/** A hold's answer: the reservation, and each plant's new counts (one version a plant, however many lines it has). */
export interface ReservationResult { reservation: Reservation, plants: PlantCounts[], replayed: boolean }

/** A commit's answer: the reservation (committed), each line's sale and each plant's new counts. */
export interface CommitResult {
  reservation: Reservation
  sales: Array<{ line: number, plant: number, movement: Movement, level: StockLevel }>
  plants: PlantCounts[]
  replayed: boolean
}

/** A reservation as both engines store it (times in epoch ms, lines as JSON). */
export interface ReservationRow { id: string, state: string, lines: string, created_at: number, expires_at: number, ended_at: number | null, actor: string }
export const RESERVATION_COLUMNS = 'id, state, lines, created_at, expires_at, ended_at, actor'

export const linesOf = (input: NewReservation['lines']): ReservationLine[] =>
  input.map((l) => ({ plant: l.plant, quantity: l.quantity, location: l.location ?? MAIN_LOCATION }))

/**
 * The reservation a reader sees: a held one past its expiresAt shows as expired (the expirer
 * releases its units shortly; a commit or a release of it is already refused).
 */
export function reservationOf (row: ReservationRow, now: number): Reservation {
  const expiresAt = Number(row.expires_at)
  const state = row.state === 'held' && now >= expiresAt ? 'expired' : row.state as ReservationState
  return {
    id: row.id,
    state,
    lines: JSON.parse(row.lines) as ReservationLine[],
    createdAt: timestamp(Number(row.created_at)),
    expiresAt: timestamp(expiresAt),
    endedAt: row.ended_at === null ? null : timestamp(Number(row.ended_at)),
    actor: row.actor
  }
}

/** The plants the lines name, each once, by id: the order both engines lock them in. */
export const plantsOf = (lines: ReservationLine[]): number[] => [...new Set(lines.map((l) => l.plant))].sort((a, b) => a - b)

/** The units the lines ask of each plant at each location. */
export function unitsByPlace (lines: ReservationLine[]): Map<number, Map<string, number>> {
  const places = new Map<number, Map<string, number>>()
  for (const l of lines) {
    const at = places.get(l.plant) ?? new Map<string, number>()
    at.set(l.location, (at.get(l.location) ?? 0) + l.quantity)
    places.set(l.plant, at)
  }
  return places
}

/**
 * What a step's history entry says beside its reservation: the place, when the plant's lines name
 * one (a checkout's usual case: "Sold 2 at greenhouse"); lines at several places name each, with its units.
 */
export function stepAbout (reservation: string, places: Map<string, number>): MovementAbout {
  if (places.size === 1) return { reservation, location: [...places.keys()][0] }
  return { reservation, places: [...places].map(([location, quantity]) => ({ location, quantity })) }
}

/**
 * All or nothing: every line whose plant and location cannot give what all the lines of that plant
 * and location ask together is named (refused with ReservationShort), or none is.
 */
export function checkHold (lines: ReservationLine[], available: (plant: number, location: string) => number): void {
  const asked = unitsByPlace(lines)
  const short: ShortLine[] = []
  lines.forEach((l, index) => {
    const has = available(l.plant, l.location)
    if (asked.get(l.plant)!.get(l.location)! > has) short.push({ index, plant: l.plant, location: l.location, quantity: l.quantity, available: has })
  })
  if (short.length > 0) throw new ReservationShort(short)
}

export type Step = 'hold' | 'release' | 'commit'

/**
 * A plant's totals and status after a step of `units`: holding raises reserved (available drops,
 * status follows), releasing lowers it, committing takes the units off onHand and reserved alike
 * (available, and so the status, stay).
 */
export function totalsAfter (step: Step, stock: StockTotals, status: PlantStatus, units: number): { stock: StockTotals, status: PlantStatus } {
  const onHand = stock.onHand - (step === 'commit' ? units : 0)
  const reserved = stock.reserved + (step === 'hold' ? units : -units)
  const after = { onHand, reserved, available: Math.max(0, onHand - reserved) }
  return { stock: after, status: step === 'commit' ? status : statusAfter(status, stock.available, after.available) }
}

/** A plant's counts as a step's answer gives them. */
export const countsOf = (plant: StoredPlant): PlantCounts => ({ id: plant.id, version: plant.version, stock: plant.stock! })

/** The plant's new version after a step of `units` (its stock tracked: a held plant always tracks it). */
export function plantAfter (step: Step, plant: StoredPlant, units: number, now: number): StoredPlant {
  const { stock, status } = totalsAfter(step, plant.stock ?? { onHand: 0, reserved: 0, available: 0 }, plant.status as PlantStatus, units)
  return { ...plant, stock, status, version: plant.version + 1, updatedAt: timestamp(now) }
}

/** Who an expiry is by (the expirer's, or a release that finds the reservation past its expiresAt): the service, not a key. */
export const EXPIRY_ACTOR = 'expiry'

/** The history's reason for each step (a commit's versions are sales, as its ledger rows are). */
export const STEP_REASONS = { hold: 'reserve', release: 'release', expire: 'expire', commit: 'sale' } as const

/** How long an ended reservation is kept for reads (after it, a read or a commit of it is 404). */
export const ENDED_KEPT_MS = 30 * 86_400_000
