import type { Plant } from '../catalogue/plant.js'
import { MAIN_LOCATION } from '../catalogue/stock.js'
import type { StockCounter } from './target-interface.js'
import type { StockCell } from './rows.js'

// plants import --stock: each non-empty stock.<location> cell of a row naming a plant of the
// catalogue is a count of that plant at that location, a movement with reason `count` through the
// store (the ledger records it), compare and set against the level read when the row is planned.

/** One location's count: from the level read when planned (null: the plant does not track stock yet) to the cell's. */
export interface CountChange { column: string, location: string, from: number | null, to: number }
/** A row's counts that change something. */
export interface PlannedCount { line: number, id: number, name: string, changes: CountChange[] }

export class StockCounts {
  private locations = new Set([MAIN_LOCATION])
  /** Movements applied. */
  counted = 0

  /** `counter`: none where the catalogue has none yet (a dry run against an empty folder): only main exists there. */
  constructor (private readonly counter: StockCounter | undefined) {}

  async start (): Promise<void> {
    if (this.counter !== undefined) this.locations = new Set(await this.counter.locations())
  }

  /** Why the row's stock cells cannot be counted (the row is refused whole, nothing of it written); undefined when they can. */
  refusal (cells: StockCell[], names: Plant | undefined): string | undefined {
    for (const c of cells) {
      // The import never makes a location: a mistyped column must not become a new place to keep stock.
      if (!this.locations.has(c.location)) return `${c.column}: no location "${c.location}" in the catalogue: add it first (POST /v3/locations), or leave the column out (the import makes no location)`
      if (typeof c.value !== 'number' || !Number.isSafeInteger(c.value) || c.value < 0) return `${c.column} must be a whole number, 0 or more (a count), not ${JSON.stringify(c.value)}`
    }
    // A new plant's id is the catalogue's to give, after the row's batch: its count would need a second pass.
    if (names === undefined) return `${cells[0].column}: a count goes to a plant of the catalogue, named by its id or sku, and this row adds one: import the row without its stock cells, then count it`
    return undefined
  }

  /** The row's counts that differ from the plant's levels now; undefined when none does. */
  async plan (line: number, plant: Plant, cells: StockCell[]): Promise<PlannedCount | undefined> {
    const levels = this.counter === undefined ? null : await this.counter.onHand(plant.id)
    const changes = cells.map((c): CountChange => ({ column: c.column, location: c.location, from: levels === null ? null : levels.get(c.location) ?? 0, to: c.value as number }))
      .filter((c) => c.from !== c.to)
    return changes.length === 0 ? undefined : { line, id: plant.id, name: plant.name, changes }
  }

  /** Applies a row's counts in column order; the first refused stops that row's, said as FILE:LINE: reason. */
  async apply (planned: PlannedCount, refuse: (line: number, reason: string) => void): Promise<void> {
    for (const c of planned.changes) {
      const refused = await this.counter!.count(planned.id, c.location, c.to, c.from ?? 0)
      if (refused !== undefined) {
        refuse(planned.line, `${c.column}: ${refused}`)
        return
      }
      this.counted++
    }
  }
}

/** What a dry run says of a row's counts, after FILE:LINE: would. */
export const countSaid = ({ id, name, changes }: PlannedCount): string =>
  `count plant ${id} ${JSON.stringify(name)}: ${changes.map((c) => `${c.column} ${c.from ?? 'untracked'} → ${c.to}`).join(', ')}`
