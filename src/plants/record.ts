import { Type, type Static } from '@sinclair/typebox'
import type { FastifyReply } from 'fastify'
import { MAX_PHOTOS } from '../catalogue/photo.js'
import { toRecord, type StoredPlant } from '../catalogue/plant.js'
import { component, ref } from '../http/schemas/components.js'
import { etagOf } from '../http/resources/etag.js'

// The stored plant on the wire, its photos included, and how a route sends one: what the plant,
// photo, history and trash routes answer, and what the feed and webhooks carry. Its type is the
// catalogue's (catalogue/plant.ts), checked at compile time (schema-types.ts).

/** The OpenAPI tag of every plant operation. */
export const tags = ['plant']

export const Id = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'Server-assigned identifier; increasing, never reused.' })
const Time = Type.String({ description: 'RFC 3339, UTC, with milliseconds; set by the service (read-only).' })

export const Photo = component('Photo', Type.Object({
  id: Type.String({ description: 'The photo\'s id within its plant (for DELETE /v3/plant/{id}/photos/{photoId}).' }),
  width: Type.Integer({ description: 'Width of the full picture, upright, in pixels.' }),
  height: Type.Integer({ description: 'Height of the full picture, upright, in pixels.' }),
  urls: Type.Object({
    thumb: Type.String({ description: 'WebP that fits 256×256.' }),
    display: Type.String({ description: 'WebP that fits 1280×1280.' }),
    full: Type.String({ description: 'The picture as uploaded (same format), turned upright, every metadata block removed.' })
  }, { description: 'Immutable URLs: each file name is derived from its content (SHA-256), so they may be cached for ever.' })
}, { description: 'A photo of the plant.' }))
export type Photo = Static<typeof Photo>

export const Photos = Type.Array(ref(Photo), {
  maxItems: MAX_PHOTOS,
  description: `The plant's photos in the order added; the first is the cover. At most ${MAX_PHOTOS}. Read-only: sent in a plant body, it is invalid input.`
})

export const StockTotals = component('StockTotals', Type.Object({
  onHand: Type.Integer({ minimum: 0, description: 'Units held over every location.' }),
  reserved: Type.Integer({ minimum: 0, description: 'Units held for open reservations.' }),
  available: Type.Integer({ minimum: 0, description: 'onHand − reserved, never below 0: what may be sold.' })
}, { description: 'A tracked plant\'s stock, the totals over the store\'s locations.' }))

export const Plant = component('Plant', Type.Object({
  id: Id,
  name: Type.String(),
  category: Type.Union([Type.String(), Type.Null()]),
  tags: Type.Array(Type.String()),
  status: Type.String({ description: 'Status of the plant: available, pending or sold today; any string in answers, so a client should accept one it does not know.' }),
  description: Type.Union([Type.String(), Type.Null()]),
  price: Type.Union([Type.String({ description: 'Always 2 fraction digits ("12.50").' }), Type.Null()]),
  sku: Type.Union([Type.String(), Type.Null()]),
  barcode: Type.Union([Type.String(), Type.Null()]),
  stock: Type.Union([ref(StockTotals), Type.Null()], {
    description: 'Null when the plant does not track stock (its status is set by hand). A plant tracks stock from its first movement (POST /v3/plant/{id}/stock/movements). Read-only: sent in a plant body, it is invalid input.'
  }),
  lowStockAt: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Stock is low at or below this many available (lowStock=true); null: never low.' }),
  photos: Photos,
  createdAt: Time,
  updatedAt: { ...Time, description: 'RFC 3339, UTC, with milliseconds; moves with every version of the plant (photo changes included).' },
  version: Type.Integer({
    minimum: 1,
    description: 'The plant\'s version, the one its ETag `"<id>.<version>"` names: one more with every change (photos included). ' +
      'Send `"<id>.<version>"` as If-Match, or as a batch operation\'s ifMatch, to write only over this version. Read-only: a body that holds it is refused (400).'
  })
}, { description: 'A stored plant.' }))
export type Plant = Static<typeof Plant>

export function sendPlant (reply: FastifyReply, plant: StoredPlant): Plant {
  reply.header('etag', etagOf(plant)).header('location', `/v3/plant/${plant.id}`)
  return toRecord(plant)
}
