import { Type, type Static } from '@sinclair/typebox'
import { MAX_PHOTOS } from '../catalogue/photo.js'
import { component } from '../http/schemas/components.js'

// The photo resource on the wire: the upload limits and the order of a plant's pictures (the
// photo record is plants/record.ts's, as part of the plant's). The record, its files
// and the limit on how many are the catalogue's (catalogue/photo.ts).

/** The largest upload accepted (the rest of the API keeps its 64 KiB). */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024
/** Pictures with more pixels are refused from their header, before they are decoded. */
export const MAX_PIXELS = 50_000_000
export const UPLOAD_TYPES = ['image/jpeg', 'image/png', 'image/webp'] as const
export type UploadType = typeof UPLOAD_TYPES[number]

export const PhotoParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  photoId: Type.String({ maxLength: 64 })
})

export const FileParams = Type.Object({
  file: Type.String({ maxLength: 128, description: 'A file name from a photo\'s urls.' })
})

export const PhotoOrder = component('PhotoOrder', Type.Object({
  order: Type.Array(Type.String({ maxLength: 64 }), {
    maxItems: MAX_PHOTOS,
    description: 'Every photo id of the plant, each once, in the new order: the first is the cover.'
  })
}, { additionalProperties: false, description: 'A new order of a plant\'s photos.' }))
export type PhotoOrder = Static<typeof PhotoOrder>
