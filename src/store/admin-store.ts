import type { Plant } from '../catalogue/plant.js'
import type { PlantQuery } from '../catalogue/query.js'
import type { RestoreMarks, RestoreOutcome } from './restore-marks.js'

// The admin part of the store interface: what the command line needs of a catalogue that routes do
// not (whole snapshots, copying between engines, backups, restore marks). Each engine implements it
// inside its own folder; store/open/open-admin.ts picks one, and the CLI sees only this module.

/** Where a catalogue is kept: the embedded database of a data folder, or PostgreSQL. */
export interface FolderLocation { kind: 'folder', dataDir: string }
export interface PostgresLocation { kind: 'postgres', databaseUrl: string }
export type CatalogueLocation = FolderLocation | PostgresLocation

/** A refusal worded for the person running the command: shown as it is. */
export class AdminRefused extends Error {}

/** The database could not be reached; the command line words the cause (`address` has no password). */
export class CatalogueUnreachable extends Error {
  constructor (readonly address: string, readonly reason: unknown) {
    super(`cannot reach PostgreSQL at ${address}`)
  }
}

// Each kind of data as both engines keep it, engine-neutral: text as it is (PostgreSQL's escapes
// undone), times in epoch milliseconds, BIGINTs as numbers, JSON records as their text.
export interface PlantRow {
  id: number,
  name: string,
  category: string | null,
  tags: string[],
  status: string,
  version: number,
  photos: string,
  description: string | null,
  price: number | null,
  sku: string | null,
  barcode: string | null,
  created_at: number,
  updated_at: number,
  /** Stock (catalogue/stock.ts): the threshold, and the totals over the locations (null: not tracked). */
  low_stock_at: number | null,
  on_hand: number | null,
  reserved: number | null,
  available: number | null
}
export interface ChangeRow { seq: number, kind: string, plant_id: number, version: number, plant: string | null, at: number, actor: string | null }
export interface IdempotencyRow { key: string, request_hash: string, plant_id: number | null, response: string, created_at: number }
export interface ApiKeyRow { name: string, scope: string, hash: string, created_at: number, expires_at: number | null, last_used_at: number | null, revoked_at: number | null }
export interface TrashRow { id: number, plant: string, version: number, trashed_at: number, trashed_by: string | null }
export interface HistoryRow { plant_id: number, version: number, kind: number, at: number, actor: string, changes: string }
export interface LocationRow { name: string, created_at: number }
export interface StockLevelRow { plant_id: number, location: string, on_hand: number, reserved: number }
/** One movement of the ledger, as its movement wrote it. */
export interface MovementRow { seq: number, plant_id: number, at: number, actor: string, location: string, delta: number, reason: string, reference: string | null, on_hand_after: number }
export interface PhotoFileRow { name: string, refs: number, bytes: Buffer }
/** A reservation, held or ended (catalogue/reservation.ts ReservationRow). */
export interface ReservationKindRow { id: string, state: string, lines: string, created_at: number, expires_at: number, ended_at: number | null, actor: string }
/** A webhook or an attempt in its log, column by column (store/webhook-rows.ts names them). */
export type ColumnRow = Record<string, string | number | null>

/** Every kind a whole catalogue holds, by the row it is read and written as. */
export interface CatalogueKinds {
  plants: PlantRow
  changes: ChangeRow
  idempotencyKeys: IdempotencyRow
  apiKeys: ApiKeyRow
  trash: TrashRow
  /** Read in the order written where the engine keeps it (so a copy's retention meets the oldest first), else by plant and version. */
  history: HistoryRow
  /** One file a page: each may be megabytes. */
  photoFiles: PhotoFileRow
  webhooks: ColumnRow
  webhookDeliveries: ColumnRow
  /** Stock: the locations (by name), each plant's level per location (by plant, then location), the ledger (by seq). */
  locations: LocationRow
  stockLevels: StockLevelRow
  stockMovements: MovementRow
  /** Reservations (by id): the held ones carry their hold (the levels' reserved), the ended ones their answers to reads. */
  reservations: ReservationKindRow
}
export type Kind = keyof CatalogueKinds

/** What a catalogue has counted and handed out, read in the snapshot. */
export interface CatalogueTallies {
  plants: number
  /** One per distinct tag of a plant. */
  tags: number
  changes: number
  idempotencyKeys: number
  /** Plants by status, as the inventory counts them. */
  inventory: Record<'available' | 'pending' | 'sold', number>
  /** The highest plant id ever handed out, deleted ones included. */
  lastId: number
  feedHead: number
  feedFloor: number
  /** The highest webhook id and attempt number ever handed out. */
  lastWebhookId: number
  lastDeliveryN: number
  /** The highest ledger position ever handed out (the movements list's cursor). */
  lastMovementSeq: number
}

/** One consistent read of a whole catalogue (one read transaction), a page at a time. */
export interface CatalogueSnapshot {
  /** Every plant as records, in id order (or those `query` finds, in its order). */
  plants (pageSize: number, query?: PlantQuery): AsyncGenerator<Plant[]>
  /** Every row of a kind, in the kind's order (ids, positions, names). */
  rows<K extends Kind> (kind: K, pageSize: number, order?: 'written' | 'key'): AsyncGenerator<Array<CatalogueKinds[K]>>
  tallies (): Promise<CatalogueTallies>
  /** These plants' levels (by plant, then location), in the same snapshot: an export's stock.<location> cells. */
  levels (ids: number[]): Promise<StockLevelRow[]>
  close (): Promise<void>
}

/** Plants found by key, as the catalogue holds them now, for an import to read only the plants its rows name. */
export interface PlantFinder {
  /** Which of these ids the catalogue has. */
  existing (ids: number[]): Promise<number[]>
  byIds (ids: number[]): Promise<Plant[]>
  /** The plants whose SKU is one of these (as skuKey compares them). */
  bySkus (skus: string[]): Promise<Plant[]>
  byNames (names: string[]): Promise<Plant[]>
  close (): Promise<void>
}

/** What a backup holds, once proved whole. */
export interface BackupCheck {
  plants: number
  maxId: number
  userVersion: number
  photoFiles: number
  /** The rows of stock the backup holds: locations, levels (a plant at a location), the ledger's movements. */
  stock: { locations: number, levels: number, movements: number }
}

export interface CatalogueAdmin {
  /** For messages: "data folder ./data", "PostgreSQL database postgres://u:***@host/db". */
  readonly where: string
  /** The data folder, or the database's URL without its password. */
  readonly address: string
  /** Whether the location holds a catalogue at all (a mistyped one must not quietly become a new one). */
  hasCatalogue (): Promise<boolean>
  /** Refuses (AdminRefused, saying where it looked) when there is no catalogue. */
  requireCatalogue (): Promise<void>
  /** A read-only snapshot; refused (AdminRefused) where there is no catalogue. */
  snapshot (): Promise<CatalogueSnapshot>
  /** What the catalogue has handed out (store/restore-marks.ts). */
  readMarks (): Promise<RestoreMarks>
  close (): Promise<void>
}

/** The admin part for a data folder's embedded database: backed up and restored as a file. */
export interface FolderAdmin extends CatalogueAdmin {
  readonly kind: 'folder'
  /** A checked snapshot to `file` while the service keeps serving. */
  backup (file: string): Promise<BackupCheck>
  /** Proves `file` a whole backup before anything is touched, or refuses (AdminRefused) saying what is wrong with it. */
  checkBackup (file: string): Promise<BackupCheck>
  /**
   * Replaces the catalogue with a backup (checked first), moved past `marks`, else past what the
   * replaced catalogue handed out; refused while another process has the catalogue open.
   */
  restore (backup: string, options: RestoreOptions): Promise<RestoreResult>
}

/** The admin part for PostgreSQL: backed up with pg_dump, restored with pg_restore and the marks; the target of a copy. */
export interface PostgresAdmin extends CatalogueAdmin {
  readonly kind: 'postgres'
  /** Looks plants up by key on a connection of its own, holding no snapshot. */
  finder (): Promise<PlantFinder>
  /** Connections the service's instances hold to this catalogue now (marks saved beside one miss what it hands out next). */
  serviceConnections (): Promise<number>
  /** Moves a restored catalogue past the marks, its schema brought up to date first (after pg_restore). */
  applyMarks (marks: RestoreMarks, progress: (message: string) => void): Promise<RestoreOutcome>
  /**
   * Copies `source` whole into this catalogue (its schema made or brought up to date; it must hold no
   * catalogue yet) in one transaction, which commits only if `verify`, given the copy as read back
   * inside it, returns. Refusals (unreachable, not empty) are AdminRefused; a failed copy commits nothing.
   */
  receive (source: CatalogueSnapshot, options: CopyOptions): Promise<void>
}

/** The admin part of whichever engine holds a catalogue: `kind` says which, as the location's does. */
export type EngineAdmin = FolderAdmin | PostgresAdmin

export interface CopyOptions {
  batchSize: number
  verify: (copy: CatalogueSnapshot) => Promise<void>
}

export interface RestoreOptions {
  /** Marks saved from the replaced catalogue (when it is lost): used instead of reading it. */
  marks?: RestoreMarks
  progress: (message: string) => void
}

export interface RestoreResult {
  outcome: RestoreOutcome
  /** Where the replaced catalogue is kept (none when there was none). */
  replaced?: string
}
