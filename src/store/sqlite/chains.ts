import type Database from 'better-sqlite3'

/** A plant's rows of a chain (history, the stock ledger), newest first from `head`, each naming the one before. */
export type ChainWalk = (id: number, head: number | null) => Iterable<{ seq: number }>

/** Deletes a purged plant's rows of the chain kept in `table`, walking it from `head` (the trash row's). */
export function chainForgetter (db: Database.Database, table: 'history' | 'stock_movements', walk: ChainWalk): (id: number, head: number | null) => void {
  const remove = db.prepare(`DELETE FROM ${table} WHERE seq = ?`)
  return (id, head) => {
    // Collected first: the walk reads each row before the next, and a delete under it would cut it short.
    const seqs = Array.from(walk(id, head), (row) => row.seq)
    for (const seq of seqs) remove.run(seq)
  }
}
