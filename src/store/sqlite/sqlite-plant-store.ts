import type Database from 'better-sqlite3'
import type { BatchOperation, BatchOptions, BatchResult } from '../../catalogue/batch.js'
import { ANONYMOUS_WRITE, type FeedRead, type WriteMeta } from '../../catalogue/changes.js'
import { StorageUnavailable } from '../../catalogue/errors.js'
import { HISTORY_RETENTION_DAYS, type HistoryEntry } from '../../catalogue/history.js'
import type { NewPhoto, StoredFile } from '../../catalogue/photo.js'
import { completeFields, unitsOf, type Inventory, type PlantInput, type PlantPatch, type StoredPlant } from '../../catalogue/plant.js'
import { TRASH_RETENTION_MS, type TrashedPlant, type TrashPosition } from '../../catalogue/trash.js'
import type { KeyStore } from '../key-store.js'
import type { StockStore } from '../stock-store.js'
import { sqliteStockStore } from './stock-store.js'
import type { CountFilter, CreateResult, IdempotencyClaim, ListFilter, PlantStore, RevertOptions } from '../plant-store.js'
import { prepareDataDir } from './data-dir.js'
import { purgeExpiredHistory } from './history.js'
import { GroupCommit, inThreadCommitter, writerThreadCommitter, type Committer, type Failure } from './group-commit.js'
import { PLANT_COLUMNS, tupleToPlant, type PlantTuple } from './plant-rows.js'
import { ReaderPool } from './reader-pool.js'
import { walksOnlyItsPage } from './list-plan.js'
import { HEAD_SQL, sqliteReads, type ReadName, type Reads } from './reads.js'
import { migrate } from './migrations.js'
import { photoFileReader } from './photo-writes.js'
import { searchBacklog } from './search-backlog.js'
import { SqliteWebhookStore } from './webhook-store.js'
import { purgeExpiredTrash, trashEntryReader } from './trash.js'
import { sqliteKeyStore } from './sqlite-key-store.js'
import { connect, type PlantWriteOp } from './writes.js'

export interface SqliteStoreOptions {
  /** A folder for `catalogue.db`, or ':memory:' for a private in-memory database (tests). */
  dataDir: string
  feedRetentionMs: number
  /** How long a deleted plant stays in the trash (default 30 days). */
  trashRetentionMs?: number
  /** How long a plant's versions stay in its history (default HISTORY_RETENTION_DAYS). */
  historyRetentionMs?: number
  idempotencyTtlMs?: number
  now?: () => number
  /**
   * Threads for the expensive reads (reads.ts), each with a read-only connection (default 1; 0: on
   * the event loop). A private in-memory database reads on the event loop whatever this says.
   */
  readers?: number
  /**
   * The longest an expensive read may run before it is stopped and answered 503: default 250 ms on
   * the event loop, where it holds everyone, and 2,000 ms in a reader thread, where it holds no one.
   */
  queryTimeoutMs?: number
  /** How many names one search may reject as false matches of its index before it is answered 503 (list-query.ts REJECT_BUDGET; tests lower it). */
  searchRejectBudget?: number
  /** Where a long migration says how far it got (default: standard error). */
  progress?: (message: string) => void
  /** Told when the hourly retention purge fails (the service logs it); the next hour tries again. */
  onPurgeError?: (err: unknown) => void
}

type PlantRow = PlantTuple

const DAY = 86_400_000
const toPlant = tupleToPlant

// SQLite errors that mean "the storage cannot do this right now" rather than a bug.
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|PROTOCOL|NOTADB|CORRUPT)/
function storageError (err: unknown): unknown {
  if (!(err instanceof Error) && typeof (err as Failure).message === 'string') {
    const { code, message } = err as Failure
    err = Object.assign(new Error(message), code === undefined ? {} : { code })
  }
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' && UNAVAILABLE.test(code) ? new StorageUnavailable(`sqlite: ${code}`, err) : err
}

export function openSqliteStore (options: SqliteStoreOptions): PlantStore {
  if (options.dataDir === ':memory:') return new SqlitePlantStore(migratedInMemory(), ':memory:', options)
  const filename = prepareDataDir(options.dataDir)
  const db = connect(filename)
  migrate(db, options.progress ?? ((message) => { process.stderr.write(`${message}\n`) }))
  return new SqlitePlantStore(db, filename, options)
}

/** An empty database as the migrations leave it, made once a process (the image of it, serialised). */
let migratedImage: Buffer | undefined

/**
 * A private in-memory database, migrated: a copy of the process's migrated image. The tests open
 * hundreds of these, and running every migration again was most of the CPU of opening one.
 */
function migratedInMemory (): Database.Database {
  if (migratedImage === undefined) {
    const db = connect(':memory:')
    migrate(db)
    migratedImage = db.serialize()
    db.close()
  }
  return connect(migratedImage)
}

class SqlitePlantStore implements PlantStore {
  readonly engine = 'sqlite'
  readonly keys: KeyStore
  /** A file's key table is written through a connection of its own (sqlite-key-store.ts). */
  private readonly keyDb: Database.Database | undefined
  readonly webhooks: SqliteWebhookStore
  readonly stock: StockStore
  private readonly now: () => number
  private readonly idempotencyTtlMs: number
  private readonly listeners = new Set<() => void>()
  private readonly committer: Committer
  private readonly commits: GroupCommit
  private readonly timers: NodeJS.Timeout[] = []
  private dataVersion = 0
  private snapshotOpen = false
  /** The feed's head as the open read snapshot sees it, read at most once a snapshot. */
  private snapshotHead: number | undefined
  private readonly readPhotoFile: ReturnType<typeof photoFileReader>
  private readonly readTrashEntry: ReturnType<typeof trashEntryReader>
  /** The expensive reads: in reader threads on a file, else here on the event loop (in the turn's snapshot). */
  private readonly expensive: <K extends ReadName>(name: K, ...args: Parameters<Reads[K]>) => Promise<ReturnType<Reads[K]>>
  /** The same reads on this connection, in the turn's snapshot: a page that walks only itself runs here. */
  private readonly onLoop: Reads
  private readonly readers: ReaderPool | undefined
  private readonly s

  constructor (private readonly db: Database.Database, filename: string, private readonly options: SqliteStoreOptions) {
    this.now = options.now ?? Date.now
    this.idempotencyTtlMs = options.idempotencyTtlMs ?? DAY
    this.s = {
      get: db.prepare<[number], PlantRow>(`SELECT ${PLANT_COLUMNS} FROM plants p WHERE id = ?`).raw(true),
      purgeKeys: db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?'),
      // The keys still waiting to be indexed (key-book.ts): a few thousand at most, read whole.
      purgeRecentKeys: db.prepare('DELETE FROM recent_keys WHERE created_at <= ?'),
      head: db.prepare<[], number>(HEAD_SQL).pluck(),
      // The change before the first one newer than the cutoff (a walk from the oldest, in seq order), or the newest.
      lastPurged: db.prepare<[number], { seq: number | null }>(
        'SELECT coalesce((SELECT seq FROM changes WHERE at > ? ORDER BY seq LIMIT 1) - 1, (SELECT max(seq) FROM changes)) AS seq'),
      purgeChanges: db.prepare('DELETE FROM changes WHERE seq <= ?'),
      setFloor: db.prepare("UPDATE meta SET value = max(value, ?) WHERE key = 'feed_floor'"),
      ping: db.prepare('SELECT 1'),
      // One statement, so one snapshot: the status counts and the units' counters of one moment.
      inventory: db.prepare<[], { key: string, n: number }>(`SELECT substr(name, 8) AS key, seq AS n FROM sqlite_sequence WHERE name IN ('status:available', 'status:pending', 'status:sold')
        UNION ALL SELECT key, value FROM meta WHERE key IN ('units_on_hand', 'units_reserved')`),
      beginRead: db.prepare('BEGIN'),
      endRead: db.prepare('COMMIT'),
      // Prepared once: db.pragma() compiles its statement on every call, and this runs after every commit.
      dataVersion: db.prepare<[], number>('PRAGMA data_version').pluck()
    }
    // A file is written from a writer thread so no fsync blocks the event loop; a private
    // in-memory database cannot be shared with a thread, so it commits here.
    if (filename === ':memory:') {
      // The writes share this connection: the read snapshot must be closed before a write begins.
      const inThread = inThreadCommitter(db, this.idempotencyTtlMs)
      this.committer = { commit: async (batch) => { this.endSnapshot(); return await inThread.commit(batch) }, close: inThread.close }
    } else {
      this.committer = writerThreadCommitter(filename, this.idempotencyTtlMs)
    }
    this.commits = new GroupCommit(this.committer, storageError, (changed) => this.notify(changed))
    this.keyDb = filename === ':memory:' ? undefined : connect(filename)
    this.keys = sqliteKeyStore(this.keyDb ?? db)
    this.readPhotoFile = photoFileReader(db)
    this.readTrashEntry = trashEntryReader(db)
    this.webhooks = new SqliteWebhookStore(db, this.endSnapshot, async (op) => await this.commits.run(op))
    this.stock = sqliteStockStore(db, (fn) => this.read(fn), (op) => this.commits.run(op), () => this.now())
    const readers = filename === ':memory:' ? 0 : options.readers ?? 1
    const searchRejectBudget = options.searchRejectBudget
    const onLoop = sqliteReads(db, { queryTimeoutMs: options.queryTimeoutMs ?? 250, searchRejectBudget })
    this.onLoop = onLoop
    if (readers > 0) {
      const pool = new ReaderPool(filename, readers, { queryTimeoutMs: options.queryTimeoutMs ?? 2_000, searchRejectBudget })
      this.readers = pool
      this.expensive = async (name, ...args) => await pool.run(name, ...args).catch((err: unknown) => { throw storageError(err) })
    } else {
      this.expensive = async (name, ...args) => this.read(() => (onLoop[name] as (...a: typeof args) => ReturnType<Reads[typeof name]>)(...args))
    }
    this.dataVersion = this.s.dataVersion.get()!
    // A purge that fails (the disk full, the file locked by another process too long) is told, and the
    // next hour tries again: thrown from a timer, it would end the process.
    const purge = (): void => {
      try {
        this.purge()
      } catch (err) {
        options.onPurgeError?.(err)
      }
    }
    purge()
    this.timers.push(setInterval(purge, 3_600_000).unref())
    // Commits by other processes on the same file (WORKERS > 1) wake this process's feed too.
    this.timers.push(setInterval(() => { this.watchOtherWriters() }, 200).unref())
  }

  create (fields: PlantInput, idempotency?: IdempotencyClaim, { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<CreateResult> {
    return this.commits.run({ kind: 'create', fields: completeFields(fields), idempotency, now: this.now(), actor })
  }

  update (id: number, fields: PlantInput, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.commits.run({ kind: 'update', id, fields: completeFields(fields), expectedVersions, now: this.now(), actor })
  }

  remove (id: number, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<void> {
    return this.commits.run({ kind: 'remove', id, expectedVersions, now: this.now(), actor })
  }

  get trashRetentionMs (): number {
    return this.options.trashRetentionMs ?? TRASH_RETENTION_MS
  }

  async trash (after: TrashPosition | undefined, limit: number): Promise<TrashedPlant[]> {
    return await this.expensive('trash', after, limit)
  }

  async trashed (id: number): Promise<TrashedPlant | undefined> {
    return this.read(() => this.readTrashEntry(id))
  }

  restoreTrashed (id: number, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.commits.run({ kind: 'restore-trashed', id, expectedVersions, now: this.now(), actor })
  }

  purgeTrashed (id: number): Promise<void> {
    return this.commits.run({ kind: 'purge-trashed', id, now: this.now(), actor: ANONYMOUS_WRITE.actor })
  }

  async history (id: number, before: number | undefined, limit: number): Promise<HistoryEntry[] | undefined> {
    return await this.expensive('history', id, before, limit)
  }

  revert (id: number, version: number, { expectedVersions, status = false }: RevertOptions = {}, { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.commits.run({ kind: 'revert', id, version, expectedVersions, status, now: this.now(), actor })
  }

  async batch (operations: BatchOperation[], idempotency?: IdempotencyClaim, { actor }: WriteMeta = ANONYMOUS_WRITE, { results = true, after }: BatchOptions = {}): Promise<BatchResult> {
    // Nothing to prepare beside the batch ahead here: the writer thread works one group at a time.
    if (after !== undefined) await after
    const now = this.now()
    const ops = operations.map((o): PlantWriteOp => o.op === 'create'
      ? { kind: 'create', fields: completeFields(o.fields), now, actor }
      : o.op === 'update'
        ? { kind: 'update', id: o.id, fields: completeFields(o.fields), expectedVersions: o.expectedVersions, now, actor }
        : o.op === 'patch'
          ? { kind: 'patch', id: o.id, patch: o.patch, expectedVersions: o.expectedVersions, now, actor }
          : { kind: 'remove', id: o.id, expectedVersions: o.expectedVersions, now, actor })
    // One write of the group commit: its savepoint makes it all or nothing (writes.ts).
    return this.commits.run({ kind: 'batch', ops, idempotency, now, actor, ...(results ? {} : { results: false }) })
  }

  addPhoto (id: number, photo: NewPhoto, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.commits.run({ kind: 'add-photo', id, photo, expectedVersions, now: this.now(), actor })
  }

  removePhoto (id: number, photoId: string, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.commits.run({ kind: 'remove-photo', id, photoId, expectedVersions, now: this.now(), actor })
  }

  orderPhotos (id: number, order: string[], expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.commits.run({ kind: 'order-photos', id, order, expectedVersions, now: this.now(), actor })
  }

  async photoFile (name: string, chunk?: number): Promise<StoredFile | undefined> {
    return this.read(() => this.readPhotoFile(name, chunk))
  }

  async get (id: number): Promise<StoredPlant | undefined> {
    const row = this.read(() => this.s.get.get(id))
    return row && toPlant(row)
  }

  patch (id: number, patch: PlantPatch, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.commits.run({ kind: 'patch', id, patch, expectedVersions, now: this.now(), actor })
  }

  async list (filter: ListFilter): Promise<StoredPlant[]> {
    // A page with no filter reads its own rows from the sort's index and no more, like as many
    // lookups by id: the round trip to a thread would cost more than the read.
    if (walksOnlyItsPage(filter)) return this.read(() => this.onLoop.list(filter))
    return await this.expensive('list', filter)
  }

  async count (filter: CountFilter, cap: number): Promise<number> {
    return await this.expensive('count', filter, cap)
  }

  async inventory (): Promise<Inventory> {
    const kept = new Map(this.read(() => this.s.inventory.all()).map(({ key, n }) => [key, n]))
    return {
      available: kept.get('available') ?? 0,
      pending: kept.get('pending') ?? 0,
      sold: kept.get('sold') ?? 0,
      units: unitsOf(kept.get('units_on_hand') ?? 0, kept.get('units_reserved') ?? 0)
    }
  }

  async changes (after: number, limit: number): Promise<FeedRead> {
    return await this.expensive('changes', after, limit)
  }

  async head (): Promise<number> {
    return this.read(() => this.snapshotHeadValue())
  }

  feedPosition (): number {
    return this.read(() => this.snapshotHeadValue())
  }

  onCommit (listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  async ping (): Promise<void> {
    this.read(() => this.s.ping.get())
  }

  async schemaVersion (): Promise<number> {
    return this.read(() => this.db.pragma('user_version', { simple: true }) as number)
  }

  async close (): Promise<void> {
    for (const t of this.timers) clearInterval(t)
    await this.commits.drain()
    await this.readers?.close()
    await this.committer.close()
    this.endSnapshot()
    this.keyDb?.close()
    if (this.db.open) {
      // A clean stop leaves the search index whole (its backlog applied), so an older release that
      // writes the index directly can run on the file after a rollback.
      try {
        this.db.transaction(() => { searchBacklog(this.db).settle(0, true) }).immediate()
      } finally {
        this.db.close()
      }
    }
  }

  /** Drops changes older than the retention, idempotency keys older than their TTL, and the trash and history past theirs. */
  purge (): void {
    this.endSnapshot()
    const now = this.now()
    this.db.transaction(() => {
      // The search index takes its backlog first: the change rows about to go hold it.
      searchBacklog(this.db).settle(0, true)
      const last = this.s.lastPurged.get(now - this.options.feedRetentionMs)?.seq
      if (last != null) {
        this.s.purgeChanges.run(last)
        this.s.setFloor.run(last)
      }
      this.s.purgeKeys.run(now - this.idempotencyTtlMs)
      this.s.purgeRecentKeys.run(now - this.idempotencyTtlMs)
    }).immediate()
    purgeExpiredTrash(this.db, now - this.trashRetentionMs)
    purgeExpiredHistory(this.db, now - (this.options.historyRetentionMs ?? HISTORY_RETENTION_DAYS * DAY))
  }

  /**
   * Reads in one turn of the event loop share one read transaction, ended in that turn's check
   * phase: an autocommit read takes and drops the WAL read lock (two fcntl calls) every time,
   * about half of a read by id. A request that arrives later starts a newer snapshot, and every
   * acknowledged write ends the current one (notify), so no read misses a write it could know of.
   */
  private read<T> (fn: () => T): T {
    try {
      if (!this.snapshotOpen) {
        this.s.beginRead.run()
        this.snapshotOpen = true
        setImmediate(this.endSnapshot)
      }
      return fn()
    } catch (err) {
      throw storageError(err)
    }
  }

  /** Inside read(): the head in the current snapshot, so it matches whatever else the snapshot reads. */
  private snapshotHeadValue (): number {
    return (this.snapshotHead ??= this.s.head.get()!)
  }

  private readonly endSnapshot = (): void => {
    if (!this.snapshotOpen) return
    this.snapshotOpen = false
    this.snapshotHead = undefined
    if (!this.db.open || !this.db.inTransaction) return
    try {
      this.s.endRead.run()
    } catch {
      if (this.db.inTransaction) this.db.exec('ROLLBACK')
    }
  }

  /** After a commit: reads start afresh; listeners hear of it when it changed the feed (`changed`). */
  private notify (changed = true): void {
    // A write queued as the store closed (a lease given up by an app closed after its store) lands with no one left to tell.
    if (!this.db.open) return
    this.endSnapshot()
    this.dataVersion = this.s.dataVersion.get()!
    if (!changed) return
    for (const listener of this.listeners) listener()
  }

  private watchOtherWriters (): void {
    if (this.listeners.size === 0 || !this.db.open) return
    const v = this.s.dataVersion.get()!
    if (v !== this.dataVersion) this.notify()
  }
}
