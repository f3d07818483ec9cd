import { api, ApiError, describe, type Photo } from './api.js'

// The order of a plant's photos, the first its cover: changed by dragging a photo onto another's
// place, by its Move buttons (the keyboard's way) or by "Make cover". Each change is one
// PUT /v3/plant/{id}/photos/order with If-Match: when someone changed the plant meanwhile, it is
// refused (412) and the photos are shown as they are now.

/** Where a photo lands: `order` with the photo at `from` moved to `to`. */
export function moved (photos: Photo[], from: number, to: number): string[] {
  const ids = photos.map((p) => p.id)
  const [id] = ids.splice(from, 1)
  ids.splice(to, 0, id)
  return ids
}

/** What staff are told of photo `from` moved to place `to` (from 0): a move that changes the cover names the photo that is the cover now. */
export function movedWords (from: number, to: number): string {
  if (to === 0) return `Photo ${from + 1} is now photo 1: the cover.`
  if (from === 0) return `Photo 1 is now photo ${to + 1}: the cover is now the photo that was photo 2.`
  return `Photo ${from + 1} is now photo ${to + 1}.`
}

/** Sends the new order; resolves with what to tell staff, and whether it was refused. */
export async function sendOrder (plantId: number, order: string[], etag: string, said: string): Promise<{ text: string, refused: boolean }> {
  try {
    await api('PUT', `/v3/plant/${plantId}/photos/order`, { body: { order }, ifMatch: etag })
    return { text: said, refused: false }
  } catch (err) {
    if (err instanceof ApiError && (err.status === 412 || err.status === 400)) {
      return { text: 'The photos were changed by someone else meanwhile: they show as they are now. Try again if you still want to.', refused: true }
    }
    return { text: `The order was not changed. ${describe(err)}`, refused: true }
  }
}
