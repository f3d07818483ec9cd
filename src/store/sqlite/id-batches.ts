import type Database from 'better-sqlite3'

// A migration that computes something for every plant (a key, a search text) does it 50,000 ids at
// a time, so that a large catalogue shows its progress and no statement holds every row at once.

/**
 * Calls `fill(after, last)` for each run of up to 50,000 plant ids in id order (the ids in `after` <
 * id <= `last`), then `progressed` with how many plants are done so far.
 */
export function inIdBatches (db: Database.Database, fill: (after: number, last: number) => void, progressed: (done: number) => void): void {
  const end = db.prepare<[number], [number | null, number]>('SELECT max(id), count(*) FROM (SELECT id FROM plants WHERE id > ? ORDER BY id LIMIT 50000)').raw(true)
  let after = 0
  let done = 0
  for (;;) {
    const [last, n] = end.get(after)!
    if (last === null) return
    fill(after, last)
    done += n
    after = last
    progressed(done)
  }
}
