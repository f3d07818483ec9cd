import type { StoredPlant } from './plant.js'

// The trash: a deleted plant waits here, with its photos, until it is restored, purged,
// or older than the retention. Out of the trash it is as deleted for every other operation.

export interface TrashedPlant {
  /** The plant as it was when deleted, its version the last it had. */
  plant: StoredPlant
  /** The entry's own version: the deleted change's. A restore's If-Match names `"<id>.<version>"`. */
  version: number
  /** Epoch milliseconds. */
  trashedAt: number
  /** Who deleted it (the key's name), when known. */
  trashedBy: string | null
}

/** Where a page of the trash (newest first) ends: the next one starts after it. */
export interface TrashPosition { trashedAt: number, id: number }

/** How long a plant waits in the trash when TRASH_RETENTION_DAYS is not set: 30 days. */
export const TRASH_RETENTION_MS = 30 * 86_400_000

/** The most a page of the trash holds, and the size of a page when none is asked for. */
export const TRASH_PAGE_MAX = 100
export const TRASH_PAGE_DEFAULT = 20
