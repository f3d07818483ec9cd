import { api, ApiError, describe, type Plant } from './api.js'

// Undo of a change made from the page: what the plant was is written back over what the change
// left, with If-Match on the version the change made. When someone changed the plant since, the
// undo is refused (412) rather than throwing their change away, and staff are told so. A delete
// is undone through the trash.

let written: (plant: Plant) => void = () => {}

/** Called with the plant as each undo left it (the list and the open editor follow). */
export function onUndone (handler: (plant: Plant) => void): void {
  written = handler
}

/** Staff's words for an undo that could not be done. */
export function notUndone (err: unknown, name: string): string {
  if (err instanceof ApiError && err.status === 412) return `Not undone: someone changed “${name}” since. Open it to see it as it is now.`
  if (err instanceof ApiError && err.status === 404) return `Not undone: “${name}” was deleted since.`
  return `Not undone. ${describe(err)}`
}

/**
 * The Undo of a save or a sale: `before` holds the changed fields as they were; `etag` is the
 * version the change made. Resolves with what to tell staff.
 */
export function undoPatch (name: string, id: number, before: Record<string, unknown>, etag: string, said: string): () => Promise<string> {
  return async () => {
    try {
      const { body } = await api<Plant>('PATCH', `/v3/plant/${id}`, { body: before, contentType: 'application/merge-patch+json', ifMatch: etag })
      written(body)
      return said
    } catch (err) {
      return notUndone(err, name)
    }
  }
}

/**
 * The Undo of a delete: the plant comes back from the trash (its id, fields and photos), with
 * If-Match on the trash entry the delete made (`version`: the plant's version then, plus one).
 */
export function undoDelete (name: string, id: number, version: number): () => Promise<string> {
  return async () => {
    try {
      const { body } = await api<Plant>('POST', `/v3/trash/${id}/restore`, { ifMatch: `"${id}.${version}"` })
      written(body)
      return `Undone: “${name}” is back.`
    } catch (err) {
      if (err instanceof ApiError && (err.status === 404 || err.status === 412)) return `Not undone: “${name}” is no longer in the trash as you left it (someone restored or removed it since).`
      if (err instanceof ApiError && err.code === 'sku-taken') return `Not undone: another plant has the SKU of “${name}” now. Change that plant’s SKU, then restore it from the trash.`
      return `Not undone. ${describe(err)}`
    }
  }
}
