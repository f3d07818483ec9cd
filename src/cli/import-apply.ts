import type { BatchOperation } from '../catalogue/batch.js'
import type { Catalogue } from './target-interface.js'
import { CommandFailed } from './command.js'

// An import's planned rows written in batches, each all or nothing, in line order: a batch is
// handed over to the catalogue while the one ahead of it is written, and what is said of the rows
// (refused, added) is said in line order too.

export interface Counts { rowsRead: number, matchedById: number, matchedBySku: number, added: number, updated: number, unchanged: number, rejected: number }

/** A row planned to be written: its line, its operation, and what to say once it is written (Plan's `added`). */
export interface Planned { line: number, operation: BatchOperation, added?: () => string }

/** What is said of a row, as FILE:LINE: a row refused (counted as rejected), and a row added that the dry run spoke of. */
export interface Said { refused (line: number, reason: string): void, added (line: number, what: string): void }

/**
 * The rows an import holds at once: read from the file and not yet done with (planned, and said,
 * counted, or written). Its peak stays within a chunk of the reader, the batches with the
 * catalogue and the refusals waiting to be said, whatever the file's size.
 */
export class RowsInHand {
  held = 0
  peak = 0
  take (rows: number): void {
    this.held += rows
    if (this.held > this.peak) this.peak = this.held
  }

  done (rows: number): void {
    this.held -= rows
  }
}

/** A batch handed over to the catalogue: the plants it names, its rows, the rows refused after it (said once it settles), its end, and whether it has come. */
interface Handed { ids: Set<number>, rows: number, refusedAfter: Array<[number, string]>, done: Promise<void>, settled: boolean }

const names = (a: Set<number>, b: Set<number>): boolean => {
  for (const id of b) if (a.has(id)) return true
  return false
}

/**
 * Batches are written in order, each after the one before it, but handed over to the catalogue
 * before that one is written: on PostgreSQL the next batch's plants are locked and its outcomes
 * worked out while the one ahead is written (the store waits for it before writing). At most two
 * are with the catalogue; one that names a plant of the batch ahead waits for that batch first, so
 * that resending the batch ahead without its refused rows never waits for its own successor. A row
 * refused while a batch is with the catalogue is said after that batch's own refusals, so the
 * report stays in line order.
 */
export class Batches {
  private readonly handed: Handed[] = []
  private batch: Planned[] = []

  constructor (private readonly catalogue: Catalogue, private readonly size: number, private readonly counts: Counts,
    private readonly say: Said, private readonly hand: RowsInHand) {}

  /** Whether a batch is with the catalogue. */
  get writing (): boolean { return this.handed.length > 0 }

  /** Rows refused while a batch is with the catalogue, waiting for it to settle to be said. */
  get waiting (): number { return this.handed.reduce((n, { refusedAfter }) => n + refusedAfter.length, 0) }

  /** A row refused before it is written: said now, or once the batch with the catalogue has said its own rows. */
  refuse (line: number, reason: string): void {
    const latest = this.handed[this.handed.length - 1]
    // A batch that has settled (and said its lines) stays in `handed` until the next flush takes
    // it out: a line given to it then was never said (four of twenty, on a loaded machine).
    if (latest !== undefined && !latest.settled) {
      latest.refusedAfter.push([line, reason])
      return
    }
    this.say.refused(line, reason)
    this.hand.done(1)
  }

  async add (row: Planned): Promise<void> {
    this.batch.push(row)
    if (this.batch.length >= this.size) await this.flush()
  }

  /** Every row handed over written (or refused) and said. */
  async finish (): Promise<void> {
    if (this.batch.length > 0) await this.flush()
    await this.settle()
  }

  /** Every batch with the catalogue settled and its rows said. */
  async settle (): Promise<void> {
    while (this.handed.length > 0) await this.settleOldest()
  }

  /** The batches still with the catalogue (the file failed to read, or one failed) seen to their end, before it closes. */
  async abandon (): Promise<void> {
    await Promise.all(this.handed.map(async ({ done }) => { await done.catch(() => {}) }))
  }

  private async settleOldest (): Promise<void> {
    try {
      await this.handed[0].done
    } finally {
      this.handed.shift()
    }
  }

  private async flush (): Promise<void> {
    const rows = this.batch
    this.batch = []
    const ids = new Set<number>()
    for (const { operation } of rows) if (operation.op !== 'create') ids.add(operation.id)
    while (this.handed.length >= 2 || (this.handed.length === 1 && names(this.handed[0].ids, ids))) await this.settleOldest()
    const ahead = this.handed[this.handed.length - 1]?.done
    const next: Handed = { ids, rows: rows.length, refusedAfter: [], done: Promise.resolve(), settled: false }
    next.done = (async () => {
      try {
        await applyBatch(this.catalogue, rows, this.counts, this.say, ahead)
      } finally {
        for (const [line, reason] of next.refusedAfter) this.say.refused(line, reason)
        this.hand.done(next.rows + next.refusedAfter.length)
        next.settled = true
      }
    })()
    // Awaited by settleOldest(); until then a failure must not count as unhandled.
    next.done.catch(() => {})
    this.handed.push(next)
  }
}

/**
 * Applies one batch all or nothing; when the catalogue refuses some of its rows (a SKU another plant
 * has, a plant deleted meanwhile), those are reported and the rest is sent again without them. What
 * it says of its rows is said once it settles, in line order: a refused row comes to light before
 * the rows around it are written.
 */
async function applyBatch (catalogue: Catalogue, batch: Planned[], counts: Counts, say: Said, ahead: Promise<unknown> | undefined): Promise<void> {
  const lines: Array<{ line: number, said: () => void }> = []
  let rows = batch
  try {
    while (rows.length > 0) {
      const outcome = await catalogue.applyAll(rows.map((r) => r.operation), `${rows[0].line}-${rows[rows.length - 1].line}-${rows.length}`, ahead)
      if (outcome.ok) {
        for (const { line, operation, added } of rows) {
          counts[operation.op === 'create' ? 'added' : 'updated']++
          if (added !== undefined) lines.push({ line, said: () => { say.added(line, added()) } })
        }
        return
      }
      const refused = new Map(outcome.refused.map((r) => [r.index, r.reason]))
      // A refusal the catalogue could not tie to a row would loop for ever: the batch fails instead.
      if (refused.size === 0) throw new CommandFailed(`the ${catalogue.where} refused a batch without naming a row`)
      for (const [index, reason] of refused) {
        const { line } = rows[index]
        lines.push({ line, said: () => { say.refused(line, reason) } })
      }
      rows = rows.filter((_, i) => !refused.has(i))
    }
  } finally {
    for (const { said } of lines.sort((a, b) => a.line - b.line)) said()
  }
}
