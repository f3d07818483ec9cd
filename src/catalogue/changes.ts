import { toRecord, type Plant } from './plant.js'

// The change feed: every committed write, in order, as the store hands it out.

export type ChangeKind = 'created' | 'updated' | 'deleted'

/** Who makes a write: passed into every write of the store, recorded on its change. */
export interface WriteMeta {
  /** The name of the key that made the write, `anonymous` without one, `cli` for the command line. */
  actor: string
}

/** The actor of a write made without a key (keys off, or an open route). */
export const ANONYMOUS = 'anonymous'
export const ANONYMOUS_WRITE: WriteMeta = { actor: ANONYMOUS }

export interface Change {
  seq: number
  kind: ChangeKind
  id: number
  version: number
  /** Who made the change (WriteMeta.actor). */
  actor: string
  /** When it was committed: RFC 3339 UTC with milliseconds. */
  at: string
  /** The record after the change; null for a delete. */
  plant: Plant | null
}

export interface ChangePage { items: Change[], next: number }

/**
 * A change's record as its store kept it (JSON), with the change's version: the plant's version
 * after the change is the change's own, and records kept before the record carried a version (or
 * stock) lack it.
 */
export const recordOfChange = (json: string | null, version: number): Plant | null =>
  json === null ? null : toRecord({ ...JSON.parse(json) as Plant, version })
