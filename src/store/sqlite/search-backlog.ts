import type Database from 'better-sqlite3'
import { searchText } from '../../catalogue/search-key.js'
import { inIdBatches } from './id-batches.js'

// The name search index (plants_fts) is written behind, as PostgreSQL's GIN index keeps a pending
// list. A write that changes what the index holds says so in its own change row (the feed's outbox,
// written anyway): index_remove, the name key that leaves the index, and index_add, the one that
// enters it. Once BACKLOG changes have gathered past meta's search_indexed, the write that tips it
// over applies them to FTS5 in bulk, in its transaction, and moves search_indexed on. FTS5 writes a
// new segment at every commit that touches it, and that flush, not the terms, was most of what the
// index cost a write; a table of its own for the backlog cost another page every commit. A search
// reads the index and the backlog together (list-query.ts), so it sees every committed name.
// The index holds each name key's search text (search-key.ts: folded, with its word starts marked)
// and no copy of it (contentless): removing a name gives the text again, computed from its key.

/** How many changes may wait: a search scans at most about this many change rows beside the index. */
export const BACKLOG = 128

/** The change rows the index has not taken yet (a subquery: `seq > (…)`). */
export const INDEXED_UP_TO = "(SELECT value FROM meta WHERE key = 'search_indexed')"

export interface SearchBacklog {
  /** `written` change rows were added in the caller's transaction; applies the backlog once enough have gathered, or whatever there is when `force`. */
  settle: (written: number, force?: boolean) => void
}

export function searchBacklog (db: Database.Database): SearchBacklog {
  const s = {
    backlog: db.prepare<[], [plantId: number, remove: string | null, add: string | null]>(
      `SELECT plant_id, index_remove, index_add FROM changes WHERE seq > ${INDEXED_UP_TO} AND (index_remove IS NOT NULL OR index_add IS NOT NULL) ORDER BY plant_id, seq`).raw(true),
    waiting: db.prepare(`SELECT count(*) FROM changes WHERE seq > ${INDEXED_UP_TO}`).pluck(),
    indexed: db.prepare("UPDATE meta SET value = (SELECT coalesce(max(seq), value) FROM changes) WHERE key = 'search_indexed'"),
    insert: db.prepare('INSERT INTO plants_fts (rowid, search) VALUES (?, ?)'),
    delete: db.prepare("INSERT INTO plants_fts (plants_fts, rowid, search) VALUES ('delete', ?, ?)")
  }
  // Counted here rather than read per write. Another process writing the same file (an import,
  // WORKERS > 1) only shifts when the next apply happens, never what it applies.
  let waiting = s.waiting.get() as number

  /** One plant's changes, oldest first: only what the index holds now and what it must hold matter. */
  const apply = (id: number, changes: Array<[remove: string | null, add: string | null]>): void => {
    const held = changes[0][0] ?? undefined // its first change removes what the index holds, if anything
    const wanted = changes[changes.length - 1][1] ?? undefined
    if (held === wanted) return
    if (held !== undefined) s.delete.run(id, searchText(held))
    if (wanted !== undefined) s.insert.run(id, searchText(wanted))
  }

  return {
    settle: (written, force = false) => {
      waiting += written
      if (waiting === 0 || (!force && waiting < BACKLOG)) return
      // In rowid order: FTS5 starts a new segment whenever a rowid comes lower than the one before.
      let id = -1
      let changes: Array<[string | null, string | null]> = []
      for (const [plantId, remove, add] of s.backlog.all()) {
        if (plantId !== id && changes.length > 0) {
          apply(id, changes)
          changes = []
        }
        id = plantId
        changes.push([remove, add])
      }
      if (changes.length > 0) apply(id, changes)
      s.indexed.run()
      waiting = 0
    }
  }
}

/**
 * The migration to the index of search texts: accents folded, word starts marked for
 * short terms. The index is built anew from every plant's name key, in batches with a progress line;
 * what waited in the backlog is in it then, so the backlog starts empty.
 */
export function searchTextMigration (db: Database.Database, progress: (message: string) => void): void {
  rebuildSearchIndex(db, (done, total) => `migration: search index ${done} of ${total} plants (accents folded, word starts)`, progress)
}

/**
 * The migration (NFKC) to search texts with compatibility forms folded too (search-key.ts:
 * full-width letters, ligatures). The index holds no copy of the names, and removing one from it
 * needs the very text it was given, which the new folding no longer computes: so it is built anew,
 * as the migration before did.
 */
export function compatibilityFoldMigration (db: Database.Database, progress: (message: string) => void): void {
  rebuildSearchIndex(db, (done, total) => `migration: search index ${done} of ${total} plants (full-width letters and ligatures folded)`, progress)
}

/** Builds plants_fts anew from every plant's name key, 50,000 at a time, saying how far it got on a large catalogue. */
function rebuildSearchIndex (db: Database.Database, say: (done: number, total: number) => string, progress: (message: string) => void): void {
  const total = db.prepare('SELECT count(*) FROM plants').pluck().get() as number
  db.exec(`
  DROP TABLE plants_fts;
  CREATE VIRTUAL TABLE plants_fts USING fts5(search, content='', tokenize='trigram case_sensitive 1', detail='none');
  INSERT INTO plants_fts (plants_fts, rank) VALUES ('automerge', 16);
  `)
  db.function('search_text', { deterministic: true }, (key: unknown) => searchText(key as string))
  const fill = db.prepare('INSERT INTO plants_fts (rowid, search) SELECT id, search_text(name_key) FROM plants WHERE id > ? AND id <= ? ORDER BY id')
  inIdBatches(db, (after, last) => fill.run(after, last), (done) => { if (total > 50_000) progress(say(done, total)) })
  db.exec("UPDATE meta SET value = (SELECT coalesce(max(seq), value) FROM changes) WHERE key = 'search_indexed'")
}
