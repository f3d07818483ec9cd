import type { Plant } from './plant.js'

// The change feed: every committed write, in order, as the store hands it out.

export type ChangeKind = 'created' | 'updated' | 'deleted'

export interface Change {
  seq: number
  kind: ChangeKind
  id: number
  version: number
  /** The record after the change; null for a delete. */
  plant: Plant | null
}

export interface ChangePage { items: Change[], next: number }
