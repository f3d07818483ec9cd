import type { StoredPlant } from '../../catalogue/plant.js'
import type { KeyBook } from './key-book.js'

// What the plant writes (writes.ts) lend the stock and reservation writes (stock-writes.ts,
// reservation-writes.ts) inside the writer's transaction.

/** A level's units on hand and reserved. */
export interface LevelCounts { onHand: number, reserved: number }

/** What the plant writes (writes.ts) lend the stock writes: the plant as it is, and the feed and history. */
export interface PlantContext {
  /**
   * The plant as stored now, the seqs of its newest history entry and of its newest movement
   * (stock-ledger.ts), and its level at main, which its row holds (stock-migration.ts mainLevelMigration).
   */
  load (id: number): { plant: StoredPlant, historySeq: number | null, ledgerSeq: number | null, main: LevelCounts | undefined } | undefined
  /** Appends a history entry after `prev` (the changes as stored, JSON); answers its seq. */
  record (id: number, version: number, now: number, actor: string, changes: string, prev: number | null): number
  /** One 'updated' change of the feed with the record after it; answers its seq. */
  change (plant: StoredPlant, now: number, actor: string): number
  count (status: string, delta: number): void
  /** Moves the units on hand the inventory counts (meta units_on_hand), written once at the end of the group's transaction. */
  units (delta: number): void
  /** The Idempotency-Keys (key-book.ts), one book for every write that keeps them. */
  keys: KeyBook
}
