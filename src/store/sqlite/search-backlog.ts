import type Database from 'better-sqlite3'

// The name search index (plants_fts) is written behind, as PostgreSQL's GIN index keeps a pending
// list: a write records its index changes as plain rows of plants_fts_pending, in its own
// transaction, and they reach FTS5 in bulk once BACKLOG of them have gathered (in the transaction of
// the write that tips it over). FTS5 writes a new segment at every commit that touches it, and that
// flush, not the terms, was most of what the index cost a write: with a group of 2 writes, a random
// PUT paid about 70 µs for it. A search reads the index and the pending rows together
// (list-query.ts), so it sees every committed name either way.

/** How many pending index changes wait before they are applied: a search scans at most about this many rows beside the index. */
export const BACKLOG = 128

export interface SearchBacklog {
  /** A plant's name key enters the index (a create, or a rename's new key). */
  add: (id: number, key: string) => void
  /** A name key the index holds for a plant leaves it (a delete, or a rename's old key). */
  remove: (id: number, key: string) => void
  /** Applies the pending changes to the index once enough have gathered; `force` applies any. Inside the caller's transaction. */
  settle: (force?: boolean) => void
}

export function searchBacklog (db: Database.Database): SearchBacklog {
  const s = {
    pend: db.prepare('INSERT INTO plants_fts_pending (plant_id, name_key, added) VALUES (?, ?, ?)'),
    pending: db.prepare<[], [plantId: number, key: string, added: number]>('SELECT plant_id, name_key, added FROM plants_fts_pending ORDER BY plant_id, seq').raw(true),
    clear: db.prepare('DELETE FROM plants_fts_pending'),
    count: db.prepare('SELECT count(*) FROM plants_fts_pending').pluck(),
    insert: db.prepare('INSERT INTO plants_fts (rowid, name_key) VALUES (?, ?)'),
    delete: db.prepare("INSERT INTO plants_fts (plants_fts, rowid, name_key) VALUES ('delete', ?, ?)")
  }
  // Counted here rather than per write; another process writing the same file (an import) only
  // shifts when the next apply happens, never what it applies.
  let pending = s.count.get() as number

  /** One plant's changes, oldest first, reduced to what the index must do: only its first and last state matter. */
  const apply = (id: number, changes: Array<[key: string, added: number]>): void => {
    const [firstKey, firstAdded] = changes[0]
    const [lastKey, lastAdded] = changes[changes.length - 1]
    const held = firstAdded === 0 ? firstKey : undefined // what the index holds for it now
    const wanted = lastAdded === 1 ? lastKey : undefined
    if (held === wanted) return
    if (held !== undefined) s.delete.run(id, held)
    if (wanted !== undefined) s.insert.run(id, wanted)
  }

  return {
    add: (id, key) => { s.pend.run(id, key, 1); pending++ },
    remove: (id, key) => { s.pend.run(id, key, 0); pending++ },
    settle: (force = false) => {
      if (pending === 0 || (!force && pending < BACKLOG)) return
      // In rowid order: FTS5 starts a new segment whenever a rowid comes lower than the one before.
      let id = -1
      let changes: Array<[string, number]> = []
      for (const [plantId, key, added] of s.pending.all()) {
        if (plantId !== id && changes.length > 0) {
          apply(id, changes)
          changes = []
        }
        id = plantId
        changes.push([key, added])
      }
      if (changes.length > 0) apply(id, changes)
      s.clear.run()
      pending = 0
    }
  }
}
