import type { Plant } from './api.js'
import { money } from './money.js'
import { byWhom, STATUS_LABELS } from './rows.js'

// A plant's history in staff's words: "Changed 26 Nov 2026, 17:20 by till-3", "Price: €12.00 →
// €9.50", "2 photos added"; never the API's JSON. Also what going back to a version would change.

export type FieldName = 'name' | 'category' | 'tags' | 'status' | 'price' | 'sku' | 'barcode' | 'description'
export type Value = string | string[] | null
export type Fields = Record<FieldName, Value>

/** One version, as GET /v3/plant/{id}/history gives it: each changed field with its value before and after. */
export interface HistoryEntry {
  version: number
  at: string
  actor: string
  kind: 'created' | 'updated' | 'deleted' | 'reverted' | 'restored'
  changes: Partial<Record<FieldName | 'photos', [Value, Value]>> & { stock?: [Stock | null, Stock | null], lowStockAt?: [number | null, number | null] }
  /** A stock movement's reason, for the version a movement made. */
  reason?: string
  /** The place a movement moved stock at (a reservation's step: when its lines name one; none for an entry kept before places were). */
  location?: string
  /** The units a movement moved, or a reservation's step held or let go (none when nothing moved). */
  quantity?: number
  /** A reservation's step at several places: each place and its units (`location` is then absent). */
  places?: Array<{ location: string, quantity: number }>
}

interface Stock { onHand: number, reserved: number, available: number }

/**
 * How the line of a version a stock movement made begins, by its reason, given the units it moved
 * ("Sold 1"; undefined when the totals do not tell them); a hold names its place (" at greenhouse")
 * where it says what was held, the others end with it.
 */
const MOVEMENTS: Record<string, (units: string | undefined, at: string) => string> = {
  received: (n) => n === undefined ? 'Stock received' : `Received ${n}`,
  sale: (n) => n === undefined ? 'Sold' : `Sold ${n}`,
  return: (n) => n === undefined ? 'Returned to stock' : `${n} returned to stock`,
  damaged: (n) => n === undefined ? 'Taken off stock as damaged' : `${n} taken off stock as damaged`,
  count: () => 'Stock counted',
  correction: () => 'Stock corrected',
  reserve: (n, at) => `${n ?? 'Units'} held${at} for a checkout`,
  release: (n, at) => `${n ?? 'Units'} held${at} for a checkout let go`,
  expire: (n, at) => `${n ?? 'Units'} held${at} for a checkout let go when the hold ran out`
}

/** A reservation's steps move what is reserved, not what is on hand. */
const HOLDS = ['reserve', 'release', 'expire']

/** The editor's order of the fields. */
export const FIELD_ORDER: FieldName[] = ['name', 'category', 'tags', 'status', 'price', 'sku', 'barcode', 'description']
const LABELS: Record<FieldName, string> = {
  name: 'Name', category: 'Category', tags: 'Tags', status: 'Status', price: 'Price', sku: 'SKU', barcode: 'Barcode', description: 'Description'
}

const when = new Intl.DateTimeFormat(navigator.language, { dateStyle: 'medium', timeStyle: 'short' })

/** "26 Nov 2026, 17:20", in the browser's language. */
export const whenOf = (at: string): string => when.format(new Date(at))

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`

/** A long text, shortened to what a line can show (at a word's end when one is near). */
function short (text: string): string {
  const line = text.replace(/\s+/g, ' ').trim()
  if (line.length <= 60) return `“${line}”`
  const cut = line.slice(0, 60)
  const space = cut.lastIndexOf(' ')
  return `“${(space >= 40 ? cut.slice(0, space) : cut.slice(0, 59)).replace(/[\s,;:.]+$/, '')}…”`
}

/** One field's value as staff read it. */
function valueWords (field: FieldName, value: Value): string {
  if (Array.isArray(value)) return value.length === 0 ? 'none' : value.join(', ')
  if (field === 'price') return value === null ? 'not priced' : money(value)
  if (value === null) return 'none'
  if (field === 'status') return STATUS_LABELS[value] ?? value
  if (field === 'description') return short(value)
  return value
}

/** "rare added; large removed": what changed in a set of tags. */
function tagWords (before: string[], after: string[]): string {
  const added = after.filter((t) => !before.includes(t))
  const removed = before.filter((t) => !after.includes(t))
  const parts = [added.length > 0 ? `${added.join(', ')} added` : '', removed.length > 0 ? `${removed.join(', ')} removed` : ''].filter(Boolean)
  return parts.length > 0 ? parts.join('; ') : 'put in another order'
}

/** "Price: €12.00 → €9.50", "Tags: rare added". */
function fieldLine (field: FieldName, before: Value, after: Value): string {
  if (field === 'tags') return `${LABELS.tags}: ${tagWords((before ?? []) as string[], (after ?? []) as string[])}`
  return `${LABELS[field]}: ${valueWords(field, before)} → ${valueWords(field, after)}`
}

/** "2 photos added", "1 photo removed", "New cover photo". */
function photoLines (before: string[], after: string[]): string[] {
  const added = after.filter((p) => !before.includes(p)).length
  const removed = before.filter((p) => !after.includes(p)).length
  const lines: string[] = []
  if (added > 0) lines.push(`${plural(added, 'photo', 'photos')} added`)
  if (removed > 0) lines.push(`${plural(removed, 'photo', 'photos')} removed`)
  if (lines.length === 0) lines.push(before[0] !== after[0] ? 'New cover photo' : 'Photos put in another order')
  return lines
}

/** The units a movement moved (or a reservation's step held or let go), as the service counted them. */
const unitsMoved = (entry: HistoryEntry): string | undefined => entry.quantity?.toLocaleString()

/** " at greenhouse"; a step at several places, " at main (1) and greenhouse (2)"; nothing when no place is known. */
function placeWords ({ location, places }: HistoryEntry): string {
  if (location !== undefined) return ` at ${location}`
  if (places === undefined || places.length === 0) return ''
  const each = places.map((p) => `${p.location} (${p.quantity.toLocaleString()})`)
  return ` at ${each.slice(0, -1).join(', ')} and ${each[each.length - 1]}`
}

/** "Sold 1 at greenhouse", "2 held at greenhouse for a checkout": a movement's reason, its units and its place. */
function movementWords (entry: HistoryEntry, reason: string): string {
  const at = placeWords(entry)
  if (HOLDS.includes(reason)) return MOVEMENTS[reason]!(unitsMoved(entry), at)
  return (MOVEMENTS[reason]?.(unitsMoved(entry), at) ?? 'Stock moved') + at
}

/** What kind of change a version was, as its line begins. */
function kindWords (entry: HistoryEntry): string {
  if (entry.reason !== undefined) return movementWords(entry, entry.reason)
  if (entry.kind === 'deleted') return 'Moved to the trash'
  if (entry.kind === 'restored') return 'Restored from the trash'
  if (entry.kind === 'reverted') return 'Went back to an earlier version'
  if (entry.kind === 'created') return 'Added'
  return 'Changed'
}

/** Who made a change; the service's expirer is not named, as the line already says the hold ran out. */
const whoseWords = ({ actor, reason }: HistoryEntry): string => actor === 'expiry' && reason === 'expire' ? '' : byWhom(actor)

/** "Changed 26 Nov 2026, 17:20 by till-3"; a movement's, "Sold 1 at greenhouse on 26 Nov 2026, 17:20 by till-3". */
export const headline = (entry: HistoryEntry): string =>
  `${kindWords(entry)} ${entry.reason === undefined ? '' : 'on '}${whenOf(entry.at)}${whoseWords(entry)}`

/** Each thing a version changed, one line each; a new plant's lines name the values it was given. */
export function changeLines (entry: HistoryEntry): string[] {
  const lines: string[] = []
  for (const field of FIELD_ORDER) {
    const change = entry.changes[field]
    if (change === undefined) continue
    const [before, after] = change
    if (entry.kind === 'created') lines.push(`${LABELS[field]}: ${valueWords(field, after)}`)
    else lines.push(fieldLine(field, before, after))
  }
  const stock = entry.changes.stock
  if (stock !== undefined) lines.push(stockLine(stock[0], stock[1]))
  const low = entry.changes.lowStockAt
  if (low !== undefined) lines.push(`Low stock at: ${low[0] ?? 'never'} → ${low[1] ?? 'never'}`)
  const photos = entry.changes.photos
  if (photos !== undefined) lines.push(...photoLines((photos[0] ?? []) as string[], (photos[1] ?? []) as string[]))
  return lines
}

/** "Total on hand: 12 → 11 (11 available)": the plant's totals over its places (a movement's heading names its place); a plant that stops tracking says so. */
function stockLine (before: Stock | null, after: Stock | null): string {
  if (after === null) return 'Stock: no longer tracked'
  const available = after.available === after.onHand ? '' : ` (${after.available.toLocaleString()} available)`
  return `Total on hand: ${before === null ? 'not tracked' : before.onHand.toLocaleString()} → ${after.onHand.toLocaleString()}${available}`
}

/** The version changed a field (not only photos): going back to it means something. */
export const changedFields = (entry: HistoryEntry): boolean => FIELD_ORDER.some((f) => entry.changes[f] !== undefined)

export function fieldsOf (plant: Plant): Fields {
  return Object.fromEntries(FIELD_ORDER.map((f) => [f, f === 'tags' ? [...plant.tags] : plant[f]])) as Fields
}

/**
 * The fields the plant had once `version` was made, from the fields it has at the newest of
 * `entries` (newest first, none missing between): each newer version's changes taken back.
 */
export function fieldsAt (head: Fields, entries: HistoryEntry[], version: number): Fields {
  const fields = { ...head }
  for (const entry of entries) {
    if (entry.version <= version) break
    for (const field of FIELD_ORDER) {
      const change = entry.changes[field]
      if (change !== undefined) fields[field] = change[0]
    }
  }
  return fields
}

/** What would change from `now` to `then`, one line a field ("Price: €9.50 → €12.00"). */
export function differences (now: Fields, then: Fields): string[] {
  return FIELD_ORDER.filter((f) => JSON.stringify(now[f]) !== JSON.stringify(then[f])).map((f) => fieldLine(f, now[f], then[f]))
}

/** The version an ETag names ("<id>.<version>"). */
export const versionOf = (etag: string): number => Number(/\.(\d+)"$/.exec(etag)?.[1])
