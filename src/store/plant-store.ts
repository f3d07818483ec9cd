import type { NewPhoto } from '../photos/schemas.js'
import type { Sort } from '../plants/query.js'
import type { Plant, PlantFields, PlantPatch, PlantStatus } from '../plants/schemas.js'

// The storage boundary: routes speak to this interface only; one implementation per engine.

/** A plant as stored: the record plus the version its ETag is made from. */
export interface StoredPlant extends Plant { version: number }

/** The record a client sees (and the feed keeps): the stored plant without its version. */
export const toRecord = ({ id, name, category, tags, status, photos }: Plant): Plant => ({ id, name, category, tags, status, photos: photos ?? [] })

export interface IdempotencyClaim {
  key: string
  /** A hash of the request body: the same key with another body is refused. */
  requestHash: string
}

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
  /** Lower-cased terms (see plants/query.ts) the lower-cased name must each contain. */
  terms?: string[]
  sort?: Sort
  /** Start after this id (0: from the start); with a name sort, after (afterKey, afterId). */
  afterId: number
  afterKey?: string
  limit: number
}

export type Inventory = Record<PlantStatus, number>

export type ChangeKind = 'created' | 'updated' | 'deleted'
export interface Change {
  seq: number
  kind: ChangeKind
  id: number
  version: number
  plant: Plant | null
}
export interface ChangePage { items: Change[], next: number }

export interface PlantStore {
  readonly engine: 'sqlite' | 'postgres'
  create (fields: PlantFields, idempotency?: IdempotencyClaim): Promise<CreateResult>
  /** Replaces the plant's fields. `expectedVersions` (from If-Match) makes the update conditional. */
  update (id: number, fields: PlantFields, expectedVersions?: number[]): Promise<StoredPlant>
  /** Merges `patch` into the current plant inside the write; `{}` changes nothing (no version, no change). */
  patch (id: number, patch: PlantPatch, expectedVersions?: number[]): Promise<StoredPlant>
  remove (id: number): Promise<void>
  get (id: number): Promise<StoredPlant | undefined>
  /** Up to `limit` plants after the position matching every filter, in the filter's sort order. */
  list (filter: ListFilter): Promise<StoredPlant[]>
  /** The number of plants of each status, from one snapshot; kept by every write, so O(1). */
  inventory (): Promise<Inventory>
  /**
   * Changes with seq > after, oldest first. Throws FeedGone when `after` precedes the retention
   * ('expired') or is beyond the head ('ahead': a restored or another database).
   */
  changes (after: number, limit: number): Promise<ChangePage>
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
  addPhoto (id: number, photo: NewPhoto, expectedVersions?: number[]): Promise<StoredPlant>
  /** Removes a photo; files no photo names any more go in the same commit (PlantNotFound, PhotoNotFound, VersionMismatch). */
  removePhoto (id: number, photoId: string, expectedVersions?: number[]): Promise<StoredPlant>
  /** The bytes of a photo file, by its name. */
  photoFile (name: string): Promise<Uint8Array | undefined>
  /** Throws StorageUnavailable when the storage cannot be reached. */
  ping (): Promise<void>
  /** The version of the database schema: SQLite's user_version, or the highest PostgreSQL migration applied. */
  schemaVersion (): Promise<number>
  close (): Promise<void>
}

export class PlantNotFound extends Error {}
export class VersionMismatch extends Error {}
export class IdempotencyKeyReused extends Error {}
export class FeedGone extends Error {
  constructor (readonly reason: 'expired' | 'ahead') { super(`feed position ${reason}`) }
}
export class PhotoNotFound extends Error {}
export class PhotoLimitReached extends Error {}
/** A list query ran past its time limit: answered 503 so it never holds the service up. */
export class QueryTooSlow extends Error {}
/** The storage cannot take or answer the request now (down, busy, disk full); worth a retry. */
export class StorageUnavailable extends Error {
  constructor (message: string, readonly cause?: unknown) { super(message) }
}
