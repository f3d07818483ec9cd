import type { HistoryEntry } from '../catalogue/history.js'
import type { Plant } from '../catalogue/plant.js'

// What a plant was when its file was exported: the export's updatedAt says when that was, and the
// plant's history holds every change since, each field with its value before. An import compares a
// row with that record to tell the file's edits (cells that differ from it) from the changes the
// catalogue has had since (a till's sale, a colleague's edit), and writes only the former.

/** The time a row's updatedAt names, in ms; `second`: written without its milliseconds (a spreadsheet kept seconds only). */
export interface ExportedAt { ms: number, second: boolean }

/** An RFC 3339 time with its offset, as the export writes it (Date.parse alone takes many other shapes, and local times). */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/

/** How the export writes a time, for messages. */
const EXAMPLE = '2026-11-27T16:38:19.223Z'

/** A row's updatedAt: undefined for none (no column, an empty cell), a reason when it is not a time the export wrote. */
export function exportedAt (updatedAt: unknown): ExportedAt | undefined | { invalid: string } {
  if (updatedAt === undefined || updatedAt === null) return undefined
  const match = typeof updatedAt === 'string' ? TIMESTAMP.exec(updatedAt) : null
  const ms = match === null ? NaN : Date.parse(updatedAt as string)
  if (Number.isNaN(ms)) {
    return { invalid: `/updatedAt must be the time plants export wrote (like ${EXAMPLE}), not ${JSON.stringify(updatedAt)}: export again, and keep that column as text if a spreadsheet opens the file` }
  }
  return { ms, second: match![1] === undefined }
}

/** A row's updatedAt when it is a time the export wrote; undefined for none and for one that is not (the planner refuses that). */
export function exportTimeOf (updatedAt: unknown): ExportedAt | undefined {
  const exported = exportedAt(updatedAt)
  return exported === undefined || 'invalid' in exported ? undefined : exported
}

/** Whether a change at `at` (ms) came after the export: within the same second, for a time kept to the second. */
export const after = (at: number, exported: ExportedAt): boolean =>
  exported.second ? Math.floor(at / 1000) > Math.floor(exported.ms / 1000) : at > exported.ms

/**
 * The fields `plant` had at the export: the changes after it undone, newest first. Undefined when
 * that cannot be told: the plant was made since (the file comes from another catalogue), two
 * versions share the second a time without milliseconds names, or its history ends before the
 * export and `keptSince` (the oldest time the catalogue keeps every version from, when known) does
 * not vouch that nothing between was forgotten.
 */
export async function recordAt (plant: Plant, exported: ExportedAt, history: AsyncIterable<HistoryEntry[]>, keptSince?: number): Promise<ExportBase | undefined> {
  const record: Record<string, unknown> = { ...plant }
  const changedBy = new Map<string, string>()
  const base = (): ExportBase => ({ fields: record as unknown as Plant, changedBy })
  let found = false
  for await (const page of history) {
    for (const entry of page) {
      const at = Date.parse(entry.at)
      // The version the export wrote: unless, kept to the second, the one before it is in that second too.
      if (found) return exported.second && Math.floor(at / 1000) === Math.floor(exported.ms / 1000) ? undefined : base()
      if (!after(at, exported)) {
        if (!exported.second) return base()
        found = true
        continue
      }
      // To the trash and back again changes no field.
      if (entry.kind === 'deleted' || entry.kind === 'restored') continue
      // A revert changed fields as an update does.
      if (entry.kind !== 'updated' && entry.kind !== 'reverted') return undefined
      for (const [field, [before]] of Object.entries(entry.changes)) {
        if (field === 'photos') continue
        record[field] = before
        // Newest first: the first change of a field met is the one that gave it its value now.
        if (!changedBy.has(field)) changedBy.set(field, `by ${entry.actor}, ${entry.at}`)
      }
    }
  }
  return found || (keptSince !== undefined && exported.ms >= keptSince) ? base() : undefined
}

/** What a plant was at the export, and who last changed each field changed since, and when (for a conflict's message). */
export interface ExportBase { fields: Plant, changedBy: Map<string, string> }
