import type { Plant } from '../catalogue/plant.js'
import { MAIN_LOCATION, type Movement } from '../catalogue/stock.js'
import { after, type ExportedAt } from './import-base.js'
import type { StockCounter } from './target-interface.js'
import type { StockCell } from './rows.js'

// plants import --stock: each non-empty stock.<location> cell of a row naming a plant of the
// catalogue is a count of that plant at that location, a movement with reason `count` through the
// store (the ledger records it), compare and set against the level read when the row is planned.
// A row an export wrote (its updatedAt) is compared with the level at the export too, read from
// the ledger: a cell as exported is no count even where the level has moved since (a sale at a
// till stands), and a cell edited where the level has also moved since is refused (the count was
// of shelves that have changed since), as the plant's fields are (import-plan.ts).

/** One location's count: from the level read when planned (null: the plant does not track stock yet) to the cell's. */
export interface CountChange { column: string, location: string, from: number | null, to: number }
/** A cell left as it is: as exported, where the level has moved since. */
export interface CountKept { column: string, then: number, now: number | null, since: string }
/**
 * A row's counts that change something, the cells left as exported while the level moved, and why
 * the cells edited where the level also moved are refused (undefined: none is).
 */
export interface PlannedCount { line: number, id: number, name: string, changes: CountChange[], kept: CountKept[], refused?: string }

/** A location's ledger since the export: its level then (0 with no movement before), and the movements after, newest first. */
interface SinceExport { then: number, since: Movement[] }

export class StockCounts {
  private locations = new Set([MAIN_LOCATION])
  /** Movements applied. */
  counted = 0
  /** Cells left as exported where the level moved since. */
  kept = 0

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

  /**
   * What the row's cells do: a cell equal to the level now moves nothing; else, where the row was
   * exported (`exported`) and the level has moved since, a cell as exported is left and another is
   * refused; else it is a count. Undefined when no cell does anything.
   */
  async plan (line: number, plant: Plant, cells: StockCell[], exported: ExportedAt | undefined): Promise<PlannedCount | undefined> {
    const levels = this.counter === undefined ? null : await this.counter.onHand(plant.id)
    const now = (location: string): number | null => levels === null ? null : levels.get(location) ?? 0
    const differ = cells.filter((c) => c.value !== now(c.location))
    if (differ.length === 0) return undefined
    // Read only for a cell that differs from the level now (edited, or moved since), and read now: the
    // plant as the import first read it may predate a sale made since (its updatedAt would say nothing moved).
    const ledger = exported === undefined ? undefined : await this.sinceExport(plant.id, differ, exported)
    const planned: PlannedCount = { line, id: plant.id, name: plant.name, changes: [], kept: [] }
    const refused: string[] = []
    for (const c of differ) {
      const to = c.value as number
      const moved = ledger?.get(c.location)
      if (moved === undefined || moved.since.length === 0) planned.changes.push({ column: c.column, location: c.location, from: now(c.location), to })
      else if (to === moved.then) planned.kept.push({ column: c.column, then: moved.then, now: now(c.location), since: happened(moved.since) })
      else refused.push(`${c.column} moved since the export (${happened(moved.since)}): count it again (${moved.then} then, ${now(c.location) ?? 'untracked'} now, ${to} in the file; a new export holds the level now)`)
    }
    if (refused.length > 0) planned.refused = `${refused.join('; ')}; nothing counted there`
    return planned
  }

  /** Applies a row's counts in column order; the first refused stops that row's. What was refused is said in one FILE:LINE: reason. */
  async apply (planned: PlannedCount, refuse: (line: number, reason: string) => void): Promise<void> {
    this.kept += planned.kept.length
    // One line of the report a row: the cells moved since, then the count a movement came before.
    const reasons = planned.refused === undefined ? [] : [planned.refused]
    for (const c of planned.changes) {
      const refused = await this.counter!.count(planned.id, c.location, c.to, c.from ?? 0)
      if (refused !== undefined) {
        reasons.push(`${c.column}: ${refused}`)
        break
      }
      this.counted++
    }
    if (reasons.length > 0) refuse(planned.line, reasons.join('; '))
  }

  /** The ledger of these cells' locations back to the export: read newest first, until each location's last movement at or before it. */
  private async sinceExport (id: number, cells: StockCell[], exported: ExportedAt): Promise<Map<string, SinceExport>> {
    const open = new Map(cells.map((c) => [c.location, { then: 0, since: [] as Movement[] }]))
    const found = new Map<string, SinceExport>()
    for await (const page of this.counter!.ledger(id)) {
      for (const m of page) {
        const location = open.get(m.location)
        if (location === undefined) continue
        if (after(Date.parse(m.at), exported)) {
          // A count that found the level as it was (delta 0) moved nothing since.
          if (m.delta !== 0) location.since.push(m)
          continue
        }
        location.then = m.onHandAfter
        found.set(m.location, location)
        open.delete(m.location)
      }
      if (open.size === 0) break
    }
    // A location with no movement at or before the export held none then.
    for (const [name, location] of open) found.set(name, location)
    return found
  }
}

/** What the movements since the export did, oldest first, in a few words: "sold 1, received 5". */
function happened (since: Movement[]): string {
  const byReason = new Map<string, number>()
  for (const m of [...since].reverse()) byReason.set(m.reason, (byReason.get(m.reason) ?? 0) + m.delta)
  const lastCount = since.find((m) => m.reason === 'count')
  return [...byReason].map(([reason, delta]) => {
    switch (reason) {
      case 'sale': return `sold ${-delta}`
      case 'received': return `received ${delta}`
      case 'return': return `${delta} returned`
      case 'damaged': return `${-delta} damaged`
      case 'count': return `counted to ${lastCount!.onHandAfter}`
      default: return `${reason} ${delta > 0 ? '+' : ''}${delta}`
    }
  }).join(', ')
}

/** What a dry run says of a row's counts, after FILE:LINE: would; undefined when it counts nothing. */
export const countSaid = ({ id, name, changes }: PlannedCount): string | undefined => changes.length === 0
  ? undefined
  : `count plant ${id} ${JSON.stringify(name)}: ${changes.map((c) => `${c.column} ${c.from ?? 'untracked'} → ${c.to}`).join(', ')}`

/** What a dry run says of a row's cells left as exported, after FILE:LINE: would; undefined when none is. */
export const keptSaid = ({ id, name, kept }: PlannedCount): string | undefined => kept.length === 0
  ? undefined
  : `leave plant ${id} ${JSON.stringify(name)}: ${kept.map((k) => `${k.column} ${k.then} as exported, ${k.now ?? 'untracked'} now (${k.since} since)`).join(', ')}`
