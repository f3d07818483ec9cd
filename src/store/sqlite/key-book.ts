import type Database from 'better-sqlite3'

// The Idempotency-Keys on SQLite, as the writer keeps them.
//
// A key is random (a till's UUID), so its entry in the key-ordered b-tree fell on a random leaf: a
// group commit of 32 sales wrote some 36 leaves of that index whole, beside the row and its
// created_at entry, about 45 pages of the 110 a sale's commit wrote (bench/results/issue-49-stock.md).
// A new key is appended to `recent_keys` instead, a table in arrival order with no index (a page a
// few dozen keys), and the writer finds it there through a map from key to rowid that it holds in
// memory. Once the table holds SETTLE_AT keys they move into `idempotency_keys` in one statement, in
// key order: each leaf of its index is written once for all the keys that fall on it, not once a key.
// The map is only ever a pointer: a row it names is read and its key compared, so a map that outlived
// a rollback or the hourly purge (a row gone) never answers a wrong row. Other processes write the same
// file (WORKERS > 1): before a lookup the writer reads the rows appended since the last it knows (its
// transaction sees every commit before it), so a till's retry that reaches another worker finds its
// key there; AUTOINCREMENT keeps each row's number above every number handed out before, emptied or
// not, which that reading depends on.

/**
 * Migration 29: the table new keys are appended to (its rowid in arrival order; no index to write).
 * IF NOT EXISTS: a file rebuilt as an older release left it (the migration tests) may hold it already.
 */
export const RECENT_KEYS_MIGRATION = `
  CREATE TABLE IF NOT EXISTS recent_keys (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    plant_id INTEGER NOT NULL,
    response TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) STRICT;
`

/** How many keys wait in recent_keys before they move into the indexed table together. */
export const SETTLE_AT = 8192

export interface KeyRow { request_hash: string, response: string, created_at: number }

export interface KeyBook {
  /** The key's row used after `since`, wherever it is kept, or undefined. */
  find: (key: string, since: number) => KeyRow | undefined
  /** Keeps (or replaces) the key's answer. */
  put: (key: string, requestHash: string, plantId: number, response: string, now: number) => void
  /** At a group's end, inside its transaction: moves the waiting keys into the indexed table once there are enough of them. */
  settle: () => void
  /** After a rollback: the map is read again from the table, which the rollback may have changed. */
  reload: () => void
  /**
   * The group's transaction has begun (BEGIN IMMEDIATE): until settle() or reload(), no other process
   * can append, so the rows others appended are read once, at the group's first lookup, not at each.
   */
  begin: () => void
}

export function keyBook (db: Database.Database, settleAt = SETTLE_AT): KeyBook {
  const s = {
    recent: db.prepare<[number], KeyRow & { key: string }>('SELECT key, request_hash, response, created_at FROM recent_keys WHERE n = ?'),
    indexed: db.prepare<[string, number], KeyRow>('SELECT request_hash, response, created_at FROM idempotency_keys WHERE key = ? AND created_at > ?'),
    append: db.prepare('INSERT INTO recent_keys (key, request_hash, plant_id, response, created_at) VALUES (?, ?, ?, ?, ?)'),
    since: db.prepare<[number], { n: number, key: string }>('SELECT n, key FROM recent_keys WHERE n > ? ORDER BY n'),
    // Key order: the index's leaves are walked once, left to right. A key kept twice (used again
    // after it expired) moves with its newest answer: its rows go in their order (n), and each
    // replaces the one before, as INSERT OR REPLACE kept it before (no GROUP BY: one sort, not two).
    move: db.prepare(`INSERT OR REPLACE INTO idempotency_keys (key, request_hash, plant_id, response, created_at)
      SELECT key, request_hash, plant_id, response, created_at FROM recent_keys ORDER BY key, n`),
    empty: db.prepare('DELETE FROM recent_keys'),
    count: db.prepare<[], number>('SELECT count(*) FROM recent_keys').pluck()
  }
  const waiting = new Map<string, number>()
  // Rows, not keys: a key used again after it expired waits twice.
  let rows = 0
  // The highest row number read: rows above it were appended since, by this process or another.
  let seen = 0
  // Inside a group's transaction (begin() to settle() or reload()), and caught up in it already.
  let inGroup = false
  let caughtUp = false
  const readAppended = (): void => {
    if (inGroup && caughtUp) return
    catchUp()
    caughtUp = inGroup
  }
  const catchUp = (): void => {
    for (const { n, key } of s.since.iterate(seen)) {
      waiting.set(key, n)
      rows++
      seen = n
    }
  }
  const reload = (): void => {
    inGroup = false
    waiting.clear()
    rows = 0
    seen = 0
    catchUp()
  }
  reload()
  return {
    find: (key, since) => {
      readAppended()
      const n = waiting.get(key)
      if (n !== undefined) {
        const row = s.recent.get(n)
        if (row !== undefined && row.key === key) return row.created_at > since ? row : undefined
      }
      return s.indexed.get(key, since)
    },
    put: (key, requestHash, plantId, response, now) => {
      readAppended()
      seen = Number(s.append.run(key, requestHash, plantId, response, now).lastInsertRowid)
      waiting.set(key, seen)
      rows++
    },
    settle: () => {
      inGroup = false
      if (rows < settleAt) return
      // The rows this book counted may have moved already, by another process's book: it would
      // otherwise move the few dozen appended since, each on a leaf of its own. Counted once per
      // SETTLE_AT keys, so the scan of the waiting table costs a sale next to nothing.
      rows = s.count.get()!
      if (rows < settleAt) return
      s.move.run()
      s.empty.run()
      waiting.clear()
      rows = 0
    },
    reload,
    begin: () => {
      inGroup = true
      caughtUp = false
    }
  }
}
