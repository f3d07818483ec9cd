import Database from 'better-sqlite3'
import { nameKey } from '../../catalogue/name-key.js'
import type { NewPhoto, Photo } from '../../catalogue/photo.js'
import { toRecord, type PlantFields, type PlantPatch, type PlantStatus, type StoredPlant } from '../../catalogue/plant.js'
import type { CreateResult, IdempotencyClaim } from '../plant-store.js'
import { photoFiles, type PhotoRefusal } from './photo-writes.js'
import { searchBacklog } from './search-backlog.js'

// The write side of the SQLite store as plain data in, plain data out, so the same code commits
// in the calling thread (an in-memory database) or in the writer thread (a database file).

/** One write; `now` is taken by the caller so the store's clock stays the caller's. */
export type WriteOp =
  | { kind: 'create', fields: PlantFields, idempotency?: IdempotencyClaim, now: number }
  | { kind: 'update', id: number, fields: PlantFields, expectedVersions?: number[], now: number }
  | { kind: 'patch', id: number, patch: PlantPatch, expectedVersions?: number[], now: number }
  | { kind: 'remove', id: number, now: number }
  | { kind: 'add-photo', id: number, photo: NewPhoto, expectedVersions?: number[], now: number }
  | { kind: 'remove-photo', id: number, photoId: string, expectedVersions?: number[], now: number }
  | { kind: 'order-photos', id: number, order: string[], expectedVersions?: number[], now: number }

export type Refusal = 'not-found' | 'version-mismatch' | 'idempotency-key-reused' | PhotoRefusal
export type Outcome = { ok: true, value: CreateResult | StoredPlant | undefined } | { ok: false, refusal: Refusal }
/** Every write of a batch commits together, or the batch fails as a whole. */
export type BatchResult = { outcomes: Outcome[] } | { failure: { code?: string, message: string } }

/** How much of the database file is memory-mapped for reads (a larger file is read beyond it as before). */
export const MMAP_BYTES = 1024 * 1024 * 1024

/** Opens a connection with the settings every connection to the catalogue must have. */
export function connect (filename: string): Database.Database {
  const db = new Database(filename)
  db.pragma('journal_mode = WAL')
  // FULL: a commit is fsynced before it returns, so an acknowledged write survives power loss.
  db.pragma('synchronous = FULL')
  db.pragma('busy_timeout = 5000')
  // Reads of the file go through a memory map instead of a pread into SQLite's own page cache: a
  // random read on 1,000,000 plants no longer pays a system call per page. The mapped pages are the
  // OS page cache, shared by every connection and counted as file pages (RssFile), not as the
  // process's own memory (RssAnon). Writes still go through the WAL with write() and fsync.
  db.pragma(`mmap_size = ${MMAP_BYTES}`)
  return db
}

class Refused {
  constructor (readonly refusal: Refusal) {}
}

/** Returns a function that runs a batch of writes in one transaction: one commit, one fsync. */
export function batchWriter (db: Database.Database, idempotencyTtlMs: number): (batch: WriteOp[]) => BatchResult {
  const s = {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    rollback: db.prepare('ROLLBACK'),
    current: db.prepare<[number], { version: number, name: string, category: string | null, tags: string, status: PlantStatus, photos: string }>(
      'SELECT version, name, category, tags, status, photos FROM plants WHERE id = ?'),
    setPhotos: db.prepare('UPDATE plants SET photos = ?, version = ?, updated_at = ? WHERE id = ?'),
    insert: db.prepare('INSERT INTO plants (name, name_key, category, tags, status, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 1, ?, ?)'),
    count: db.prepare("UPDATE sqlite_sequence SET seq = seq + ? WHERE name = 'status:' || ?"),
    delete: db.prepare('DELETE FROM plants WHERE id = ?'),
    insertTag: db.prepare('INSERT INTO plant_tags (tag, plant_id) VALUES (?, ?)'),
    deleteTag: db.prepare('DELETE FROM plant_tags WHERE tag = ? AND plant_id = ?'),
    getKey: db.prepare<[string, number], { request_hash: string, response: string }>(
      'SELECT request_hash, response FROM idempotency_keys WHERE key = ? AND created_at > ?'),
    putKey: db.prepare('INSERT OR REPLACE INTO idempotency_keys (key, request_hash, plant_id, response, created_at) VALUES (?, ?, ?, ?, ?)'),
    // index_remove / index_add: what the write changes in the name search index (search-backlog.ts).
    insertChange: db.prepare('INSERT INTO changes (kind, plant_id, version, plant, at, index_remove, index_add) VALUES (?, ?, ?, ?, ?, ?, ?)')
  }
  const files = photoFiles(db)

  // An update names the indexed columns (name_key, status, category) only when they change, so an
  // unchanged one costs no index pages: on a large catalogue every touched page is a random one in the WAL.
  const updates = new Map<number, Database.Statement>()
  const updateStatement = (name: boolean, status: boolean, category: boolean): Database.Statement => {
    const mask = (name ? 1 : 0) + (status ? 2 : 0) + (category ? 4 : 0)
    let statement = updates.get(mask)
    if (!statement) {
      const set = ['tags = ?', 'version = ?', 'updated_at = ?', ...(name ? ['name = ?', 'name_key = ?'] : []), ...(status ? ['status = ?'] : []), ...(category ? ['category = ?'] : [])]
      statement = db.prepare(`UPDATE plants SET ${set.join(', ')} WHERE id = ?`)
      updates.set(mask, statement)
    }
    return statement
  }

  // The search index is written behind (search-backlog.ts): a write names its index change in its change row.
  const search = searchBacklog(db)

  // The status counts change with the batch and are written once, at its end, in its transaction.
  const counts = new Map<string, number>()
  const count = (status: string, delta: number): void => { counts.set(status, (counts.get(status) ?? 0) + delta) }

  // Each write refuses (not found, version mismatch) before it changes anything, so a refused
  // write leaves nothing behind in the shared transaction.
  function apply (op: WriteOp): CreateResult | StoredPlant | undefined {
    const now = op.now
    if (op.kind === 'create') {
      const { fields, idempotency } = op
      if (idempotency) {
        const earlier = s.getKey.get(idempotency.key, now - idempotencyTtlMs)
        if (earlier) {
          if (earlier.request_hash !== idempotency.requestHash) throw new Refused('idempotency-key-reused')
          return { plant: JSON.parse(earlier.response) as StoredPlant, replayed: true }
        }
      }
      const { name, category, tags, status } = fields
      const key = nameKey(name)
      const id = Number(s.insert.run(name, key, category, JSON.stringify(tags), status, now, now).lastInsertRowid)
      for (const tag of tags) s.insertTag.run(tag, id)
      count(status, 1)
      const plant: StoredPlant = { id, name, category, tags, status, photos: [], version: 1 }
      if (idempotency) s.putKey.run(idempotency.key, idempotency.requestHash, id, JSON.stringify(plant), now)
      s.insertChange.run('created', id, 1, JSON.stringify(toRecord(plant)), now, null, key)
      return { plant, replayed: false }
    }
    const current = s.current.get(op.id)
    if (!current) throw new Refused('not-found')
    if (op.kind === 'remove') {
      s.delete.run(op.id)
      for (const tag of JSON.parse(current.tags) as string[]) s.deleteTag.run(tag, op.id)
      files.release(JSON.parse(current.photos) as Photo[])
      count(current.status, -1)
      s.insertChange.run('deleted', op.id, current.version + 1, null, now, nameKey(current.name), null)
      return undefined
    }
    if (op.expectedVersions && !op.expectedVersions.includes(current.version)) throw new Refused('version-mismatch')
    if (op.kind === 'add-photo' || op.kind === 'remove-photo' || op.kind === 'order-photos') {
      const before = JSON.parse(current.photos) as Photo[]
      const photos = op.kind === 'add-photo'
        ? files.add(before, op.photo)
        : op.kind === 'remove-photo' ? files.remove(before, op.photoId) : files.order(before, op.order)
      if (typeof photos === 'string') throw new Refused(photos)
      const version = current.version + 1
      s.setPhotos.run(JSON.stringify(photos), version, now, op.id)
      const { name, category, status } = current
      const plant: StoredPlant = { id: op.id, name, category, tags: JSON.parse(current.tags), status, photos, version }
      s.insertChange.run('updated', op.id, version, JSON.stringify(toRecord(plant)), now, null, null)
      return plant
    }
    const before: string[] = JSON.parse(current.tags)
    const { id } = op
    // The merge happens here, against the row as it is in this transaction: concurrent patches of
    // different fields both keep their change.
    const fields: PlantFields = op.kind === 'update'
      ? op.fields
      : { name: current.name, category: current.category, tags: before, status: current.status, ...op.patch }
    if (op.kind === 'patch' && Object.keys(op.patch).length === 0) return { id, ...fields, photos: JSON.parse(current.photos), version: current.version }
    const { name, category, tags, status } = fields
    const version = current.version + 1
    const nameChanged = name !== current.name
    const statusChanged = status !== current.status
    const categoryChanged = category !== current.category
    const [oldKey, newKey] = nameChanged ? [nameKey(current.name), nameKey(name)] : []
    const reindexed = oldKey !== newKey
    const args: unknown[] = [JSON.stringify(tags), version, now]
    if (nameChanged) args.push(name, newKey)
    if (statusChanged) args.push(status)
    if (categoryChanged) args.push(category)
    updateStatement(nameChanged, statusChanged, categoryChanged).run(...args, id)
    if (statusChanged) {
      count(current.status, -1)
      count(status, 1)
    }
    // Only the tags that come or go are written.
    for (const tag of before) if (!tags.includes(tag)) s.deleteTag.run(tag, id)
    for (const tag of tags) if (!before.includes(tag)) s.insertTag.run(tag, id)
    const plant: StoredPlant = { id, name, category, tags, status, photos: JSON.parse(current.photos), version }
    s.insertChange.run('updated', id, version, JSON.stringify(toRecord(plant)), now, reindexed ? oldKey : null, reindexed ? newKey : null)
    return plant
  }

  return (batch) => {
    const outcomes: Outcome[] = []
    counts.clear()
    try {
      s.begin.run()
      for (const op of batch) {
        try {
          outcomes.push({ ok: true, value: apply(op) })
        } catch (error) {
          if (!(error instanceof Refused)) throw error // anything else aborts the whole batch
          outcomes.push({ ok: false, refusal: error.refusal })
        }
      }
      search.settle(batch.length)
      for (const [status, delta] of counts) if (delta !== 0) s.count.run(delta, status)
      s.commit.run()
      return { outcomes }
    } catch (err) {
      if (db.inTransaction) {
        try { s.rollback.run() } catch { /* the connection is already out of the transaction */ }
      }
      const { code, message } = err as { code?: unknown, message?: unknown }
      return { failure: { code: typeof code === 'string' ? code : undefined, message: String(message ?? err) } }
    }
  }
}
