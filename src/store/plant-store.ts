import type { BatchOperation, BatchOptions, BatchResult } from '../catalogue/batch.js'
import type { FeedRead, WriteMeta } from '../catalogue/changes.js'
import type { HistoryEntry } from '../catalogue/history.js'
import type { NewPhoto, StoredFile } from '../catalogue/photo.js'
import type { Inventory, PlantInput, PlantPatch, PlantStatus, StoredPlant } from '../catalogue/plant.js'
import type { Sort } from '../catalogue/query.js'
import type { TrashedPlant, TrashPosition } from '../catalogue/trash.js'
import type { IdempotencyClaim } from './idempotency.js'
import type { KeyStore } from './key-store.js'
import type { StockStore } from './stock-store.js'
import type { WebhookStore } from './webhook-store.js'

// The storage boundary: routes speak to this interface only; one implementation per engine.
// It speaks the catalogue's words (src/catalogue/) and throws its errors (catalogue/errors.ts).

export type { IdempotencyClaim } from './idempotency.js'

export interface CreateResult {
  plant: StoredPlant
  /** True when an earlier request with the same Idempotency-Key created the plant. */
  replayed: boolean
}

export interface ListFilter {
  /** Any of these statuses (absent or empty: any). */
  statuses?: PlantStatus[]
  category?: string
  tags?: string[]
  /** Lower-cased terms (see catalogue/query.ts) the lower-cased name must each contain. */
  terms?: string[]
  /** SKU, ignoring case (see catalogue/query.ts for these four). */
  sku?: string
  /** A GTIN-14 key (catalogue/price-sku-barcode.ts gtinKey): plants whose barcode stands for it at any length. */
  barcode?: string
  /** Epoch milliseconds. */
  updatedSince?: number
  /** Cents, inclusive. */
  priceMin?: number
  priceMax?: number
  /** true: available > 0; false: tracked, none available (catalogue/query.ts). */
  inStock?: boolean
  /** Tracked plants with available ≤ lowStockAt. */
  lowStock?: boolean
  sort?: Sort
  /**
   * Start after this id (0: from the start); with a name sort, after (afterKey, afterId); with a
   * price or updated sort, after (afterValue, afterId) (catalogue/query.ts: sortValue).
   */
  afterId: number
  afterKey?: string
  afterValue?: number
  limit: number
}

/** A list's filters without its order and position: what a count counts. */
export type CountFilter = Omit<ListFilter, 'sort' | 'afterId' | 'afterKey' | 'afterValue' | 'limit'>

/**
 * Every write takes a last, optional `meta` (catalogue/changes.ts WriteMeta): who makes it, recorded
 * on its change in the same transaction. Absent: `anonymous`.
 */
/** How a revert is asked for: If-Match's versions, and whether the status goes back too. */
export interface RevertOptions { expectedVersions?: number[], status?: boolean }

export interface PlantStore {
  readonly engine: 'sqlite' | 'postgres'
  /** The API keys, in the same database (so shared by every instance using it). */
  readonly keys: KeyStore
  /** The webhooks' subscriptions and delivery state, in the same database. */
  readonly webhooks: WebhookStore
  /** Locations, levels, movements (catalogue/stock.ts), in the same database and transactions as the plants. */
  readonly stock: StockStore
  /** Refused with SkuTaken when another plant has the SKU (ignoring case), also when racing another instance. */
  create (fields: PlantInput, idempotency?: IdempotencyClaim, meta?: WriteMeta): Promise<CreateResult>
  /** Replaces the plant's fields. `expectedVersions` (from If-Match) makes the update conditional. */
  update (id: number, fields: PlantInput, expectedVersions?: number[], meta?: WriteMeta): Promise<StoredPlant>
  /** Merges `patch` into the current plant inside the write; `{}` changes nothing (no version, no change). */
  patch (id: number, patch: PlantPatch, expectedVersions?: number[], meta?: WriteMeta): Promise<StoredPlant>
  /**
   * Deletes the plant: it moves to the trash with its photos (a 'deleted' change), and is as deleted
   * for every other operation; `expectedVersions` (from If-Match) makes the delete conditional.
   */
  remove (id: number, expectedVersions?: number[], meta?: WriteMeta): Promise<void>
  /** How long a plant waits in the trash before the hourly purge takes it (the store's `trashRetentionMs`). */
  readonly trashRetentionMs: number
  /** A page of the trash, newest first, after `after` (the last entry of the page before). */
  trash (after: TrashPosition | undefined, limit: number): Promise<TrashedPlant[]>
  /** The plant's entry in the trash, if it is there (a refused restore names the entry's version). */
  trashed (id: number): Promise<TrashedPlant | undefined>
  /**
   * Brings a plant back from the trash under its id, with its fields and photos, as a new version (a
   * 'created' change). Refused: TrashedNotFound, VersionMismatch (`expectedVersions` name the
   * entry's version), SkuTaken (another plant took its SKU meanwhile).
   */
  restoreTrashed (id: number, expectedVersions?: number[], meta?: WriteMeta): Promise<StoredPlant>
  /** Removes a plant from the trash for good, its history and the photo files nothing else names (TrashedNotFound). */
  purgeTrashed (id: number): Promise<void>
  /**
   * A page of the plant's history (catalogue/history.ts), newest first, of the versions below
   * `before` (all when undefined); undefined when no plant has the id, live or in the trash.
   */
  history (id: number, before: number | undefined, limit: number): Promise<HistoryEntry[] | undefined>
  /**
   * Gives the plant the fields (not the photos) it had at `version`, as a new version: an 'updated'
   * change, as an update would. The status stays as it is (a sale or a hold happened in the world)
   * unless `options.status`. Fields already those: the plant as it is (no version, no change).
   * Refused: PlantNotFound, VersionMismatch, VersionNotKept, SkuTaken (another plant has its old SKU).
   */
  revert (id: number, version: number, options?: RevertOptions, meta?: WriteMeta): Promise<StoredPlant>
  /**
   * Applies the operations in order, all or nothing, in one transaction, through the same writes as
   * create, update, patch and remove (one feed change each, consecutive). Refused as a whole with
   * BatchRefused naming every operation refused; the Idempotency-Key claim covers the whole batch.
   */
  batch (operations: BatchOperation[], idempotency?: IdempotencyClaim, meta?: WriteMeta, options?: BatchOptions): Promise<BatchResult>
  get (id: number): Promise<StoredPlant | undefined>
  /** Up to `limit` plants after the position matching every filter, in the filter's sort order. */
  list (filter: ListFilter): Promise<StoredPlant[]>
  /**
   * The number of plants matching every filter, counting no further than `cap`: the list's own walk
   * stops at the cap, so the cost is bounded like a page's, never a scan of the catalogue.
   */
  count (filter: CountFilter, cap: number): Promise<number>
  /** The number of plants of each status, from one snapshot; kept by every write, so O(1). */
  inventory (): Promise<Inventory>
  /**
   * Changes with seq > after, oldest first. Throws FeedGone when `after` precedes the retention
   * ('expired') or is beyond the head ('ahead': a restored or another database).
   */
  changes (after: number, limit: number): Promise<FeedRead>
  /** The newest sequence number handed out (the floor when every change has expired); read now. */
  head (): Promise<number>
  /**
   * The newest change that a read starting now will already reflect: never newer, at most a little
   * older. Call it just before the read it stands for (SQLite: the same read snapshot; PostgreSQL:
   * the head last seen, which every later snapshot includes). Throws StorageUnavailable when unready.
   */
  feedPosition (): number
  /** Calls `listener` after changes commit (through any instance sharing the storage). */
  onCommit (listener: () => void): () => void
  /** Adds a photo and its files (refused: PlantNotFound, VersionMismatch, PhotoLimitReached); the version moves. */
  addPhoto (id: number, photo: NewPhoto, expectedVersions?: number[], meta?: WriteMeta): Promise<StoredPlant>
  /** Removes a photo; files no photo names any more go in the same commit (PlantNotFound, PhotoNotFound, VersionMismatch). */
  removePhoto (id: number, photoId: string, expectedVersions?: number[], meta?: WriteMeta): Promise<StoredPlant>
  /** Puts the photos in `order`, their ids each once, the cover first (PlantNotFound, VersionMismatch, PhotoOrderInvalid); the version moves. */
  orderPhotos (id: number, order: string[], expectedVersions?: number[], meta?: WriteMeta): Promise<StoredPlant>
  /**
   * A photo file by its name: its size and, when `chunk` is given, that chunk of its bytes
   * (FILE_CHUNK_BYTES each from the start), in one read that touches no other byte of it.
   */
  photoFile (name: string, chunk?: number): Promise<StoredFile | undefined>
  /** Throws StorageUnavailable when the storage cannot be reached. */
  ping (): Promise<void>
  /** The version of the database schema: SQLite's user_version, or the highest PostgreSQL migration applied. */
  schemaVersion (): Promise<number>
  close (): Promise<void>
}
