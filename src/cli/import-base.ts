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

/** A row's updatedAt: undefined for none (an empty cell), a reason when it is not a time the export wrote. */
export function exportedAt (updatedAt: unknown, example: string): ExportedAt | undefined | { invalid: string } {
  if (updatedAt === undefined || updatedAt === null) return undefined
  const match = typeof updatedAt === 'string' ? TIMESTAMP.exec(updatedAt) : null
  const ms = match === null ? NaN : Date.parse(updatedAt as string)
  if (Number.isNaN(ms)) {
    return { invalid: `/updatedAt must be the time plants export wrote (like ${example}), not ${JSON.stringify(updatedAt)}; an empty cell (or no updatedAt member) updates the plant as it is now, with no check of what changed since the export` }
  }
  return { ms, second: match![1] === undefined }
}

/** Whether a change at `at` (ms) came after the export: within the same second, for a time kept to the second. */
export const after = (at: number, exported: ExportedAt): boolean =>
  exported.second ? Math.floor(at / 1000) > Math.floor(exported.ms / 1000) : at > exported.ms

/**
 * The fields `plant` had at the export: the changes after it undone, newest first. Undefined when
 * its history no longer reaches back that far (HISTORY_RETENTION_DAYS), or the plant was made
 * (or restored from the trash) since.
 */
export async function recordAt (plant: Plant, exported: ExportedAt, history: AsyncIterable<HistoryEntry[]>): Promise<Plant | undefined> {
  const record: Record<string, unknown> = { ...plant }
  for await (const page of history) {
    for (const entry of page) {
      if (!after(Date.parse(entry.at), exported)) return record as unknown as Plant
      if (entry.kind !== 'updated') return undefined
      for (const [field, [before]] of Object.entries(entry.changes)) if (field !== 'photos') record[field] = before
    }
  }
  return undefined
}
