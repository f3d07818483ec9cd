import type { Plant } from '../catalogue/plant.js'
import { skuKey } from '../catalogue/price-sku-barcode.js'
import type { PlantFinder } from '../store/admin-store.js'
import type { Catalogue } from './target-interface.js'
import type { Format } from './command.js'
import { after, exportTimeOf, recordAt, type ExportedAt } from './import-base.js'
import { rowId, rowName, rowSku, targetOf, type Known } from './import-plan.js'
import type { Scratch } from './import-scratch.js'
import { identityOf, readRows, type Row } from './rows.js'

// What the catalogue holds that an import's file names: read before anything is written (the
// file's ids and SKUs, and the records of the plants it may add), or as each slice of rows is
// planned (Lookup, where the catalogue looks plants up by key). All of it goes to the import's
// scratch database (import-scratch.ts); only a slice of rows is in memory at a time.

type GoodRow = Extract<Row, { ok: true }>

const PAGE = 1000

/** Every good row of the file, a chunk at a time, read afresh (a pass defaults the rows it checks). */
async function eachChunk (file: string, format: Format, fn: (rows: GoodRow[]) => Promise<void> | void): Promise<void> {
  for await (const rows of readRows(file, format, () => {})) await fn(rows.filter((row): row is GoodRow => row.ok))
}

const recordOf = (plant: Plant): string => identityOf(plant as Plant & Parameters<typeof identityOf>[0])

/**
 * What the file names, before anything is written: the ids and SKUs of plants it may update, the
 * names of the plants it may add (whose records the catalogue is then asked for). A row with an id
 * updates that plant unless the catalogue no longer has it, so only the rows without one are
 * checked as new plants here (the reading of the catalogue sees to the others). The rows read.
 */
export async function surveyFile (file: string, format: Format, scratch: Scratch, notice: (message: string) => void): Promise<number> {
  let rowsRead = 0
  for await (const rows of readRows(file, format, notice)) {
    for (const row of rows) {
      rowsRead++
      if (!row.ok) continue
      const id = rowId(row.id)
      if (typeof id === 'number') scratch.addFileId(id)
      const sku = rowSku(row)
      if (sku !== undefined) scratch.addFileSku(sku)
      const name = id === undefined ? rowName(row) : undefined
      if (name !== undefined) scratch.addName(name, 1)
    }
  }
  return rowsRead
}

/**
 * One pass through the catalogue (keyset pages) for the plants the file's ids and SKUs name and the
 * records of the plants with its new plants' names. A row whose id the catalogue does not have (and
 * whose SKU no plant has) adds a plant: its name is counted too, by one more pass over the file and
 * the catalogue (rare: a plant deleted since the export, or ids from another catalogue).
 */
export async function wholeCatalogue (catalogue: Catalogue, file: string, format: Format, scratch: Scratch): Promise<void> {
  await walk(catalogue, scratch, 1)
  if (scratch.allIdsHeld()) return
  let more = false
  await eachChunk(file, format, (rows) => {
    for (const row of rows) {
      const id = rowId(row.id)
      if (typeof id !== 'number' || scratch.known.byId.has(id)) continue
      const sku = rowSku(row)
      if (sku !== undefined && scratch.known.bySku.has(sku)) continue
      const name = rowName(row)
      if (name !== undefined && scratch.addName(name, 2)) more = true
    }
  })
  if (more) await walk(catalogue, scratch, 2)
}

/** The catalogue read whole: `pass` 1 for the plants the file names and the records of its names, 2 for the records of the names found after. */
async function walk (catalogue: Catalogue, scratch: Scratch, pass: 1 | 2): Promise<void> {
  for await (const page of catalogue.pages(PAGE)) {
    for (const plant of page) {
      if (pass === 1) {
        if (scratch.isFileId(plant.id)) {
          scratch.known.byId.set(plant.id, plant)
          scratch.held(plant.id)
        }
        if (plant.sku !== null && scratch.isFileSku(skuKey(plant.sku))) scratch.known.bySku.set(skuKey(plant.sku), plant)
      }
      if (scratch.isName(plant.name, pass)) scratch.holds(recordOf(plant))
    }
  }
}

/**
 * Before anything is written, where plants are looked up by key: which of the file's ids the
 * catalogue has, and the records of the plants named as every new plant the file may add is (the
 * rows without an id, and those whose id the catalogue does not have and whose SKU no plant has).
 * The plants themselves are looked up as their rows are planned (Lookup).
 */
export async function newPlantsKnown (finder: PlantFinder, file: string, format: Format, scratch: Scratch): Promise<void> {
  for (const ids of scratch.idPages()) {
    for (const id of await finder.existing(ids)) scratch.held(id)
  }
  if (!scratch.allIdsHeld()) {
    await eachChunk(file, format, async (rows) => {
      const bySku = new Map<string, string[]>()
      for (const row of rows) {
        const id = rowId(row.id)
        if (typeof id !== 'number' || scratch.isHeld(id)) continue
        const name = rowName(row)
        if (name === undefined) continue
        const sku = rowSku(row)
        if (sku === undefined) scratch.addName(name, 1)
        else bySku.set(sku, [...bySku.get(sku) ?? [], name])
      }
      if (bySku.size === 0) return
      // A row whose SKU a plant has updates that plant: its name is not wanted.
      for (const plant of await finder.bySkus([...bySku.keys()])) {
        if (plant.sku !== null) bySku.delete(skuKey(plant.sku))
      }
      for (const names of bySku.values()) for (const name of names) scratch.addName(name, 1)
    })
  }
  for (const names of scratch.namePages()) {
    for (const plant of await finder.byNames(names)) scratch.holds(recordOf(plant))
  }
}

/** Which of the file's ids the catalogue did not have name a plant in the trash: their rows are refused (import-plan.ts), not added as second plants. */
export async function trashedOfFile (catalogue: Catalogue, scratch: Scratch): Promise<void> {
  const missing = scratch.missing()
  if (missing.size === 0 || catalogue.trashed === undefined) return
  for (const id of await catalogue.trashed(missing)) scratch.trashed(id)
}

/**
 * The plants a slice of rows names, looked up before the slice is planned, each key once: by id, then
 * by SKU where the planner may look for it (a row without an id, or whose id no plant has) or where
 * the row would give the plant it names another SKU. Every key a write of the import can change is so
 * looked up before that write (the SKU a plant had when first named is kept by the planner), and what
 * is found is what one read of the whole catalogue first would have found. A plant the planner has
 * already changed keeps its version.
 */
export class Lookup {
  constructor (private readonly finder: PlantFinder, private readonly scratch: Scratch) {}

  async load (slice: Row[]): Promise<void> {
    const { scratch } = this
    const ids = new Set<number>()
    for (const row of slice) {
      if (!row.ok) continue
      const id = rowId(row.id)
      if (typeof id === 'number' && !ids.has(id) && scratch.lookUpId(id)) ids.add(id)
    }
    if (ids.size > 0) scratch.lookedUp(ids, await this.finder.byIds([...ids]))
    const skus = new Set<string>()
    for (const row of slice) {
      if (!row.ok) continue
      const sku = rowSku(row)
      if (sku === undefined || skus.has(sku)) continue
      const id = rowId(row.id)
      const plant = typeof id === 'number' ? scratch.known.byId.get(id) : undefined
      if (plant !== undefined && plant.sku !== null && skuKey(plant.sku) === sku) continue
      if (scratch.lookUpSku(sku)) skus.add(sku)
    }
    if (skus.size === 0) return
    for (const plant of await this.finder.bySkus([...skus])) {
      const key = skuKey(plant.sku!)
      if (skus.has(key) && !scratch.known.bySku.has(key)) scratch.known.bySku.set(key, plant)
    }
  }
}

/** Plants whose history is read at once, for rows naming plants changed since their export (loadBases). */
const HISTORIES_AT_ONCE = 8

/**
 * For each row naming a plant that has changed since the row was exported, what the plant was at
 * the export (Known.bases, import-base.ts), read once per plant before its first row is planned:
 * the planner then writes only the cells edited in the file. Rows of plants unchanged since need
 * no read, which is every row of a file exported just before it is imported.
 */
export async function loadBases (rows: Row[], known: Known, catalogue: Catalogue): Promise<void> {
  const wanted = new Map<number, { plant: Plant, exported: ExportedAt }>()
  for (const row of rows) {
    if (!row.ok) continue
    const exported = exportTimeOf(row.updatedAt)
    if (exported === undefined) continue
    const plant = targetOf(row, known)?.plant
    if (plant === undefined || wanted.has(plant.id) || !after(Date.parse(plant.updatedAt), exported) || known.bases.has(plant.id)) continue
    wanted.set(plant.id, { plant, exported })
  }
  const queue = [...wanted.values()]
  const keptSince = catalogue.historyRetentionMs === undefined ? undefined : Date.now() - catalogue.historyRetentionMs
  const read = async (): Promise<void> => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const { plant, exported } = next
      known.bases.set(plant.id, catalogue.history === undefined ? null : await recordAt(plant, exported, catalogue.history(plant.id), keptSince) ?? null)
    }
  }
  await Promise.all(Array.from({ length: Math.min(HISTORIES_AT_ONCE, queue.length) }, read))
}
