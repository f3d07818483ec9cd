import { Type, type Static } from '@sinclair/typebox'
import { LOCATION_NAME_PATTERN, MOVEMENTS_PAGE_DEFAULT, MOVEMENTS_PAGE_MAX, REASONS } from '../catalogue/stock.js'
import { component, ref } from '../http/schemas/components.js'
import { StockTotals } from '../plants/record.js'

// Stock on the wire: locations, levels, movements and the ledger. The only source of their
// validation, types and document (catalogue/stock.ts holds the rules).

const LocationName = Type.String({
  pattern: LOCATION_NAME_PATTERN,
  'x-pattern-message': 'must be 1–64 characters of a–z, 0–9 and -',
  description: 'A location\'s name: 1–64 characters of a–z 0–9 -. `main` always exists.'
})
const Time = Type.String({ description: 'RFC 3339, UTC, with milliseconds.' })
const Count = Type.Integer({ minimum: 0, maximum: 1_000_000_000 })

export const Location = component('Location', Type.Object({
  name: LocationName,
  createdAt: Time
}, { description: 'A place that holds stock (a shop, a greenhouse).' }))

export const LocationList = component('LocationList', Type.Object({
  items: Type.Array(ref(Location), { description: 'Every location, by name; `main` among them.' })
}))

export const NewLocation = component('NewLocation', Type.Object({ name: LocationName }, { additionalProperties: false, description: 'The location to add.' }))
export const LocationParams = Type.Object({ name: LocationName })

export const StockLevel = component('StockLevel', Type.Object({
  location: Type.String(),
  onHand: Type.Integer({ minimum: 0 }),
  reserved: Type.Integer({ minimum: 0 }),
  available: Type.Integer({ minimum: 0, description: 'onHand − reserved at this location.' })
}, { description: 'A plant\'s stock at one location.' }))

export const StockLevels = component('StockLevels', Type.Object({
  items: Type.Array(ref(StockLevel), { description: 'Each location the plant has held stock at, by name.' })
}))

const Reference = Type.String({ minLength: 1, maxLength: 200, description: 'Free text naming what the movement belongs to (an order, a delivery note).' })
const Where = Type.Optional({ ...LocationName, description: 'The location moved at; absent: `main`.' })

export const MovementBody = component('MovementBody', Type.Union([
  Type.Object({
    delta: Type.Integer({ minimum: -1_000_000_000, maximum: 1_000_000_000, description: 'Units added (> 0) or taken (< 0); never 0. received and return add; sale and damaged take; correction either.' }),
    reason: Type.Unsafe<'received' | 'sale' | 'return' | 'damaged' | 'correction'>({ type: 'string', enum: REASONS.filter((r) => r !== 'count') }),
    location: Where,
    reference: Type.Optional(Reference)
  }, { additionalProperties: false, title: 'Delta' }),
  Type.Object({
    set: { ...Count, description: 'The count: the location\'s onHand becomes this.' },
    expected: Type.Optional({ ...Count, description: 'The onHand the counter started from: another count → 409 stock-changed naming the current one, nothing applied.' }),
    reason: Type.Literal('count'),
    location: Where,
    reference: Type.Optional(Reference)
  }, { additionalProperties: false, title: 'Count' })
], { description: 'A delta with its reason, or a count (compare and set on the location\'s onHand): one or the other, a body with both delta and set is 400.' }))
export type MovementBody = Static<typeof MovementBody>

export const Movement = component('Movement', Type.Object({
  seq: Type.Integer({ minimum: 1, description: 'The ledger\'s order: higher is newer.' }),
  at: Time,
  actor: Type.String({ description: 'Who made it: the API key\'s name, `anonymous` without one.' }),
  location: Type.String(),
  delta: Type.Integer(),
  reason: Type.Unsafe<string>({ type: 'string', enum: [...REASONS] }),
  reference: Type.Union([Type.String(), Type.Null()]),
  onHandAfter: Type.Integer({ minimum: 0, description: 'The location\'s onHand after it.' })
}, { description: 'One movement of the ledger.' }))

export const MovementResult = component('MovementResult', Type.Object({
  movement: ref(Movement),
  level: ref(StockLevel),
  stock: ref(StockTotals),
  id: Type.Integer({ minimum: 1, description: 'The plant.' }),
  version: Type.Integer({ minimum: 1, description: 'The plant\'s new version (its ETag `"<id>.<version>"`, also in the ETag header).' })
}, { description: 'The movement applied, the location\'s and the plant\'s new counts.' }))

export const MovementPage = component('MovementPage', Type.Object({
  items: Type.Array(ref(Movement), { description: 'Newest first.' }),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next (older) page; null on the last page.' })
}))

export const MovementQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MOVEMENTS_PAGE_MAX, default: MOVEMENTS_PAGE_DEFAULT, description: `Movements a page: 1–${MOVEMENTS_PAGE_MAX}, default ${MOVEMENTS_PAGE_DEFAULT}.` })),
  cursor: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,15}$', 'x-pattern-message': 'must be the nextCursor of the previous page', description: 'The nextCursor of the previous page.' }))
}, { additionalProperties: false })
