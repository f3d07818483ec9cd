import { PhotoLimitReached, PhotoNotFound, PhotoOrderInvalid } from './errors.js'

// A plant's photos as the catalogue keeps them: the record, its files, the limit on how many, and
// the rules each engine applies inside a write's transaction, to the photos as read there.
// The HTTP schema (photos/schemas.ts) is checked against these types (plants/schema-types.ts).

/** At most this many photos a plant (the 13th upload is a 409). */
export const MAX_PHOTOS = 12
/** Where the files are served; a photo's urls are this prefix and a file name. */
export const FILES_PATH = '/v3/photos/'

export interface Photo {
  /** The photo's id within its plant. */
  id: string
  /** Size of the full picture, upright, in pixels. */
  width: number
  height: number
  /** Each names a file by its content (SHA-256). */
  urls: { thumb: string, display: string, full: string }
}

/** A file a photo is served from: its content-derived name and bytes. */
export interface PhotoFile { name: string, bytes: Uint8Array }

/**
 * Photo files are read (and on SQLite stored) in chunks of this many bytes, the last one shorter:
 * a body is served a chunk at a time, as fast as its client takes it, so a client that stops
 * reading holds one chunk, not the file. Thumbs and most display sizes are one chunk.
 */
export const FILE_CHUNK_BYTES = 128 * 1024

/** A stored file as one read sees it: its size, and the chunk asked for (empty past the end). */
export interface StoredFile { size: number, chunk?: Uint8Array }

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

/**
 * Why `order` is not a new order of `photos` (every one of their ids, each once), naming the first
 * item at fault when there is one; undefined when it is.
 */
export function photoOrderProblem (photos: Photo[], order: string[]): { at?: number, message: string } | undefined {
  const ids = new Set(photos.map((p) => p.id))
  const seen = new Set<string>()
  for (const [at, id] of order.entries()) {
    if (!ids.has(id)) return { at, message: `"${id}" is not a photo of this plant` }
    if (seen.has(id)) return { at, message: `"${id}" is given more than once` }
    seen.add(id)
  }
  const missing = photos.find((p) => !seen.has(p.id))
  return missing && { message: `must name every photo of the plant, each once: "${missing.id}" is missing` }
}

/** `photos` in `order`, an order photoOrderProblem accepts. */
export const inOrder = (photos: Photo[], order: string[]): Photo[] => order.map((id) => photos.find((p) => p.id === id)!)

/** Refuses (PhotoLimitReached) a new photo for a plant that has MAX_PHOTOS already. */
export function checkRoomForPhoto (photos: Photo[]): void {
  if (photos.length >= MAX_PHOTOS) throw new PhotoLimitReached()
}

/** `photos` with `added` last; PhotoLimitReached when there is no room for it. */
export function withPhotoAdded (photos: Photo[], added: Photo): Photo[] {
  checkRoomForPhoto(photos)
  return [...photos, added]
}

/** `photos` without the one `photoId` names, and that one (its files lose a reference); PhotoNotFound when none has it. */
export function withPhotoRemoved (photos: Photo[], photoId: string): { photos: Photo[], gone: Photo } {
  const gone = photos.find((p) => p.id === photoId)
  if (!gone) throw new PhotoNotFound()
  return { photos: photos.filter((p) => p !== gone), gone }
}

/** `photos` in `order`; PhotoOrderInvalid when it does not name each of them once (photoOrderProblem says where). */
export function reordered (photos: Photo[], order: string[]): Photo[] {
  if (photoOrderProblem(photos, order) !== undefined) throw new PhotoOrderInvalid()
  return inOrder(photos, order)
}

/**
 * The photo rules' refusals by a name: an error's class does not cross from SQLite's writer thread
 * to the store, its name does, and the store throws the same error again.
 */
export const PHOTO_REFUSALS = { 'photo-limit': PhotoLimitReached, 'photo-not-found': PhotoNotFound, 'photo-order': PhotoOrderInvalid } as const
export type PhotoRefusal = keyof typeof PHOTO_REFUSALS

/** The name of `err` when a photo rule threw it, else undefined. */
export const photoRefusalOf = (err: unknown): PhotoRefusal | undefined =>
  (Object.keys(PHOTO_REFUSALS) as PhotoRefusal[]).find((refusal) => err instanceof PHOTO_REFUSALS[refusal])
