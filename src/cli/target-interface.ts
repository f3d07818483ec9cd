import type { BatchOperation } from '../catalogue/batch.js'
import type { HistoryEntry } from '../catalogue/history.js'
import type { Plant } from '../catalogue/plant.js'
import type { PlantQuery } from '../catalogue/query.js'
import type { Movement } from '../catalogue/stock.js'
import type { PlantFinder } from '../store/admin-store.js'

// The catalogue a command works on, whatever holds it (a data folder, PostgreSQL, a running service):
// each holder's module implements this, and target.ts opens the one the command names.

/** A batch applied, or refused as a whole: each refused operation by its index, with why. */
export type ApplyOutcome = { ok: true } | { ok: false, refused: Array<{ index: number, reason: string }> }

/** Ids to look for, as a Set holds them or as an import keeps them on disk (import-scratch.ts). */
export interface IdSet extends Iterable<number> {
  readonly size: number
  has (id: number): boolean
}

/** Stock per location as a catalogue holds it: what an export's stock.<location> columns say. */
export interface StockReader {
  /** The catalogue's locations, main first, then by name. */
  locations (): Promise<string[]>
  /** Each of these plants' onHand at each location it holds a level at (a location it has none at holds 0). */
  onHand (ids: number[]): Promise<Map<number, Map<string, number>>>
}

/** Counts written through the store's movements (plants import --stock). */
export interface StockCounter {
  /** The catalogue's locations. */
  locations (): Promise<string[]>
  /** A plant's onHand at each location it holds a level at; null when it does not track stock (or is gone). */
  onHand (id: number): Promise<Map<string, number> | null>
  /** The plant's ledger, newest first, a page at a time (GET /v3/plant/{id}/stock/movements): what an import reads to tell a count edited in its file from a level moved since the export. */
  ledger (id: number): AsyncGenerator<Movement[]>
  /** Sets onHand at `location` to `set` when it is `expected` now: a movement with reason count. A refusal in the catalogue's words, else undefined. */
  count (id: number, location: string, set: number, expected: number): Promise<string | undefined>
}

export interface Catalogue {
  /** For messages: "data folder ./data" or "service http://…". */
  readonly where: string
  /** Every plant in id order (or those `query` finds, in its order), one keyset page at a time: memory stays flat at any size. */
  pages (pageSize: number, query?: PlantQuery): AsyncGenerator<Plant[]>
  /**
   * Applies the operations all or nothing, through the write path of POST /v3/plant/batch (the
   * store's batch, or that request); `key` names this batch's content, as its Idempotency-Key over
   * a service. A refusal is an outcome; a failure of the catalogue throws. `after`: the batch handed
   * over before this one, which this one is written after (it may be prepared meanwhile); when it
   * fails, this one writes nothing and fails with the same error.
   */
  applyAll (operations: BatchOperation[], key: string, after?: Promise<unknown>): Promise<ApplyOutcome>
  /**
   * Which of these ids (of no live plant) name a plant in the trash: a row naming one is refused by
   * an import rather than adding a new plant beside the one waiting to be restored. Every catalogue
   * an import writes to has it; a stand-in for a folder with no catalogue yet has no trash.
   */
  trashed?: (ids: IdSet) => Promise<number[]>
  /**
   * What writing here needs that this run was not given (a key), said as advice; undefined when
   * nothing is missing. A dry run reads without a key, and says so before the import is run for real.
   */
  writesNeed?: () => Promise<string | undefined>
  /**
   * A plant's history, newest first, a page at a time (GET /v3/plant/{id}/history): what an import
   * reads of a plant changed since its file was exported, to tell the file's edits from the changes
   * made since (import-base.ts). Every catalogue an import writes to has it.
   */
  history?: (id: number) => AsyncGenerator<HistoryEntry[]>
  /** How long the catalogue keeps every version, where this run knows it (its own store's setting): a history that ends is then whole back to that far. */
  readonly historyRetentionMs?: number
  /** Stock per location, where this catalogue can read it. */
  readonly stock?: StockReader
  /** Where an import can count stock (a data folder or PostgreSQL). */
  readonly counter?: StockCounter
  /** Where the catalogue can look plants up by key (PostgreSQL): a finder, for an import to read only the plants its rows name. */
  finder?: () => Promise<PlantFinder>
  close (): Promise<void>
}
