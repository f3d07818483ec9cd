import { toRecord, type Plant } from './plant.js'
import type { StockCrossing } from './stock.js'

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

/** The stock crossings of a change (a movement's), by the change's seq: not part of the feed's change, sent to webhooks subscribed to them. */
export interface ChangeCrossing extends StockCrossing { seq: number }

/** A page of the feed as the store reads it: the changes, and the crossings of those that carry any (webhooks; absent: none). */
export interface FeedRead extends ChangePage { crossings?: ChangeCrossing[] }

/** A change row's crossing (JSON as the store keeps it), or none. */
export const crossingOfChange = (seq: number, json: string | null): ChangeCrossing[] =>
  json === null ? [] : [{ seq, ...JSON.parse(json) as StockCrossing }]

/**
 * A change's record as its store kept it (JSON), with the change's version: the plant's version
 * after the change is the change's own, and records kept before the record carried a version (or
 * stock) lack it.
 */
export const recordOfChange = (json: string | null, version: number): Plant | null =>
  json === null ? null : toRecord({ ...JSON.parse(json) as Plant, version })
