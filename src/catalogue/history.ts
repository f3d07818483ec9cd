import type { ChangeKind } from './changes.js'
import type { Plant, PlantFields, PlantStatus, StockTotals } from './plant.js'

// A plant's history: one entry per version, written by the store in the same
// transaction as the change, holding only the fields that changed, each as [before, after].
// A revert walks the entries newer than the version it goes back to, newest first, putting back
// each field's `before`: no version needs to be stored whole.

/** The fields a history entry speaks of, in the record's order; photos as their ids. */
export const HISTORY_FIELDS = ['name', 'category', 'tags', 'status', 'description', 'price', 'sku', 'barcode', 'lowStockAt', 'stock', 'photos'] as const
export type HistoryField = typeof HISTORY_FIELDS[number]

/**
 * Each changed field with its value before and after (`photos`: the photos' ids, in order; `stock`:
 * the totals, which only movements change, so a revert never puts them back).
 */
export type FieldChanges = Partial<Record<HistoryField, [unknown, unknown]>>

/**
 * What a version was: the feed's kinds, and two of `updated`'s and `created`'s own. `reverted`: a
 * revert gave the plant an earlier version's fields (the feed says `updated`); `restored`: it came
 * back from the trash with the fields it was deleted with (the feed says `created`).
 */
export type HistoryKind = ChangeKind | 'reverted' | 'restored'
export const HISTORY_KINDS: readonly HistoryKind[] = ['created', 'updated', 'deleted', 'reverted', 'restored']

export interface HistoryEntry {
  version: number
  /** When it was committed: RFC 3339 UTC with milliseconds. */
  at: string
  /** Who made it (WriteMeta.actor). */
  actor: string
  /**
   * `created`: a new plant (its fields with a value, each from null); `updated`; `reverted` (the
   * fields it changed back); `deleted`: moved to the trash, and `restored` from it (no changes).
   */
  kind: HistoryKind
  changes: FieldChanges
  /** A stock movement's reason (catalogue/stock.ts), for the version a movement made. */
  reason?: string
  /** The location a movement moved stock at. */
  location?: string
  /** The reservation whose step (hold, commit, release, expiry) made the version. */
  reservation?: string
  /** The units a movement or a reservation's step moved (unitsMoved). */
  quantity?: number
  /** A reservation's step that held the plant at several places: each place and its units (`location` names one place only). */
  places?: PlaceUnits[]
}

/** A place a reservation's step moved units at, and how many. */
export interface PlaceUnits { location: string, quantity: number }

/** What a movement's or a reservation step's entry says beside its changes: where (one place, or each of several), and which reservation. */
export interface MovementAbout { location?: string, reservation?: string, places?: PlaceUnits[] }

/**
 * A movement's entry as stored: the fields it changed (fieldChanges: a movement changes status and
 * stock alone, in that order) with its reason, location, reservation and places beside them, as
 * members no plant field is named. Written by hand, not by JSON.stringify of that object: the writer
 * builds one a sale, and the object's stringify took about 2 µs of it (the same text: its test).
 */
export function movementEntry (before: Plant, after: Plant, reason: string, about: MovementAbout): string {
  let text = '{'
  if (before.status !== after.status) text += `"status":[${JSON.stringify(before.status)},${JSON.stringify(after.status)}],`
  const was = before.stock ?? null
  const now = after.stock ?? null
  if (!sameTotals(was, now)) text += `"stock":[${totalsText(was)},${totalsText(now)}],`
  text += `"reason":${JSON.stringify(reason)}`
  for (const [name, value] of Object.entries(about)) if (value !== undefined) text += `,"${name}":${JSON.stringify(value)}`
  return `${text}}`
}

const sameTotals = (a: StockTotals | null, b: StockTotals | null): boolean =>
  a === null || b === null ? a === b : a.onHand === b.onHand && a.reserved === b.reserved && a.available === b.available

/** The totals as JSON.stringify writes them (their members in StockTotals' order). */
const totalsText = (t: StockTotals | null): string => t === null ? 'null' : `{"onHand":${t.onHand},"reserved":${t.reserved},"available":${t.available}}`

/** A reservation's steps that hold units or let them go: they move `reserved`, every other reason `onHand`. */
const HOLD_REASONS = ['reserve', 'release', 'expire']

/**
 * The units a movement or a step moved, from the plant's totals before and after it (a version is
 * one movement, or one step's lines of the plant): a hold's, release's or expiry's `reserved`,
 * any other reason's `onHand`. Read from the totals every entry keeps, so entries written before
 * it was named carry it too. Undefined when nothing moved.
 */
export function unitsMoved (changes: FieldChanges, reason: string): number | undefined {
  const [before, after] = (changes.stock ?? [null, null]) as [StockTotals | null, StockTotals | null]
  if (after === null) return undefined
  const which = HOLD_REASONS.includes(reason) ? 'reserved' : 'onHand'
  const n = Math.abs(after[which] - (before?.[which] ?? 0))
  return n === 0 ? undefined : n
}

/** A stored entry's changes (JSON) as the entry shows them: a movement's reason, location and reservation apart from the fields, and the units it moved. */
export function entryOf (json: string): { changes: FieldChanges, reason?: string, location?: string, reservation?: string, quantity?: number, places?: PlaceUnits[] } {
  const { reason, location, reservation, places, ...changes } = JSON.parse(json) as FieldChanges & MovementAbout & { reason?: string }
  const quantity = reason === undefined ? undefined : unitsMoved(changes, reason)
  return {
    changes,
    ...(reason === undefined ? {} : { reason }),
    ...(location === undefined ? {} : { location }),
    ...(reservation === undefined ? {} : { reservation }),
    ...(quantity === undefined ? {} : { quantity }),
    ...(places === undefined ? {} : { places })
  }
}

/**
 * How a kind is stored: a small number (SQLite keeps 0 and 1 in no bytes at all). Reverts and
 * restores written before they had kinds of their own are 1 and 0: the migrations make a 0 with no
 * changes a 4 (a creation always lists its name), while a revert cannot be told from an update.
 */
export const KIND_CODES: Record<HistoryKind, number> = { created: 0, updated: 1, deleted: 2, reverted: 3, restored: 4 }
export const kindOfCode = (code: number): HistoryKind => HISTORY_KINDS[code] ?? 'updated'

/** The most a page of history holds, and the size of a page when none is asked for. */
export const HISTORY_PAGE_MAX = 100
export const HISTORY_PAGE_DEFAULT = 20

/** What the last restore from a backup moved past: kept by the store, from the restore's marks. */
export interface RestoredPast {
  /** Every id up to it was handed out before the restore. */
  lastId: number
  /** Every version of such a plant moved above it. */
  versionShift: number
}

/**
 * A history cursor names a plant and a version of it. Every version of a plant handed out before a
 * restore moved above the shift, so a cursor below it, for an id from before, was handed out before
 * the restore: its page would be empty, and the client would take the history as ended.
 */
export const cursorBeforeRestore = (id: number, before: number | undefined, past: RestoredPast | undefined): boolean =>
  past !== undefined && before !== undefined && id <= past.lastId && before <= past.versionShift

/** Days a version is kept when HISTORY_RETENTION_DAYS is not set. */
export const HISTORY_RETENTION_DAYS = 365

const valueOf = (record: Plant, field: HistoryField): unknown =>
  field === 'photos' ? (record.photos ?? []).map((p) => p.id) : (record[field] ?? null)

/** Fields a revert does not put back: photos have operations of their own, stock moves only by movements. */
const NOT_REVERTED: readonly HistoryField[] = ['photos', 'stock']

/** Equal as JSON values (the fields are strings, numbers, nulls, lists of strings and the stock's totals). */
const same = (a: unknown, b: unknown): boolean => {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => x === b[i])
  if (a !== null && b !== null && typeof a === 'object' && typeof b === 'object') return JSON.stringify(a) === JSON.stringify(b)
  return a === b
}

/**
 * What a change did to the fields: every field whose value differs between the records, as
 * [before, after]. Without `before` (a new plant), the fields given a value (null and [] left out).
 */
export function fieldChanges (before: Plant | null, after: Plant): FieldChanges {
  const changes: FieldChanges = {}
  for (const field of HISTORY_FIELDS) {
    const next = valueOf(after, field)
    if (before === null) {
      if (next !== null && !(Array.isArray(next) && next.length === 0)) changes[field] = [null, next]
      continue
    }
    const was = valueOf(before, field)
    if (!same(was, next)) changes[field] = [was, next]
  }
  return changes
}

/** The entry of no field changes: a delete, a restore from the trash. */
export const NO_CHANGES: FieldChanges = Object.freeze({})

/**
 * The fields as they were at `version`, from the fields now (at `currentVersion`) and the entries
 * from `version` to now, newest first: each entry newer than `version` puts back its fields'
 * `before`. Undefined when those entries are not exactly currentVersion down to version (one no
 * longer kept, or from before history was kept). Photos are not fields: they stay as they are.
 */
export function fieldsAt (current: PlantFields, currentVersion: number, version: number, entries: Array<{ version: number, changes: FieldChanges }>): PlantFields | undefined {
  if (version > currentVersion || entries.length !== currentVersion - version + 1) return undefined
  const fields: Record<string, unknown> = { ...current }
  for (const [i, entry] of entries.entries()) {
    if (entry.version !== currentVersion - i) return undefined
    if (entry.version === version) break
    for (const [field, change] of Object.entries(entry.changes)) {
      if (HISTORY_FIELDS.includes(field as HistoryField) && !NOT_REVERTED.includes(field as HistoryField) && change !== undefined) fields[field] = change[0]
    }
  }
  return fields as unknown as PlantFields
}

/** The fields of a stored plant (its record's price form), for a revert to compare and write. */
export const plantFieldsOf = ({ name, category, tags, status, description, price, sku, barcode, lowStockAt }: Plant): PlantFields =>
  ({ name, category, tags, status: status as PlantStatus, description, price, sku, barcode, lowStockAt: lowStockAt ?? null })

/** Whether two sets of fields are the same (a revert to them would change nothing). */
export const sameFields = (a: PlantFields, b: PlantFields): boolean =>
  HISTORY_FIELDS.every((field) => NOT_REVERTED.includes(field) || same(a[field as keyof PlantFields] ?? null, b[field as keyof PlantFields] ?? null))
