import { Type, type Static } from '@sinclair/typebox'
import { MAX_PHOTOS } from '../catalogue/photo.js'
import { component, ref } from '../http/components.js'

// The photo resource on the wire: a plant's pictures and the upload limits. The record, its files
// and the limit on how many are the catalogue's (catalogue/photo.ts).

/** The largest upload accepted (the rest of the API keeps its 64 KiB). */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024
/** Pictures with more pixels are refused from their header, before they are decoded. */
export const MAX_PIXELS = 50_000_000
export const UPLOAD_TYPES = ['image/jpeg', 'image/png', 'image/webp'] as const
export type UploadType = typeof UPLOAD_TYPES[number]

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
