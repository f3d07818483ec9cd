import type { PlantInput, PlantPatch, StoredPlant } from './plant.js'

// Many plants at once: the operations of one batch, applied by the store all or nothing, in one
// transaction, through the same writes as the single operations (create, update, patch, delete).

/** One operation of a batch; `expectedVersions` (from its ifMatch) makes it conditional. */
export type BatchOperation =
  | { op: 'create', fields: PlantInput }
  | { op: 'update', id: number, fields: PlantInput, expectedVersions?: number[] }
  | { op: 'patch', id: number, patch: PlantPatch, expectedVersions?: number[] }
  | { op: 'delete', id: number, expectedVersions?: number[] }

/** Each operation's plant as it left it (null for a delete), in the operations' order. */
export interface BatchResult {
  plants: Array<StoredPlant | null>
  /** True when an earlier request with the same Idempotency-Key applied the batch. */
  replayed: boolean
}

/** How a batch is answered. */
export interface BatchOptions {
  /**
   * false: the caller needs no plants back (an import of 100,000 rows): `plants` is empty. The
   * SQLite store's writer thread then sends none across to the event loop, which cost as much as
   * the writes themselves.
   */
  results?: boolean
  /**
   * Written only once this settles, in the order of the batches handed over (an import's batch
   * after the one before it): it may be prepared meanwhile (on PostgreSQL, its plants locked and its
   * outcomes worked out beside the batch ahead being written). When it rejects, the batch writes
   * nothing and rejects with the same reason.
   */
  after?: Promise<unknown>
}

/** An operation the store refused, by its place in the batch, with the refusal it met. */
export interface BatchRefusal {
  index: number
  /** PlantNotFound, VersionMismatch or SkuTaken (catalogue/errors.ts). */
  error: Error
}

/** Some operations were refused: nothing of the batch was applied. `refusals` are in index order. */
export class BatchRefused extends Error {
  constructor (readonly refusals: BatchRefusal[]) {
    super(`${refusals.length} operation(s) of the batch refused; nothing applied`)
  }
}

/** The most operations one batch may hold. */
export const MAX_BATCH_OPERATIONS = 500
