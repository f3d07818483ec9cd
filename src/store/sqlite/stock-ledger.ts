import type Database from 'better-sqlite3'
import { chainForgetter } from './chains.js'

// The stock ledger on SQLite (catalogue/stock.ts): one row a movement, appended in commit order (seq).
//
// A plant's movements are a chain, newest first, as its history is (history.ts): the plant's row (or
// its trash row) names its newest movement (ledger_seq), and each movement the one before it (prev).
// There is no index on (plant_id, seq): its entry for each sale fell on a random leaf of its own (one
// page a plant sold in a commit, about a fifth of what a sale wrote), which the WAL then wrote whole
// at every commit. With the chain, the plant's row (written by the sale anyway) holds the head and the
// movement is an append (bench/results/issue-49-stock.md).

/**
 * Migration 27: the ledger as a chain per plant. Each movement gets the one before it of its plant,
 * each plant (live or in the trash) its newest, both read through the (plant_id, seq) index, which
 * then goes. The levels' index by location loses on_hand, which every movement changed (a location's
 * delete reads the levels' rows for it anyway). One pass over the ledger, said on a large one.
 */
export function ledgerChainMigration (db: Database.Database, progress: (message: string) => void): void {
  const total = db.prepare('SELECT count(*) FROM stock_movements').pluck().get() as number
  const say = (message: string): void => { if (total > 50_000) progress(`migration 27: ${message} (${total} movements)`) }
  say('chaining each plant\'s movements')
  db.exec(`
  ALTER TABLE stock_movements ADD COLUMN prev INTEGER;
  ALTER TABLE plants ADD COLUMN ledger_seq INTEGER;
  ALTER TABLE trash ADD COLUMN ledger_seq INTEGER;
  UPDATE stock_movements SET prev = (
    SELECT m.seq FROM stock_movements m WHERE m.plant_id = stock_movements.plant_id AND m.seq < stock_movements.seq ORDER BY m.plant_id DESC, m.seq DESC LIMIT 1);
  UPDATE plants SET ledger_seq = (SELECT max(seq) FROM stock_movements WHERE plant_id = plants.id);
  UPDATE trash SET ledger_seq = (SELECT max(seq) FROM stock_movements WHERE plant_id = trash.id);
  DROP INDEX stock_movements_plant;
  DROP INDEX stock_levels_location;
  CREATE INDEX stock_levels_location ON stock_levels (location);
  `)
  say('movements chained')
}

/** The statement every movement is appended with; its rowid is the plant's new ledger_seq. */
export const INSERT_MOVEMENT = 'INSERT INTO stock_movements (plant_id, at, actor, location, delta, reason, reference, on_hand_after, prev) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)'

export interface MovementRow { seq: number, plant_id: number, prev: number | null, at: number, actor: string, location: string, delta: number, reason: string, reference: string | null, on_hand_after: number }

/**
 * A plant's movements from `head` back, newest first. It stops where the chain does: at the first,
 * at a seq that is not this plant's, or at one not older than the one before (so it always ends).
 */
export function ledgerWalker (db: Database.Database): (id: number, head: number | null) => Generator<MovementRow> {
  const row = db.prepare<[number], MovementRow>('SELECT seq, plant_id, prev, at, actor, location, delta, reason, reference, on_hand_after FROM stock_movements WHERE seq = ?')
  return function * (id, head) {
    let seq = head
    let newer = Infinity
    while (seq !== null && seq < newer) {
      const movement = row.get(seq)
      if (movement === undefined || movement.plant_id !== id) return
      yield movement
      newer = seq
      seq = movement.prev
    }
  }
}

/**
 * A page of a plant's ledger, newest first, below `before`; undefined when no plant, live or in the
 * trash, has the id. A later page starts at the movement before its cursor when the cursor is one of
 * the plant's movements (as the page before it ends): a page costs its own rows, however deep.
 */
export function ledgerReader (db: Database.Database): (id: number, before: number | undefined, limit: number) => MovementRow[] | undefined {
  const head = db.prepare<[number, number], { head: number | null }>(
    'SELECT ledger_seq AS head FROM plants WHERE id = ? UNION ALL SELECT ledger_seq FROM trash WHERE id = ?')
  const at = db.prepare<[number], { plant_id: number, prev: number | null }>('SELECT plant_id, prev FROM stock_movements WHERE seq = ?')
  const walk = ledgerWalker(db)
  return (id, before, limit) => {
    const known = head.get(id, id)
    if (known === undefined) return undefined
    let start = known.head
    if (before !== undefined && start !== null && before <= start) {
      const cursor = at.get(before)
      if (cursor !== undefined && cursor.plant_id === id) start = cursor.prev
    }
    const page: MovementRow[] = []
    for (const movement of walk(id, start)) {
      if (page.length === limit) break
      if (before === undefined || movement.seq < before) page.push(movement)
    }
    return page
  }
}

/** Deletes a purged plant's movements, walking its chain from `head` (trash.ledger_seq). */
export const ledgerForgetter = (db: Database.Database): (id: number, head: number | null) => void =>
  chainForgetter(db, 'stock_movements', ledgerWalker(db))
