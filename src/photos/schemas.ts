import { Type, type Static } from '@sinclair/typebox'
import { component, ref } from '../http/components.js'

// The photo resource: a plant's pictures, the files they are served from, and the limits.

/** At most this many photos a plant (the 13th upload is a 409). */
export const MAX_PHOTOS = 12
/** The largest upload accepted (the rest of the API keeps its 64 KiB). */
export const MAX_UPLOAD_BYTES = 10 * 1024 * 1024
/** Pictures with more pixels are refused from their header, before they are decoded. */
export const MAX_PIXELS = 50_000_000
/** Where the files are served; a photo's urls are this prefix and a file name. */
export const FILES_PATH = '/v3/photos/'

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

/** A file a photo is served from: its content-derived name and bytes. */
export interface PhotoFile { name: string, bytes: Uint8Array }

/** The photo as the store keeps it, with the three files its urls name. */
export interface NewPhoto {
  photo: Photo
  files: PhotoFile[]
  /**
   * The files' memory belongs to them alone (no other buffer shares it), and nothing reads them
   * after the write: the store may move it to another thread instead of copying it.
   */
  movable?: boolean
}

/** The file names a photo's urls point to (what its files are counted by). */
export const fileNamesOf = (photo: Photo): string[] =>
  [photo.urls.thumb, photo.urls.display, photo.urls.full].map((url) => url.slice(FILES_PATH.length))
