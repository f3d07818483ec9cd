import { Type } from '@sinclair/typebox'
import { RESERVATION_LINES_MAX, RESERVATION_STATES, TTL_SECONDS_MAX, TTL_SECONDS_MIN } from '../catalogue/reservation.js'
import { LOCATION_NAME_PATTERN } from '../catalogue/stock.js'
import { component, ref } from '../http/schemas/components.js'
import { StockTotals } from '../plants/record.js'
import { Movement, StockLevel } from './schemas.js'

// Reservations on the wire: the only source of their validation, types and document
// (catalogue/reservation.ts holds the rules).

const Time = Type.String({ description: 'RFC 3339, UTC, with milliseconds.' })
const PlantId = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The plant\'s id.' })
const Quantity = Type.Integer({ minimum: 1, maximum: 1_000_000_000, description: 'Units held (≥ 1).' })

export const NewReservationLine = component('NewReservationLine', Type.Object({
  plant: PlantId,
  quantity: Quantity,
  location: Type.Optional(Type.String({ pattern: LOCATION_NAME_PATTERN, 'x-pattern-message': 'must be 1–64 characters of a–z, 0–9 and -', description: 'Where the units are held; absent: `main`.' }))
}, { additionalProperties: false, description: 'A line of a reservation as asked for.' }))

export const NewReservation = component('NewReservation', Type.Object({
  lines: Type.Array(ref(NewReservationLine), { minItems: 1, maxItems: RESERVATION_LINES_MAX, description: `1–${RESERVATION_LINES_MAX} lines; lines of one plant and location count together.` }),
  ttlSeconds: Type.Integer({ minimum: TTL_SECONDS_MIN, maximum: TTL_SECONDS_MAX, description: `How long the units are held before they are released by themselves: ${TTL_SECONDS_MIN}–${TTL_SECONDS_MAX} seconds.` })
}, { additionalProperties: false, description: 'What a checkout holds: every line or none.' }))

export const ReservationLine = component('ReservationLine', Type.Object({
  plant: PlantId,
  quantity: Quantity,
  location: Type.String({ description: 'Where the units are held.' })
}, { description: 'A line as held.' }))

export const Reservation = component('Reservation', Type.Object({
  id: Type.String({ description: 'The reservation\'s id (its address is /v3/reservations/{id}).' }),
  state: Type.Unsafe<typeof RESERVATION_STATES[number]>({
    type: 'string',
    enum: [...RESERVATION_STATES],
    description: 'held (the units are held), committed (sold), released, or expired (past expiresAt: its units are let go by themselves).'
  }),
  lines: Type.Array(ref(ReservationLine)),
  createdAt: Time,
  expiresAt: { ...Time, description: 'When a held reservation is released by itself.' },
  endedAt: Type.Union([Time, Type.Null()], { description: 'When it was committed, released or expired; null while held.' }),
  actor: Type.String({ description: 'Who made it: the API key\'s name, `anonymous` without one.' })
}, { description: 'A reservation: units of plants held for a checkout.' }))

export const PlantCounts = component('PlantCounts', Type.Object({
  id: PlantId,
  version: Type.Integer({ minimum: 1, description: 'The plant\'s new version (one a plant, however many lines it has): its ETag is `"<id>.<version>"`, for the next If-Match.' }),
  stock: ref(StockTotals)
}, { description: 'A plant\'s new version and stock totals after a reservation\'s step.' }))

const plantsAfter = (step: string) => Type.Array(ref(PlantCounts), { description: `Each plant's new version and totals after the ${step}, by id (what is left, and the version to send as If-Match next).` })

export const HeldReservation = component('HeldReservation', Type.Object({
  ...Reservation.properties,
  plants: plantsAfter('hold')
}, { description: 'A reservation just held, with each plant\'s new counts (an idempotent replay answers those of the first hold).' }))

export const ReservationParams = Type.Object({
  id: Type.String({ pattern: '^[A-Za-z0-9-]{1,64}$', 'x-pattern-message': 'must be a reservation id', description: 'The reservation\'s id.' })
})

export const ReservationSale = component('ReservationSale', Type.Object({
  line: Type.Integer({ minimum: 0, description: 'The line\'s index in the reservation.' }),
  plant: PlantId,
  movement: ref(Movement),
  level: ref(StockLevel)
}, { description: 'A line turned into a sale: the ledger\'s movement and the location\'s counts after it.' }))

export const CommitResult = component('ReservationCommit', Type.Object({
  reservation: ref(Reservation),
  sales: Type.Array(ref(ReservationSale), { description: 'One sale a line, in the lines\' order.' }),
  plants: plantsAfter('commit')
}, { description: 'A committed reservation: each line a sale with the reservation\'s id as reference.' }))
