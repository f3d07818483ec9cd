// The retention purge's one rule, for every kind (trash, history) on both engines: delete a batch,
// each in its own transaction so the writer is never held long, and go on while a batch comes back
// full. Only the engine knows how to delete one batch; it hands that in as `deleteBatch`.

/**
 * Calls `deleteBatch(batch)` until it deletes fewer than `batch` rows; returns how many went in all.
 * SQLite deletes synchronously and PostgreSQL does not: each gets back what it handed in (a
 * number, or a promise of one), so SQLite's purge stays within one turn of the event loop.
 */
export function purgeInBatches (deleteBatch: (batch: number) => number, batch: number): number
export function purgeInBatches (deleteBatch: (batch: number) => Promise<number>, batch: number): Promise<number>
export function purgeInBatches (deleteBatch: (batch: number) => number | Promise<number>, batch: number): number | Promise<number> {
  const from = (purged: number): number | Promise<number> => {
    for (;;) {
      const deleted = deleteBatch(batch)
      if (typeof deleted !== 'number') return deleted.then((n) => n < batch ? purged + n : from(purged + n))
      purged += deleted
      if (deleted < batch) return purged
    }
  }
  return from(0)
}
