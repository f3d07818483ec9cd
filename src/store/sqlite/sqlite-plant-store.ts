import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import type { PlantFields, PlantStatus } from '../../plants/schemas.js'
import {
  FeedGone, IdempotencyKeyReused, PlantNotFound, StorageUnavailable, VersionMismatch,
  type Change, type ChangePage, type CreateResult, type IdempotencyClaim, type ListFilter, type PlantStore, type StoredPlant
} from '../plant-store.js'
import { GroupCommit } from './group-commit.js'
import { migrate } from './migrations.js'

export interface SqliteStoreOptions {
  /** A folder for `catalogue.db`, or ':memory:' for a private in-memory database (tests). */
  dataDir: string
  feedRetentionMs: number
  idempotencyTtlMs?: number
  now?: () => number
}

interface PlantRow { id: number, name: string, category: string | null, tags: string, status: PlantStatus, version: number }
interface ChangeRow { seq: number, kind: Change['kind'], plant_id: number, version: number, plant: string | null }

const DAY = 86_400_000
const toPlant = (r: PlantRow): StoredPlant =>
  ({ id: r.id, name: r.name, category: r.category, tags: JSON.parse(r.tags), status: r.status, version: r.version })
const record = (p: StoredPlant): string =>
  JSON.stringify({ id: p.id, name: p.name, category: p.category, tags: p.tags, status: p.status })

// SQLite errors that mean "the storage cannot do this right now" rather than a bug.
const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|READONLY|PROTOCOL|NOTADB|CORRUPT)/
function storageError (err: unknown): unknown {
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' && UNAVAILABLE.test(code) ? new StorageUnavailable(`sqlite: ${code}`, err) : err
}

export function openSqliteStore (options: SqliteStoreOptions): PlantStore {
  let filename = ':memory:'
  if (options.dataDir !== ':memory:') {
    mkdirSync(options.dataDir, { recursive: true })
    filename = join(options.dataDir, 'catalogue.db')
  }
  const db = new Database(filename)
  db.pragma('journal_mode = WAL')
  // FULL: a commit is fsynced before it returns, so an acknowledged write survives power loss.
  db.pragma('synchronous = FULL')
  db.pragma('busy_timeout = 5000')
  migrate(db)
  return new SqlitePlantStore(db, options)
}

class SqlitePlantStore implements PlantStore {
  readonly engine = 'sqlite'
  private readonly now: () => number
  private readonly idempotencyTtlMs: number
  private readonly listeners = new Set<() => void>()
  private readonly commits: GroupCommit
  private readonly timers: NodeJS.Timeout[] = []
  private dataVersion = 0
  private readonly listQueries = new Map<string, Database.Statement>()
  private readonly s

  constructor (private readonly db: Database.Database, private readonly options: SqliteStoreOptions) {
    this.now = options.now ?? Date.now
    this.idempotencyTtlMs = options.idempotencyTtlMs ?? DAY
    this.s = {
      get: db.prepare<[number], PlantRow>('SELECT id, name, category, tags, status, version FROM plants WHERE id = ?'),
      version: db.prepare<[number], { version: number }>('SELECT version FROM plants WHERE id = ?'),
      insert: db.prepare('INSERT INTO plants (name, category, tags, status, version, created_at, updated_at) VALUES (?, ?, ?, ?, 1, ?, ?)'),
      update: db.prepare('UPDATE plants SET name = ?, category = ?, tags = ?, status = ?, version = ?, updated_at = ? WHERE id = ?'),
      delete: db.prepare('DELETE FROM plants WHERE id = ?'),
      insertTag: db.prepare('INSERT INTO plant_tags (tag, plant_id) VALUES (?, ?)'),
      deleteTags: db.prepare('DELETE FROM plant_tags WHERE plant_id = ?'),
      getKey: db.prepare<[string, number], { request_hash: string, response: string }>(
        'SELECT request_hash, response FROM idempotency_keys WHERE key = ? AND created_at > ?'),
      putKey: db.prepare('INSERT OR REPLACE INTO idempotency_keys (key, request_hash, plant_id, response, created_at) VALUES (?, ?, ?, ?, ?)'),
      purgeKeys: db.prepare('DELETE FROM idempotency_keys WHERE created_at <= ?'),
      insertChange: db.prepare('INSERT INTO changes (kind, plant_id, version, plant, at) VALUES (?, ?, ?, ?, ?)'),
      changes: db.prepare<[number, number], ChangeRow>('SELECT seq, kind, plant_id, version, plant FROM changes WHERE seq > ? ORDER BY seq LIMIT ?'),
      floor: db.prepare<[], { value: number }>("SELECT value FROM meta WHERE key = 'feed_floor'"),
      lastPurged: db.prepare<[number], { seq: number | null }>('SELECT max(seq) AS seq FROM changes WHERE at <= ?'),
      purgeChanges: db.prepare('DELETE FROM changes WHERE seq <= ?'),
      setFloor: db.prepare("UPDATE meta SET value = max(value, ?) WHERE key = 'feed_floor'"),
      ping: db.prepare('SELECT 1')
    }
    this.commits = new GroupCommit(db, storageError, () => this.notify())
    this.dataVersion = db.pragma('data_version', { simple: true }) as number
    this.purge()
    this.timers.push(setInterval(() => { this.purge() }, 3_600_000).unref())
    // Commits by other processes on the same file (WORKERS > 1) wake this process's feed too.
    this.timers.push(setInterval(() => { this.watchOtherWriters() }, 200).unref())
  }

  create (fields: PlantFields, idempotency?: IdempotencyClaim): Promise<CreateResult> {
    return this.commits.run(() => {
      const now = this.now()
      if (idempotency) {
        const earlier = this.s.getKey.get(idempotency.key, now - this.idempotencyTtlMs)
        if (earlier) {
          if (earlier.request_hash !== idempotency.requestHash) throw new IdempotencyKeyReused()
          return { plant: JSON.parse(earlier.response) as StoredPlant, replayed: true }
        }
      }
      const { name, category, tags, status } = fields
      const id = Number(this.s.insert.run(name, category, JSON.stringify(tags), status, now, now).lastInsertRowid)
      for (const tag of tags) this.s.insertTag.run(tag, id)
      const plant: StoredPlant = { id, name, category, tags, status, version: 1 }
      if (idempotency) this.s.putKey.run(idempotency.key, idempotency.requestHash, id, JSON.stringify(plant), now)
      this.s.insertChange.run('created', id, 1, record(plant), now)
      return { plant, replayed: false }
    })
  }

  update (id: number, fields: PlantFields, expectedVersions?: number[]): Promise<StoredPlant> {
    return this.commits.run(() => {
      const current = this.s.version.get(id)
      if (!current) throw new PlantNotFound()
      if (expectedVersions && !expectedVersions.includes(current.version)) throw new VersionMismatch()
      const now = this.now()
      const version = current.version + 1
      const { name, category, tags, status } = fields
      this.s.update.run(name, category, JSON.stringify(tags), status, version, now, id)
      this.s.deleteTags.run(id)
      for (const tag of tags) this.s.insertTag.run(tag, id)
      const plant: StoredPlant = { id, name, category, tags, status, version }
      this.s.insertChange.run('updated', id, version, record(plant), now)
      return plant
    })
  }

  remove (id: number): Promise<void> {
    return this.commits.run(() => {
      const current = this.s.version.get(id)
      if (!current) throw new PlantNotFound()
      this.s.delete.run(id)
      this.s.deleteTags.run(id)
      this.s.insertChange.run('deleted', id, current.version + 1, null, this.now())
    })
  }

  async get (id: number): Promise<StoredPlant | undefined> {
    const row = this.read(() => this.s.get.get(id))
    return row && toPlant(row)
  }

  async list (filter: ListFilter): Promise<StoredPlant[]> {
    const tags = filter.tags ?? []
    const shape = `${filter.status ? 's' : ''}${filter.category ? 'c' : ''}${tags.length}`
    let query = this.listQueries.get(shape)
    if (!query) {
      query = this.db.prepare(listSql(filter.status !== undefined, filter.category !== undefined, tags.length))
      this.listQueries.set(shape, query)
    }
    const args: unknown[] = tags.length > 0 ? [tags[0], filter.afterId, ...tags.slice(1)] : [filter.afterId]
    if (filter.status) args.push(filter.status)
    if (filter.category) args.push(filter.category)
    args.push(filter.limit)
    const q = query
    return this.read(() => q.all(...args) as PlantRow[]).map(toPlant)
  }

  async changes (after: number, limit: number): Promise<ChangePage> {
    return this.read(() => {
      if (after < this.s.floor.get()!.value) throw new FeedGone()
      const items = this.s.changes.all(after, limit).map((r): Change =>
        ({ seq: r.seq, kind: r.kind, id: r.plant_id, version: r.version, plant: r.plant === null ? null : JSON.parse(r.plant) }))
      return { items, next: items.length > 0 ? items[items.length - 1].seq : after }
    })
  }

  onCommit (listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  async ping (): Promise<void> {
    this.read(() => this.s.ping.get())
  }

  async close (): Promise<void> {
    for (const t of this.timers) clearInterval(t)
    await this.commits.drain()
    if (this.db.open) this.db.close()
  }

  /** Drops changes older than the retention and idempotency keys older than their TTL. */
  purge (): void {
    const now = this.now()
    this.db.transaction(() => {
      const last = this.s.lastPurged.get(now - this.options.feedRetentionMs)?.seq
      if (last != null) {
        this.s.purgeChanges.run(last)
        this.s.setFloor.run(last)
      }
      this.s.purgeKeys.run(now - this.idempotencyTtlMs)
    }).immediate()
  }

  private read<T> (fn: () => T): T {
    try {
      return fn()
    } catch (err) {
      throw storageError(err)
    }
  }

  private notify (): void {
    this.dataVersion = this.db.pragma('data_version', { simple: true }) as number
    for (const listener of this.listeners) listener()
  }

  private watchOtherWriters (): void {
    if (this.listeners.size === 0 || !this.db.open) return
    const v = this.db.pragma('data_version', { simple: true }) as number
    if (v !== this.dataVersion) this.notify()
  }
}

function listSql (status: boolean, category: boolean, tagCount: number): string {
  const where: string[] = []
  let from = 'plants p'
  let order = 'p.id'
  if (tagCount > 0) {
    // Walk the first tag's index in id order; the other tags are checked per candidate.
    from = 'plant_tags t0 JOIN plants p ON p.id = t0.plant_id'
    order = 't0.plant_id'
    where.push('t0.tag = ?', 't0.plant_id > ?')
    for (let i = 1; i < tagCount; i++) where.push('EXISTS (SELECT 1 FROM plant_tags t WHERE t.tag = ? AND t.plant_id = p.id)')
  } else {
    where.push('p.id > ?')
  }
  if (status) where.push('p.status = ?')
  if (category) where.push('p.category = ?')
  return `SELECT p.id, p.name, p.category, p.tags, p.status, p.version FROM ${from} WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ?`
}
