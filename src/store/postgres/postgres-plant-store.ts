import pg from 'pg'
import type { BatchOperation, BatchOptions, BatchResult } from '../../catalogue/batch.js'
import { ANONYMOUS_WRITE, crossingOfChange, recordOfChange, type Change, type FeedRead, type WriteMeta } from '../../catalogue/changes.js'
import { FeedGone, QueryTooSlow, StorageUnavailable } from '../../catalogue/errors.js'
import { fieldChanges, HISTORY_RETENTION_DAYS, type HistoryEntry } from '../../catalogue/history.js'
import { nameKey } from '../../catalogue/name-key.js'
import { nameOrderKey } from '../../catalogue/name-order.js'
import type { NewPhoto, StoredFile } from '../../catalogue/photo.js'
import { completeFields, emptyInventory, toRecord, unitsOf, type Inventory, type PlantInput, type PlantPatch, type PlantStatus, type StoredPlant } from '../../catalogue/plant.js'
import { timestamp } from '../../catalogue/price-sku-barcode.js'
import type { KeyStore } from '../key-store.js'
import type { StockStore } from '../stock-store.js'
import { postgresStockStore } from './stock-store.js'
import type { CountFilter, CreateResult, IdempotencyClaim, ListFilter, PlantStore, RevertOptions } from '../plant-store.js'
import { digestedClaim } from '../idempotency.js'
import { toWriteOp, writeBatch } from './batch-writes.js'
import { purgeExpiredHistory, readHistory, revertPlant } from './history.js'
import { ChangeWatcher } from './change-watcher.js'
import { listQuery, rarestFirst, toKey } from './list-query.js'
import { fillNameKeyColumn } from './name-keys.js'
import { fillSearchKeys } from './search-columns.js'
import { Session, clientConfig, parseDatabaseUrl, type Timeouts } from './connection.js'
import { GroupCommit, type Tx } from './group-commit.js'
import type { MoveOp } from './move-group.js'
import { toPlant, type PlantRow, type WriteOp } from './group-writes.js'
import { migrate } from './migrate.js'
import { postgresKeyStore } from './postgres-key-store.js'
import { addPhoto, FileReader, fileReadKey, orderPhotos, removePhoto, type PhotoWrite } from './photo-writes.js'
import { ReadBatch } from './read-batch.js'
import { isUnavailable } from './storage-errors.js'
import { toPostgresText } from './text-escape.js'
import { PostgresWebhookStore } from './webhook-store.js'
import { purgeExpiredTrash, purgeTrashed, readTrash, readTrashEntry, restoreTrashed } from './trash.js'
import { TRASH_RETENTION_MS, type TrashedPlant, type TrashPosition } from '../../catalogue/trash.js'

export interface PostgresStoreOptions {
  /** postgres://…; `?pool_max=N` sets the pool size (default 10). */
  connectionString: string
  feedRetentionMs: number
  /** How long a deleted plant stays in the trash (default 30 days). */
  trashRetentionMs?: number
  /** How long a plant's versions stay in its history (default HISTORY_RETENTION_DAYS). */
  historyRetentionMs?: number
  idempotencyTtlMs?: number
  now?: () => number
  /** The longest a request waits on PostgreSQL before it is answered 503 (default 1500 ms). */
  operationTimeoutMs?: number
  /** The longest opening a connection may take (default 1000 ms). */
  connectTimeoutMs?: number
  /** How often the feed's head is polled in case a notification was missed (default 500 ms). */
  pollIntervalMs?: number
  /** How long open() waits for a reachable database before serving 503s while it keeps trying (default 5000 ms). */
  startWaitMs?: number
  /** Told when the hourly retention purge fails (the service logs it); the next hour tries again. */
  onPurgeError?: (err: unknown) => void
}

interface ChangeRow { floor: number, head: number, seq: number | null, kind: Change['kind'], plant_id: number, version: number, actor: string, at: number, plant: string | null, stock_events: string | null }

const DAY = 86_400_000
const PLANT_COLUMNS = 'p.id, p.name, p.category, p.tags, p.status, p.version, p.photos, p.description, p.price, p.sku, p.barcode, p.created_at, p.updated_at, p.low_stock_at, p.on_hand, p.reserved, p.available'

const toDb = toPostgresText

// One statement, so the floor, the head and the page come from one snapshot: a purge cannot slip between them.
const CHANGES = `
SELECT f.value AS floor, h.value AS head, c.seq, c.kind, c.plant_id, c.version, c.actor, c.at, c.plant, c.stock_events
FROM meta f JOIN meta h ON h.key = 'feed_head'
LEFT JOIN LATERAL (SELECT * FROM changes WHERE seq > $1 ORDER BY seq LIMIT $2) c ON true
WHERE f.key = 'feed_floor'
ORDER BY c.seq`
const HEAD = "SELECT value FROM meta WHERE key = 'feed_head'"
const GET_PLANTS = `SELECT ${PLANT_COLUMNS} FROM plants p WHERE p.id = ANY ($1::bigint[])`
const COUNTS = "SELECT key, value FROM meta WHERE key IN ('count_available', 'count_pending', 'count_sold', 'count_units_on_hand', 'count_units_reserved')"

/** statement_timeout: the query itself is too slow, not the storage away. */
function tooSlowOr (err: unknown): unknown {
  const cause = err instanceof StorageUnavailable ? err.cause : err
  return (cause as { code?: unknown })?.code === '57014' ? new QueryTooSlow('the query ran past its time limit') : err
}

/**
 * Opens the catalogue on PostgreSQL and applies any pending migration. A malformed URL, refused
 * credentials or a failing migration stop start-up; an unreachable server does not: the store opens
 * unready, answers StorageUnavailable (503), and keeps trying until the database is there.
 */
export async function openPostgresStore (options: PostgresStoreOptions): Promise<PlantStore> {
  const { connectionString, poolMax } = parseDatabaseUrl(options.connectionString)
  const timeouts: Timeouts = { operationMs: options.operationTimeoutMs ?? 1_500, connectMs: options.connectTimeoutMs ?? 1_000 }
  const config = clientConfig(connectionString, timeouts)
  const pool = new pg.Pool({ ...config, max: poolMax ?? 10, idleTimeoutMillis: 10_000 })
  // An idle connection dropped by a server restart or the network: the pool forgets it and connects
  // anew on demand. Without this listener the error would crash the process.
  pool.on('error', () => {})
  // The pool stops listening while a connection is checked out; its error then fails the query in
  // progress, which is where it is handled.
  pool.on('connect', (client) => { client.on('error', () => {}) })
  const store = new PostgresPlantStore(pool, config, timeouts, options)
  try {
    await store.start(options.startWaitMs ?? 5_000)
  } catch (err) {
    await store.close()
    throw err
  }
  return store
}

class PostgresPlantStore implements PlantStore {
  readonly engine = 'postgres'
  readonly keys: KeyStore
  readonly webhooks: PostgresWebhookStore
  readonly stock: StockStore
  private readonly now: () => number
  private readonly idempotencyTtlMs: number
  private readonly session: Session
  private readonly commits: GroupCommit
  /** GETs by id (and inventory reads) of one turn of the event loop: one query, one checkout. */
  private readonly gets = new ReadBatch<number, StoredPlant | undefined>((ids) => this.loadPlants(ids), undefined)
  private readonly counts = new ReadBatch<'all', Inventory>(() => this.loadCounts(), emptyInventory())
  private readonly fileReader = new FileReader()
  private readonly files = new ReadBatch<string, StoredFile | undefined>((keys) => this.session.run((c) => this.fileReader.read(c, keys)), undefined)
  private readonly listeners = new Set<() => void>()
  private readonly timers: NodeJS.Timeout[] = []
  private watcher: ChangeWatcher | undefined
  private schema = ''
  /** The highest sequence listeners have been told of. */
  private announced = 0
  /** The feed's head as last seen committed (a commit, a notification, a poll): reads' Feed-Position. */
  private position = 0
  private isReady = false
  private ready: Promise<void>
  private markReady: () => void = () => {}
  /** Why the last attempt to reach and migrate the database failed, until one succeeds (readiness says it). */
  private startFailure: unknown
  private closed = false

  constructor (
    private readonly pool: pg.Pool,
    private readonly config: pg.ClientConfig,
    timeouts: Timeouts,
    private readonly options: PostgresStoreOptions
  ) {
    this.now = options.now ?? Date.now
    this.idempotencyTtlMs = options.idempotencyTtlMs ?? DAY
    this.ready = new Promise((resolve) => { this.markReady = resolve })
    this.session = new Session(pool, timeouts, () => this.ready)
    this.keys = postgresKeyStore(this.session)
    this.webhooks = new PostgresWebhookStore(this.session)
    this.commits = new GroupCommit(this.session, timeouts.operationMs, (head) => { this.seen(head) }, { now: () => this.now(), idempotencyTtlMs: this.idempotencyTtlMs })
    this.stock = postgresStockStore({ session: this.session, work: (work) => this.work(work), move: (op) => this.moveStock(op), now: () => this.now(), idempotencyTtlMs: this.idempotencyTtlMs })
  }

  /** Settles when migrated, or when `waitMs` passes with the database unreachable (it keeps trying). */
  async start (waitMs: number): Promise<void> {
    const first = this.initialise()
    const outcome = await Promise.race([
      first.then(() => 'ready' as const, (err: unknown) => err),
      new Promise<'waiting'>((resolve) => setTimeout(resolve, waitMs, 'waiting').unref())
    ])
    if (outcome === 'ready') return
    if (outcome !== 'waiting' && !isUnavailable(outcome)) throw outcome
    // Unreachable now: keep trying in the background; requests get 503 until it succeeds.
    void first.then(() => {}, (err: unknown) => { this.startFailure = err; this.initialiseLater(0) })
  }

  private initialiseLater (failures: number): void {
    if (this.closed) return
    const timer = setTimeout(() => {
      this.initialise().catch((err: unknown) => { this.startFailure = err; this.initialiseLater(failures + 1) })
    }, Math.min(5_000, 250 * 2 ** failures))
    timer.unref()
    this.timers.push(timer)
  }

  private async initialise (): Promise<void> {
    await migrate(this.config)
    await fillNameKeyColumn(this.config, 'name_key', (name) => toKey(nameKey(name)))
    await fillNameKeyColumn(this.config, 'name_order_key', nameOrderKey)
    await fillSearchKeys(this.config)
    // The schema the connection string's search_path selects: it scopes this store's notifications.
    const client = new pg.Client(this.config)
    client.on('error', () => {})
    try {
      await client.connect()
      const { rows } = await client.query<{ schema: string, head: number }>(
        "SELECT current_schema() AS schema, value AS head FROM meta WHERE key = 'feed_head'")
      this.schema = rows[0].schema
      this.announced = rows[0].head
      this.position = rows[0].head
    } finally {
      await client.end().catch(() => {})
    }
    if (this.closed) return
    this.isReady = true
    this.startFailure = undefined
    this.markReady()
    // A failed purge is not worth refusing to start for: it is told, and the next hour tries again.
    const purge = (): Promise<void> => this.purge().catch((err: unknown) => { this.options.onPurgeError?.(err) })
    await purge()
    this.timers.push(setInterval(() => { void purge() }, 3_600_000).unref())
    // Always watched, not only for subscribers: reads' Feed-Position must follow other instances' commits.
    this.watch()
  }

  create (fields: PlantInput, idempotency?: IdempotencyClaim, { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<CreateResult> {
    return this.write({ kind: 'create', fields: completeFields(fields), idempotency: digestedClaim(idempotency), actor })
  }

  update (id: number, fields: PlantInput, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.write({ kind: 'update', id, fields: completeFields(fields), expectedVersions, actor })
  }

  patch (id: number, patch: PlantPatch, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.write({ kind: 'patch', id, patch, expectedVersions, actor })
  }

  remove (id: number, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<void> {
    return this.write({ kind: 'remove', id, expectedVersions, actor })
  }

  get trashRetentionMs (): number {
    return this.options.trashRetentionMs ?? TRASH_RETENTION_MS
  }

  trash (after: TrashPosition | undefined, limit: number): Promise<TrashedPlant[]> {
    return this.session.run((c) => readTrash(c, after, limit))
  }

  trashed (id: number): Promise<TrashedPlant | undefined> {
    return this.session.run((c) => readTrashEntry(c, id))
  }

  restoreTrashed (id: number, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.work((tx) => restoreTrashed(tx, id, expectedVersions, this.now(), actor))
  }

  purgeTrashed (id: number): Promise<void> {
    return this.work((tx) => purgeTrashed(tx, id))
  }

  history (id: number, before: number | undefined, limit: number): Promise<HistoryEntry[] | undefined> {
    return this.session.run((c) => readHistory(c, id, before, limit))
  }

  revert (id: number, version: number, options: RevertOptions = {}, { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.work((tx) => revertPlant(tx, id, version, options, actor, this.now(), this.idempotencyTtlMs))
  }

  async batch (operations: BatchOperation[], idempotency?: IdempotencyClaim, { actor }: WriteMeta = ANONYMOUS_WRITE, { results = true, after }: BatchOptions = {}): Promise<BatchResult> {
    const ops = operations.map((o) => toWriteOp(o, actor))
    const write = (tx: Tx): Promise<BatchResult> => writeBatch(tx, ops, digestedClaim(idempotency), this.now(), this.idempotencyTtlMs, after)
    // A unit of work of the group commit: one transaction, the batch in a savepoint of it (batch-writes.ts);
    // one that follows a batch handed over before it is prepared beside that one, and written after it.
    const result = after === undefined ? await this.work(write, ops.length) : await this.beside(write, ops.length)
    return results ? result : { plants: [], replayed: result.replayed }
  }

  addPhoto (id: number, photo: NewPhoto, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.work(async (tx) => this.photoChanged(tx, id, await addPhoto(tx, id, photo, expectedVersions, this.now()), actor))
  }

  removePhoto (id: number, photoId: string, expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.work(async (tx) => this.photoChanged(tx, id, await removePhoto(tx, id, photoId, expectedVersions, this.now()), actor))
  }

  orderPhotos (id: number, order: string[], expectedVersions?: number[], { actor }: WriteMeta = ANONYMOUS_WRITE): Promise<StoredPlant> {
    return this.work(async (tx) => this.photoChanged(tx, id, await orderPhotos(tx, id, order, expectedVersions, this.now()), actor))
  }

  photoFile (name: string, chunk?: number): Promise<StoredFile | undefined> {
    return this.files.get(fileReadKey(name, chunk))
  }

  private photoChanged (tx: Tx, id: number, { row, before, photos, version, at }: PhotoWrite, actor: string): StoredPlant {
    const plant = toPlant({ ...row, id, status: row.status as PlantStatus, version, photos: '[]', updated_at: at })
    plant.photos = photos
    tx.change('updated', id, version, toRecord(plant), at, actor, fieldChanges({ ...plant, photos: before }, plant))
    return plant
  }

  get (id: number): Promise<StoredPlant | undefined> {
    return this.gets.get(id)
  }

  async list (filter: ListFilter): Promise<StoredPlant[]> {
    try {
      const { rows } = await this.session.run(async (c) => {
        const tags = await rarestFirst(c, (filter.tags ?? []).map(toDb))
        const { text, values } = listQuery({ ...filter, tags }, PLANT_COLUMNS)
        return await c.query<PlantRow>(text, values)
      })
      return rows.map(toPlant)
    } catch (err) {
      throw tooSlowOr(err)
    }
  }

  async count (filter: CountFilter, cap: number): Promise<number> {
    try {
      const { rows } = await this.session.run(async (c) => {
        const tags = await rarestFirst(c, (filter.tags ?? []).map(toDb))
        // The list's walk by id, stopped at the cap: the order keeps the plan a page uses (an index walk that stops early).
        const { text, values } = listQuery({ ...filter, tags, afterId: 0, limit: cap }, '1')
        return await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM (${text}) walk`, values)
      })
      return rows[0].n
    } catch (err) {
      throw tooSlowOr(err)
    }
  }

  async inventory (): Promise<Inventory> {
    // A copy each: callers of one batch must not share a mutable object.
    const counts = await this.counts.get('all')
    return { ...counts, units: { ...counts.units } }
  }

  private async loadPlants (ids: number[]): Promise<Map<number, StoredPlant | undefined>> {
    const { rows } = await this.session.run((c) => c.query<PlantRow>({ name: 'plants-get', text: GET_PLANTS, values: [ids] }))
    return new Map(rows.map((r) => [Number(r.id), toPlant(r)]))
  }

  private async loadCounts (): Promise<Map<'all', Inventory>> {
    const { rows } = await this.session.run((c) => c.query<{ key: string, value: number }>({ name: 'plants-counts', text: COUNTS }))
    const kept = new Map(rows.map(({ key, value }) => [key.slice('count_'.length), Number(value)]))
    const counts: Inventory = {
      available: kept.get('available') ?? 0,
      pending: kept.get('pending') ?? 0,
      sold: kept.get('sold') ?? 0,
      units: unitsOf(kept.get('units_on_hand') ?? 0, kept.get('units_reserved') ?? 0)
    }
    return new Map([['all', counts]])
  }

  async changes (after: number, limit: number): Promise<FeedRead> {
    const { rows } = await this.session.run((c) => c.query<ChangeRow>(CHANGES, [after, limit]))
    if (after < rows[0].floor) throw new FeedGone('expired')
    if (after > rows[0].head) throw new FeedGone('ahead')
    const found = rows.filter((r) => r.seq !== null)
    const items = found.map((r): Change =>
      ({ seq: r.seq!, kind: r.kind, id: r.plant_id, version: r.version, actor: r.actor, at: timestamp(Number(r.at)), plant: recordOfChange(r.plant, r.version) }))
    return { items, next: items.length > 0 ? items[items.length - 1].seq : after, crossings: found.flatMap((r) => crossingOfChange(r.seq!, r.stock_events)) }
  }

  async head (): Promise<number> {
    const { rows } = await this.session.run((c) => c.query<{ value: number }>(HEAD))
    return rows[0].value
  }

  /**
   * No round trip: the head last seen committed, which any read that starts afterwards reflects.
   * The watcher keeps it within milliseconds of other instances' commits (half a second without NOTIFY).
   */
  feedPosition (): number {
    if (!this.isReady) throw new StorageUnavailable('postgres: not ready', this.startFailure)
    return this.position
  }

  onCommit (listener: () => void): () => void {
    this.listeners.add(listener)
    this.watch()
    return () => this.listeners.delete(listener)
  }

  async ping (): Promise<void> {
    // Not migrated yet: say at once what the last attempt met, rather than wait out a deadline.
    if (!this.isReady && this.startFailure !== undefined) throw new StorageUnavailable('postgres: not reachable yet', this.startFailure)
    try {
      await this.session.run((c) => c.query('SELECT 1'))
    } catch (err) {
      // Readiness: whatever keeps us from the database (credentials included) means "not ready".
      throw err instanceof StorageUnavailable ? err : new StorageUnavailable('postgres: not reachable', err)
    }
  }

  async schemaVersion (): Promise<number> {
    // Another instance of a newer release may have migrated further since this one started: read it live.
    const { rows } = await this.session.run((c) => c.query<{ version: number }>('SELECT coalesce(max(version), 0)::int AS version FROM schema_migrations'))
    return rows[0].version
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const t of this.timers) clearTimeout(t)
    await this.commits.drain()
    await this.watcher?.stop()
    // end() waits for every connection's goodbye; a frozen server would hold shutdown for ever.
    await Promise.race([this.pool.end().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 2_000).unref())])
  }

  /** Drops changes older than the retention, idempotency keys older than their TTL, the trash and history past theirs (all instances may run it). */
  async purge (): Promise<void> {
    const now = this.now()
    // The times are whole milliseconds (BIGINT): a retention in days need not be (TRASH_RETENTION_DAYS=0.0000001 is 8.64 ms).
    const before = (retentionMs: number): number => Math.floor(now - retentionMs)
    await this.session.transaction(async (c) => {
      await c.query("SET LOCAL statement_timeout = '60s'")
      const { rows } = await c.query<{ seq: number | null }>('SELECT max(seq) AS seq FROM changes WHERE at <= $1', [before(this.options.feedRetentionMs)])
      const last = rows[0].seq
      if (last !== null) {
        await c.query('DELETE FROM changes WHERE seq <= $1', [last])
        await c.query("UPDATE meta SET value = GREATEST(value, $1) WHERE key = 'feed_floor'", [last])
      }
      await c.query('DELETE FROM idempotency_keys WHERE created_at <= $1', [before(this.idempotencyTtlMs)])
    }, 60_000)
    await purgeExpiredTrash((work) => this.session.transaction(work, 60_000), before(this.trashRetentionMs))
    await purgeExpiredHistory((work) => this.session.transaction(work, 60_000), before(this.options.historyRetentionMs ?? HISTORY_RETENTION_DAYS * DAY))
  }

  private write<T> (op: WriteOp): Promise<T> {
    if (this.closed) return Promise.reject(new StorageUnavailable('postgres: store closed'))
    return this.commits.write(op)
  }

  private work<T> (work: (tx: Tx) => Promise<T>, writes?: number): Promise<T> {
    if (this.closed) return Promise.reject(new StorageUnavailable('postgres: store closed'))
    return this.commits.run(work, writes)
  }

  private moveStock<T> (op: MoveOp): Promise<T> {
    if (this.closed) return Promise.reject(new StorageUnavailable('postgres: store closed'))
    return this.commits.move(op)
  }

  private beside<T> (work: (tx: Tx) => Promise<T>, writes?: number): Promise<T> {
    if (this.closed) return Promise.reject(new StorageUnavailable('postgres: store closed'))
    return this.commits.runBeside(work, writes)
  }

  /**
   * Tells listeners once per advance of the feed's head, whichever instance committed it. A polled
   * head is taken as it is even when lower (a restored database): reads must never name a position
   * beyond the head, and a poll is never newer than what it saw committed.
   */
  private seen (head: number, polled = false): void {
    if (polled && head < this.position) {
      this.position = head
      this.announced = Math.min(this.announced, head)
    }
    if (head > this.position) this.position = head
    if (!(head > this.announced)) return
    this.announced = head
    for (const listener of this.listeners) listener()
  }

  private watch (): void {
    if (this.watcher || this.closed || !this.schema) return
    this.watcher = new ChangeWatcher(this.config, this.schema, this.options.pollIntervalMs ?? 500, () => this.head(), (head, polled) => { this.seen(head, polled) })
    this.watcher.start()
  }
}
