import type { BatchOperation } from '../catalogue/batch.js'
import type { Plant, PlantFields, PlantPatch } from '../catalogue/plant.js'
import { canonicalPrice, skuKey } from '../catalogue/price-sku-barcode.js'
import { deletedSinceExport, inTrash } from './batches.js'
import { after, exportedAt, exportTimeOf, type ExportBase } from './import-base.js'
import { identityOf, type Row } from './rows.js'
import { checkPatch, checkPlant } from './validate-row.js'

// What one row of an import does: update the plant its id names (else the plant its SKU names),
// merging the columns it has; or add a plant, unless the catalogue holds as many plants with that
// very record as the file has rows with it (so a re-run adds nothing); or nothing, when the plant
// already has what the row says. A row with the updatedAt an export wrote, naming a plant changed
// since, is compared with what the plant was at the export (import-base.ts): only the cells edited
// in the file are written, and the changes made since stand.

type GoodRow = Extract<Row, { ok: true }>

/** A collection the planner reads and writes by key: import-scratch.ts keeps each in a table on disk. */
export interface Keyed<K, V> {
  get (key: K): V | undefined
  has (key: K): boolean
  set (key: K, value: V): void
}

/** What the catalogue holds that the file's rows name. */
export interface Known {
  /** The plants the rows name by id, each as the rows before leave it. */
  byId: Keyed<number, Plant>
  /** The plant that held each SKU key the rows name, when first read (as the rows before leave it, once one has named it). */
  bySku: Keyed<string, Plant>
  /** How many plants of the catalogue had each record (identityOf) when the import began, for records the file's new plants may have. */
  records: { get (record: string): number | undefined }
  /**
   * Ids of plants in the trash when the import began (deleted, restorable), and ids the catalogue
   * had when the import began whose plants were gone when looked up (deleted meanwhile: in the trash).
   */
  trashed: { has (id: number): boolean }
  /**
   * What each plant changed since the file's export was at the export (loadBases), by id; null
   * when its history no longer reaches back to it.
   */
  bases: Keyed<number, ExportBase | null>
}

/** A SKU an earlier row gives: its line, and the plant (undefined: a new one). */
export interface Given { line: number, plant: number | undefined }

/** What the rows before the one planned did: the planner's memory of the file, as long as the file. */
export interface SoFar {
  /** Occurrences so far of each new plant's record that the catalogue holds (no count makes another unchanged). */
  seen: Omit<Keyed<string, number>, 'has'>
  /** The first line that named each plant: `claim` gives it, or keeps `line` as that line when none has. */
  named: { claim (id: number, line: number): number | undefined }
  /**
   * The SKUs earlier rows give a plant (a new one, or one they update), by SKU key. A later row
   * giving one to another plant is refused here, the same in a dry run as in an import (the store
   * would refuse it only once written).
   */
  given: Omit<Keyed<string, Given>, 'has'>
}

export type Plan =
  | { kind: 'refused', reason: string }
  /**
   * `what` says it for a dry run: built only when asked, since an import of 100,000 updates never
   * shows it. `added`, in the same words, is what the import says once the row is written, for a row
   * whose id named no plant (the plant does not keep it): the only add an operator would not expect.
   */
  | { kind: 'add', operation: BatchOperation, what: () => string, added?: () => string }
  | { kind: 'update', operation: BatchOperation, what: () => string }
  /** Nothing to write: the plant already has what the row says, or (a new plant) the catalogue has its record already. */
  | { kind: 'unchanged' }

/** An empty CSV cell in a column an update names: what an empty cell means in an add (the API's default). */
const EMPTY: Record<string, unknown> = { name: '', category: null, tags: [], status: 'available', description: null, price: null, sku: null, barcode: null, lowStockAt: null }

/** The id a row names: a positive integer (digits in a CSV cell); undefined for none. */
export function rowId (raw: unknown): number | undefined | { invalid: string } {
  if (raw === undefined || raw === null) return undefined
  const id = typeof raw === 'string' && /^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : raw
  return typeof id === 'number' && Number.isSafeInteger(id) && id > 0 ? id : { invalid: `/id must be a positive integer (the id of a plant to update), not ${JSON.stringify(raw)}` }
}

/** The plant of the catalogue a row names, as the rows before it leave it: by its id, else by its SKU (`bySku`). */
export function targetOf (row: GoodRow, known: Known): { plant: Plant, bySku: boolean } | undefined {
  const id = rowId(row.id)
  const byId = typeof id === 'number' ? known.byId.get(id) : undefined
  if (byId !== undefined) return { plant: byId, bySku: false }
  const sku = rowSku(row)
  const bySku = sku === undefined ? undefined : known.bySku.get(sku)
  return bySku === undefined ? undefined : { plant: bySku, bySku: true }
}

/** The SKU a row's new plant would have, as SKUs are compared (ignoring case). */
export const rowSku = (row: GoodRow): string | undefined => typeof row.value.sku === 'string' ? skuKey(row.value.sku) : undefined

/**
 * The name of a row as a new plant, or undefined when it is not a valid new plant. The row's value
 * is defaulted in place: each pass over the file reads rows of its own.
 */
export function rowName (row: GoodRow): string | undefined {
  const check = checkPlant(row.value)
  return check.ok ? check.fields.name : undefined
}

// Strings and nulls (most members) compare as they are; tags as their JSON.
const same = (member: string, before: unknown, after: unknown): boolean =>
  member === 'price'
    ? canonicalPrice(before as string | null) === canonicalPrice(after as string | null)
    : before === after || (typeof after === 'object' && after !== null && JSON.stringify(before) === JSON.stringify(after))

const valueIn = (plant: Plant, member: string): unknown => (plant as unknown as Record<string, unknown>)[member]

const shown = (value: unknown): string => JSON.stringify(value)

/** Why a row that would add a plant is refused when the file has no name column. */
const NO_NAME = 'a new plant needs a name, and the file has no name column (without one, a row can only update the plant its id or sku names)'

export class Planner {
  /** How many rows named a plant of the catalogue, by id and by sku (the summary shows both). */
  readonly matched = { id: 0, sku: 0 }
  /** Whether a row that updates a plant had the updatedAt of an export (the summary then says the file is out of date). */
  exported = false
  /** The first line that updates a plant it names by id with no updatedAt to check it against: the summary warns of it. */
  unchecked: number | undefined

  /** `overwrite`: rows update plants changed since the export too (--overwrite). */
  constructor (private readonly known: Known, private readonly soFar: SoFar, private readonly overwrite = false) {}

  plan (row: GoodRow): Plan {
    const id = rowId(row.id)
    if (typeof id === 'object') return { kind: 'refused', reason: id.invalid }
    // A plant deleted since the import began is in the trash too, said in the same words.
    if (id !== undefined && this.known.trashed.has(id)) {
      return { kind: 'refused', reason: exportTimeOf(row.updatedAt) !== undefined ? deletedSinceExport(id) : inTrash(id) }
    }
    const named = targetOf(row, this.known)
    if (named === undefined) return this.add(row)
    const { plant: target, bySku } = named
    this.matched[bySku ? 'sku' : 'id']++
    const earlier = this.soFar.named.claim(target.id, row.line)
    // Two rows with one SKU are two plants' worth of data for one plant: the second is refused, not merged over the first.
    if (bySku && earlier !== undefined) {
      return { kind: 'refused', reason: `sku ${String(row.value.sku)} names plant ${target.id}, which line ${earlier} of the file names already (SKUs are unique ignoring case)` }
    }
    if (earlier === undefined) {
      // The plant as the catalogue had it holds its SKU: a later row naming that SKU finds this plant
      // even once this row has moved the SKU and its batch is written (read by key as planned, import.ts).
      if (target.sku !== null && !this.known.bySku.has(skuKey(target.sku))) this.known.bySku.set(skuKey(target.sku), target)
    }
    return this.update(row, target, bySku)
  }

  /**
   * The columns the row has, merged into the plant: only the members that differ are sent. `bySku`:
   * the row names the plant by its SKU, which is then the plant's own ignoring case.
   */
  private update (row: GoodRow, plant: Plant, bySku: boolean): Plan {
    // Checked in place: a CSV row's members are built here, and a JSON Lines row is read for this pass alone.
    const members = row.columns === undefined ? row.value : Object.fromEntries(row.columns.map((c) => [c, row.value[c] ?? EMPTY[c]]))
    const check = checkPatch(members)
    if (!check.ok) return { kind: 'refused', reason: check.reason }
    // The SKU a row is matched by finds the plant, as a till's scan does: its letter case is how the
    // file happens to spell it (a hand-made price list), not an edit, so the stored spelling stays.
    const differ = Object.entries(check.patch).filter(([member, value]) => !(bySku && member === 'sku') && !same(member, valueIn(plant, member), value))
    if (differ.length === 0) return { kind: 'unchanged' }
    const since = this.sinceExport(row, plant)
    if ('refused' in since) return { kind: 'refused', reason: since.refused }
    const patch: Record<string, unknown> = {}
    const conflicts: string[] = []
    for (const [member, value] of differ) {
      if (since.base !== undefined) {
        const then = valueIn(since.base.fields, member)
        // The cell as it was exported: what the plant has now came since, and stands.
        if (same(member, then, value)) continue
        // Edited in the file and changed since: the file's value only with --overwrite.
        if (!same(member, then, valueIn(plant, member)) && !this.overwrite) {
          conflicts.push(`${member} ${shown(then)} then, ${shown(valueIn(plant, member))} now (${since.base.changedBy.get(member) ?? 'since'}), ${shown(value)} in the file`)
          continue
        }
      }
      patch[member] = value
    }
    // Named by id with nothing to check against: the summary warns of it.
    if (since.base === undefined && row.updatedAt === undefined && !bySku && Object.keys(patch).length > 0) this.unchecked ??= row.line
    if (conflicts.length > 0) {
      return { kind: 'refused', reason: `plant ${plant.id} has changed since the file was exported where the row changes it too (${conflicts.join('; ')}): export again and redo the edit, or run the import with --overwrite to write the file's value where both changed` }
    }
    if (Object.keys(patch).length === 0) return { kind: 'unchanged' }
    if (typeof patch.sku === 'string') {
      const taken = this.takenBy(patch.sku, plant.id)
      if (taken !== undefined) return { kind: 'refused', reason: taken }
      this.soFar.given.set(skuKey(patch.sku), { line: row.line, plant: plant.id })
    }
    // A later row naming the same plant is compared with it as this one leaves it.
    const after = { ...plant, ...patch, ...(patch.price === undefined ? {} : { price: canonicalPrice(patch.price as string | null) }) } as Plant
    this.known.byId.set(plant.id, after)
    const what = (): string => `update plant ${plant.id}: ${Object.entries(patch).map(([member, value]) =>
      `${member} ${shown(valueIn(plant, member))} → ${shown(member === 'price' ? canonicalPrice(value as string | null) : value)}`).join('; ')}`
    return { kind: 'update', operation: { op: 'patch', id: plant.id, patch: patch as PlantPatch }, what }
  }

  /**
   * What the row's cells are compared with besides the plant as it is: when the row was exported
   * before the plant's last change (its updatedAt says when), the plant as it was at the export.
   * None with no updatedAt: every cell that differs is written.
   */
  private sinceExport (row: GoodRow, plant: Plant): { base?: ExportBase } | { refused: string } {
    const exported = exportedAt(row.updatedAt)
    if (exported === undefined) return {}
    if ('invalid' in exported) return { refused: exported.invalid }
    this.exported = true
    const changed = Date.parse(plant.updatedAt)
    if (!after(changed, exported)) {
      // A plant never changes before its last change: a file that says it did was exported elsewhere.
      if (after(exported.ms, { ms: changed, second: exported.second }) && !this.overwrite) {
        return {
          refused: `the file says plant ${plant.id} last changed at ${String(row.updatedAt)}, after its last change here (${plant.updatedAt}): the file comes from another catalogue, ` +
            'where this id names another plant; clear the id column to add its rows as new plants, or run the import with --overwrite to write them over the plants their ids name here'
        }
      }
      return {}
    }
    const base = this.known.bases.get(plant.id)
    if (base !== undefined && base !== null) return { base }
    // Nothing to tell the edits from: with --overwrite, every cell that differs.
    if (this.overwrite) return {}
    return {
      refused: `plant ${plant.id} has changed since the file was exported (updatedAt ${String(row.updatedAt)} in the file, ${plant.updatedAt} in the catalogue), and its ` +
        'history does not show what it was then (versions older than HISTORY_RETENTION_DAYS are forgotten; a plant made since, or two versions in the second a time without milliseconds names, cannot be told apart), ' +
        'so the edits in the row cannot be told from those changes: export again and redo the edit, or run the import with --overwrite to write every cell of the row as it is'
    }
  }

  private add (row: GoodRow): Plan {
    const check = row.columns !== undefined && !row.columns.includes('name') ? { ok: false as const, reason: NO_NAME } : checkPlant(row.value)
    if (!check.ok) {
      // Said first: the row meant a plant of the catalogue, most likely (a price list naming a SKU mistyped, or one no plant has).
      const id = rowId(row.id)
      const sku = typeof row.value.sku === 'string' && row.value.sku !== '' ? row.value.sku : undefined
      const meant = id !== undefined ? `no plant ${String(id)} in the catalogue` : sku !== undefined ? `no plant has sku ${sku}` : undefined
      return { kind: 'refused', reason: meant === undefined ? check.reason : `${meant}, and as a new plant: ${check.reason}` }
    }
    const fields: PlantFields = check.fields
    const taken = fields.sku === null ? undefined : this.takenBy(fields.sku, undefined)
    if (taken !== undefined) return { kind: 'refused', reason: taken }
    const record = identityOf(fields)
    const held = this.known.records.get(record) ?? 0
    // Counted only where the catalogue holds the record: elsewhere no count makes a row unchanged.
    if (held > 0) {
      const occurrence = (this.soFar.seen.get(record) ?? 0) + 1
      this.soFar.seen.set(record, occurrence)
      if (occurrence <= held) return { kind: 'unchanged' }
    }
    if (fields.sku !== null) this.soFar.given.set(skuKey(fields.sku), { line: row.line, plant: undefined })
    if (row.id === undefined) return { kind: 'add', operation: { op: 'create', fields }, what: () => `add ${JSON.stringify(fields.name)}` }
    const said = (verb: string): string => `${verb} ${JSON.stringify(fields.name)} (no plant ${String(row.id)} in the catalogue: a new plant, with an id of its own)`
    return { kind: 'add', operation: { op: 'create', fields }, what: () => said('add'), added: () => said('added') }
  }

  /**
   * Why `sku` cannot go to plant `id` (undefined: a new plant): an earlier row gives it to another,
   * or a plant of the catalogue holds it still (no earlier row has moved it off). The store would
   * refuse the same write; said here, a dry run reports it too.
   */
  private takenBy (sku: string, id: number | undefined): string | undefined {
    const key = skuKey(sku)
    const earlier = this.soFar.given.get(key)
    if (earlier !== undefined) {
      if (id !== undefined && earlier.plant === id) return undefined
      return `sku ${sku} is taken by line ${earlier.line} of the file, which gives it to ${earlier.plant === undefined ? 'a new plant' : `plant ${earlier.plant}`} (SKUs are unique ignoring case)`
    }
    const holder = this.known.bySku.get(key)
    if (holder === undefined || holder.id === id) return undefined
    // As the rows before this one leave it (a row that moved its SKU off has updated it here).
    const now = this.known.byId.get(holder.id) ?? holder
    if (now.sku === null || skuKey(now.sku) !== key) return undefined
    return `sku ${sku} is taken by plant ${holder.id} (SKUs are unique ignoring case; a row that frees it must come before the row that takes it)`
  }
}
