import { existsSync } from 'node:fs'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { MAX_BATCH_OPERATIONS, type BatchOperation } from '../catalogue/batch.js'
import type { Plant } from '../catalogue/plant.js'
import { skuKey } from '../catalogue/store-fields.js'
import { databaseFile, emptyCatalogue, locate, openCatalogue, type Location } from './catalogue.js'
import type { Catalogue, PlantFinder } from './catalogue-interface.js'
import {
  CommandFailed, FORMATS, formatDuration, oneOf, plural, positiveInteger, TARGET_HELP, TARGET_OPTIONS, UsageError, type Command, type Format, type Io
} from './command.js'
import { after, exportTimeOf, recordAt, type ExportedAt } from './import-base.js'
import { Planner, rowId, rowRecord, rowSku, targetOf, type Known } from './import-plan.js'
import { startProgress } from './progress.js'
import { formatOf, identityOf, readRows, type Row } from './rows.js'

/*
 * A row with an id updates that plant, a row whose SKU a plant has updates that plant, any other
 * row adds one (import-plan.ts). Updates merge the row's columns and send only what differs, so an
 * exported file edited in a spreadsheet changes exactly the edited plants. A new plant is added only
 * when the catalogue holds fewer plants with its whole record than the file has rows with it, so
 * the same file twice adds nothing and an import cut short is finished by running it again, with no
 * ledger beside the catalogue. Everything is written through the store's batch (POST /v3/plant/batch
 * over --url): all or nothing a batch, a refused row reported and the rest of its batch sent again.
 */

const PAGE = 1000
/**
 * Rows per batch: the most a batch may hold on a data folder or PostgreSQL, where each batch is a
 * commit (an fsync on SQLite: 200 rows a commit spent more time waiting for the disk than writing);
 * fewer through a service, whose 1 MiB body 500 plants of long descriptions would not fit in.
 */
const DEFAULT_BATCH = { store: MAX_BATCH_OPERATIONS, service: 200 }
/**
 * Rows planned between turns of the event loop while a batch is being written. A file is read a
 * megabyte (some 6,000 rows) at a time, and planning ran through it with no turn: a batch handed to
 * the store did not even start (its group commit waits for a turn) until the next batch was planned,
 * and each of its round trips then waited for the planning in hand. Planning and writing took turns
 * instead of overlapping (PostgreSQL idle 45 % of the import, the CLI 65 %).
 */
const ROWS_A_TURN = 20
/** Rows whose plants are looked up at a time, where the catalogue looks them up by key (Lookup). */
const LOOKUP_ROWS = 1000

export const importCommand: Command = {
  name: 'import',
  usage: `Usage: plants import FILE [options]

Adds the plants in FILE to the catalogue, and updates the plants it names: a row with an id updates
that plant, a row whose sku a plant has updates that plant (only the columns the file has change;
a column left out keeps its value), any other row adds a plant; a row whose id names a plant in
the trash is refused (restore that plant first, or clear the id). Every row is checked by the API's
own rules; a bad row is reported as FILE:LINE: reason and skipped, the others are written in
batches, each all or nothing (as POST /v3/plant/batch).

The catalogue is the one the service uses: --url, --data-dir, else DATABASE_URL when it is set,
else DATA_DIR (default ./data).

FILE is CSV with the header id,name,category,tags,status,description,price,sku,barcode in any order
(tags separated by |), or JSON Lines (one add-plant body per line, with an id to update); plants
export writes both. Every column is optional: a file without name (say sku,price) updates the plants
its rows name, and a row of it that names none is refused, as a new plant needs a name. An empty
cell means the API's default, in an update too: it clears the value (category, description, price,
sku, barcode null; tags empty; status available); an empty name is refused. To leave a value as it
is, leave its column out. A broken quote (a quoted cell never closed, or text after its closing
quote) stops the import before anything is written, naming FILE:LINE where that cell starts.

Safe to re-run: a plant that already has what its row says is left unchanged, and a new plant is
added only when the catalogue holds fewer plants with exactly that record than the file has rows
with it. Importing the same file twice changes nothing; an interrupted import is completed by
running it again. Do not run two imports of the same file at the same time.

Options:
  --format csv|jsonl   the file's format (default: from its extension, .csv or .jsonl/.ndjson)
${TARGET_HELP}
  --create             start a new catalogue if the data folder (or PostgreSQL database) has none;
                       without it, a folder that holds no catalogue is refused
  --batch-size N       rows per batch, at most ${MAX_BATCH_OPERATIONS} (default ${DEFAULT_BATCH.store}, ${DEFAULT_BATCH.service} with --url;
                       each batch is one transaction)
  --dry-run            print what would be added and updated (FILE:LINE: what), count what would be
                       left unchanged, report the bad rows (the same as the import would); change nothing
  --overwrite          where a cell edited in the file has also changed since the export, write the file's value (see below)
  --quiet              no progress output
  -h, --help           this help

A file plants export wrote has an updatedAt column (member, in JSON Lines): when each plant last
changed before the export. For a plant changed since (a sale at a till, a colleague's edit), a row
is compared with what the plant was at the export (read from its history): only the cells edited
in the file are written, and the changes made since stand. A row that edits a value that has also
changed since is refused, naming it (price "4.00" then, "4.50" now (by till-3, 2026-11-27T…),
"4.75" in the file): export again and redo the edit, or pass --overwrite to write the file's
value there (the cells not edited still keep the changes made since). Once imported, the file is
older than the plants it updated: export again before editing it further. A row without updatedAt
(an empty cell; a hand-made price list) updates the plant as it is now: every cell that differs is
written, and the import says so.

Exit status: 0 when every row is in the catalogue, 1 when some rows were rejected or the import
failed, 2 for a usage mistake.`,
  options: {
    ...TARGET_OPTIONS,
    format: { type: 'string' },
    'batch-size': { type: 'string' },
    'dry-run': { type: 'boolean' },
    overwrite: { type: 'boolean' },
    create: { type: 'boolean' },
    quiet: { type: 'boolean' }
  },
  run: runImport
}

interface Counts { rowsRead: number, matchedById: number, matchedBySku: number, added: number, updated: number, unchanged: number, rejected: number }

async function runImport (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  if (positionals.length !== 1) throw new UsageError('import takes one FILE')
  const file = positionals[0]
  const format: Format = formatOf(file, oneOf('format', values.format, FORMATS, undefined))
  const given = values['batch-size'] === undefined ? undefined : positiveInteger('batch-size', values['batch-size'], 1)
  if (given !== undefined && given > MAX_BATCH_OPERATIONS) throw new UsageError(`--batch-size must be at most ${MAX_BATCH_OPERATIONS} (the most operations of one batch)`)
  if (!existsSync(file)) throw new CommandFailed(`${file} does not exist`)
  const dryRun = values['dry-run'] === true
  const started = Date.now()
  const notice = (message: string): void => { io.stderr.write(`${message}\n`) }

  // 1. What the file names: the ids and SKUs of plants it may update, the records of plants it may add.
  // A row with an id updates that plant unless the catalogue no longer has it, so only the rows
  // without one are checked and hashed as new plants here (step 2 sees to the others).
  const ids = new Set<number>()
  const skus = new Set<string>()
  const wanted = new Records()
  let rowsRead = 0
  for await (const rows of readRows(file, format, notice)) {
    for (const row of rows) {
      rowsRead++
      if (!row.ok) continue
      const id = rowId(row.id)
      if (typeof id === 'number') ids.add(id)
      const sku = rowSku(row)
      if (sku !== undefined) skus.add(sku)
      if (id === undefined) wanted.add(rowRecord(row))
    }
  }

  const where = await locate(values, io)
  if (values.create && where.kind === 'service') throw new UsageError('--create goes with a data folder or DATABASE_URL, not --url')
  const batchSize = given ?? DEFAULT_BATCH[where.kind === 'service' ? 'service' : 'store']
  // A dry run writes nothing, so it may check a file against a folder or a database that has no
  // catalogue yet: it does not make one (not even with --create).
  const empty = dryRun ? await withoutCatalogue(where) : undefined
  const catalogue = empty === undefined ? await openCatalogue(where, io, { create: !dryRun && values.create === true }) : emptyCatalogue(`${empty} (no catalogue yet)`)
  // Said first: every row then reads as a new plant, and the import itself would stop at once.
  if (empty !== undefined) notice(`note: the ${empty} holds no catalogue yet: every row is checked as a new plant, and the import itself needs --create to start one`)
  const counts: Counts = { rowsRead, matchedById: 0, matchedBySku: 0, added: 0, updated: 0, unchanged: 0, rejected: 0 }
  let finder: PlantFinder | undefined
  let needs: string | undefined
  /** Whether rows that update plants had an export's updatedAt. */
  let fromExport = false
  /** The first line that updates a plant by id with nothing to check it against (no updatedAt). */
  let unchecked: number | undefined
  try {
    // 2. What the catalogue holds that the file names. Where it can look plants up by key
    // (PostgreSQL), the plants each slice of rows names are looked up as it is planned, while the
    // batches before it are written (no snapshot is held: see PostgresPlantFinder); elsewhere, one
    // pass through it first.
    finder = await catalogue.finder?.()
    const known = finder === undefined ? await wholeCatalogue(catalogue, file, format, ids, skus, wanted) : await newPlantsKnown(finder, file, format, ids, wanted)
    // An id of no live plant may name one in the trash: its row is refused (import-plan.ts), not added
    // as a second plant. Before any lookup, `gone` holds every id of the file the catalogue has.
    const live = finder === undefined ? known.byId : known.gone!
    const missing = [...ids].filter((id) => !live.has(id))
    known.trashed = new Set(missing.length === 0 ? [] : await catalogue.trashed?.(missing) ?? [])
    const lookup = finder === undefined ? undefined : new Lookup(finder, known)
    // 3. The file again, row by row: refused, unchanged, or an operation of the next batch.
    const progress = startProgress(io, `${dryRun ? 'checking' : 'importing'} ${file}`, rowsRead, {
      quiet: values.quiet || dryRun,
      afterwards: 'each batch written is kept whole, none half-written: run the same import again to finish (rows already applied count as unchanged)'
    })
    const print = (line: number, reason: string): void => { counts.rejected++; progress.log(`${file}:${line}: ${reason}`) }
    const tell = (line: number, what: string): void => { progress.log(`${file}:${line}: ${what}`) }
    const planner = new Planner(known, values.overwrite === true)
    // Batches are written in order, each after the one before it, but handed over to the catalogue
    // before that one is written: on PostgreSQL the next batch's plants are locked and its outcomes
    // worked out while the one ahead is written (the store waits for it before writing). At most two
    // are with the catalogue; one that names a plant of the batch ahead waits for that batch first,
    // so that resending the batch ahead without its refused rows never waits for its own successor.
    // A row refused while a batch is with the catalogue is reported after that batch's own refusals,
    // so the report stays in line order.
    const handed: Handed[] = []
    const report = (line: number, reason: string): void => {
      const latest = handed[handed.length - 1]
      // A batch that has settled (and said its lines) stays in `handed` until the next flush takes
      // it out: a line given to it then was never said (four of twenty, on a loaded machine).
      if (latest === undefined || latest.settled) print(line, reason)
      else latest.refusedAfter.push([line, reason])
    }
    const settleOldest = async (): Promise<void> => {
      try {
        await handed[0].done
      } finally {
        handed.shift()
      }
    }
    let batch: Planned[] = []
    const flush = async (): Promise<void> => {
      const rows = batch
      batch = []
      const ids = new Set<number>()
      for (const { operation } of rows) if (operation.op !== 'create') ids.add(operation.id)
      while (handed.length >= 2 || (handed.length === 1 && names(handed[0].ids, ids))) await settleOldest()
      const ahead = handed[handed.length - 1]?.done
      const next: Handed = { ids, refusedAfter: [], done: Promise.resolve(), settled: false }
      next.done = (async () => {
        try {
          await applyBatch(catalogue, rows, counts, { refused: print, added: tell }, ahead)
        } finally {
          for (const [line, reason] of next.refusedAfter) print(line, reason)
          next.settled = true
        }
      })()
      // Awaited by settleOldest(); until then a failure must not count as unhandled.
      next.done.catch(() => {})
      handed.push(next)
    }
    let done = 0
    try {
      for await (const rows of readRows(file, format, () => {})) {
        for (const [i, row] of rows.entries()) {
          if (i % LOOKUP_ROWS === 0) {
            const slice = rows.slice(i, i + LOOKUP_ROWS)
            if (lookup !== undefined) await lookup.load(slice)
            await loadBases(slice, known, catalogue)
          }
          // Each row: the bar takes the count as often as it redraws (progress.ts), not in steps of a thousand rows.
          progress.update(++done)
          if (handed.length > 0 && done % ROWS_A_TURN === 0) await nextTurn()
          if (!row.ok) { report(row.line, row.reason); continue }
          const plan = planner.plan(row)
          if (plan.kind === 'refused') report(row.line, plan.reason)
          else if (plan.kind === 'unchanged') counts.unchanged++
          else if (dryRun) {
            counts[plan.kind === 'add' ? 'added' : 'updated']++
            io.stdout.write(`${file}:${row.line}: would ${plan.what()}\n`)
          } else {
            batch.push({ line: row.line, operation: plan.operation, added: plan.kind === 'add' ? plan.added : undefined })
            if (batch.length >= batchSize) await flush()
          }
        }
      }
      if (batch.length > 0) await flush()
      while (handed.length > 0) await settleOldest()
      progress.update(done)
      counts.matchedById = planner.matched.id
      counts.matchedBySku = planner.matched.sku
      fromExport = planner.exported
      unchecked = planner.unchecked
    } finally {
      // Batches still with the catalogue (the file failed to read, or one failed) are seen to their end before it closes.
      await Promise.all(handed.map(async ({ done }) => { await done.catch(() => {}) }))
      progress.stop()
    }
    // Asked only when applying would write: an import with nothing to write sends no request.
    if (dryRun && counts.added + counts.updated > 0) needs = await catalogue.writesNeed?.()
  } finally {
    await finder?.close()
    await catalogue.close()
  }
  summarise(io, file, catalogue.where, dryRun, counts, Date.now() - started)
  // Its updatedAt cells now name the times before this import's own writes: a further edit of those
  // cells would be taken for a change over one made since (import-plan.ts).
  if (unchecked !== undefined) {
    notice(`note: rows update plants by id with no updatedAt (the first: ${file}:${unchecked}): their cells ${dryRun ? 'would be' : 'were'} written over the plants as they are now, ` +
      'including any change made since the file was written (a sale); a file from plants export has the updatedAt column that keeps such changes')
  }
  if (!dryRun && counts.updated > 0 && fromExport) notice(`note: ${file} is now older than the plants it updated: export again before editing it further`)
  // Said ahead, as the dry run passed without a key: the import itself would stop at its first batch.
  if (needs !== undefined) notice(`note: applying this import needs a key: ${needs}`)
  return counts.rejected > 0 ? 1 : 0
}

/** Plants whose history is read at once, for rows naming plants changed since their export (loadBases). */
const HISTORIES_AT_ONCE = 8

/**
 * For each row naming a plant that has changed since the row was exported, what the plant was at
 * the export (Known.bases, import-base.ts), read once per plant before its first row is planned:
 * the planner then writes only the cells edited in the file. Rows of plants unchanged since need
 * no read, which is every row of a file exported just before it is imported.
 */
async function loadBases (rows: Row[], known: Known, catalogue: Catalogue): Promise<void> {
  const bases = known.bases ??= new Map()
  const wanted = new Map<number, { plant: Plant, exported: ExportedAt }>()
  for (const row of rows) {
    if (!row.ok) continue
    const plant = targetOf(row, known)?.plant
    if (plant === undefined || bases.has(plant.id) || wanted.has(plant.id)) continue
    const exported = exportTimeOf(row.updatedAt)
    if (exported !== undefined && after(Date.parse(plant.updatedAt), exported)) wanted.set(plant.id, { plant, exported })
  }
  const queue = [...wanted.values()]
  const keptSince = catalogue.historyRetentionMs === undefined ? undefined : Date.now() - catalogue.historyRetentionMs
  const read = async (): Promise<void> => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const { plant, exported } = next
      bases.set(plant.id, catalogue.history === undefined ? null : await recordAt(plant, exported, catalogue.history(plant.id), keptSince) ?? null)
    }
  }
  await Promise.all(Array.from({ length: Math.min(HISTORIES_AT_ONCE, queue.length) }, read))
}

/** A batch handed over to the catalogue: the plants it names, the rows refused after it (reported once it settles), its end, and whether it has come. */
interface Handed { ids: Set<number>, refusedAfter: Array<[number, string]>, done: Promise<void>, settled: boolean }

const names = (a: Set<number>, b: Set<number>): boolean => {
  for (const id of b) if (a.has(id)) return true
  return false
}

/** The records (identityOf) of the new plants a file may add, and their names: a plant of another name is not hashed. */
class Records {
  readonly records = new Set<string>()
  readonly names = new Set<string>()
  add (row: { record: string, name: string } | undefined): void {
    if (row === undefined) return
    this.records.add(row.record)
    this.names.add(row.name)
  }
}

/**
 * One pass through the catalogue (keyset pages) for the plants the file's ids and SKUs name and the
 * counts of its new plants' records. A row whose id the catalogue does not have (and whose SKU no
 * plant has) adds a plant: its record is counted too, by one more pass over the file and the
 * catalogue (rare: a plant deleted since the export, or ids from another catalogue).
 */
async function wholeCatalogue (catalogue: Catalogue, file: string, format: Format, ids: Set<number>, skus: Set<string>, wanted: Records): Promise<Known> {
  const known = await knownPlants(catalogue, ids, skus, wanted)
  if (known.byId.size < ids.size) {
    const orphans = new Records()
    for await (const rows of readRows(file, format, () => {})) {
      for (const row of rows) {
        if (!row.ok) continue
        const id = rowId(row.id)
        const sku = rowSku(row)
        if (typeof id === 'number' && !known.byId.has(id) && (sku === undefined || !known.bySku.has(sku))) orphans.add(rowRecord(row))
      }
    }
    for (const record of wanted.records) orphans.records.delete(record)
    if (orphans.records.size > 0) {
      const more = await knownPlants(catalogue, new Set(), new Set(), orphans)
      for (const [record, n] of more.records) known.records.set(record, n)
    }
  }
  return known
}

/**
 * Before anything is written, where plants are looked up by key: which of the file's ids the
 * catalogue has, and the counts of the records of every new plant the file may add (the rows without
 * an id, and those whose id the catalogue does not have and whose SKU no plant has), by their names.
 * The plants themselves are looked up as their rows are planned (Lookup).
 */
async function newPlantsKnown (finder: PlantFinder, file: string, format: Format, ids: Set<number>, wanted: Records): Promise<Known> {
  const known: Known = { byId: new Map(), bySku: new Map(), records: new Map(), gone: new Set() }
  const present = new Set(await finder.existing([...ids]))
  if (present.size < ids.size) {
    const orphans = new Map<string, Records>()
    const none = new Records()
    for await (const rows of readRows(file, format, () => {})) {
      for (const row of rows) {
        if (!row.ok) continue
        const id = rowId(row.id)
        if (typeof id !== 'number' || present.has(id)) continue
        const sku = rowSku(row)
        const records = sku === undefined ? none : orphans.get(sku) ?? orphans.set(sku, new Records()).get(sku)!
        records.add(rowRecord(row))
      }
    }
    // A row whose SKU a plant has updates that plant: its record is not wanted.
    for (const plant of await finder.bySkus([...orphans.keys()])) {
      if (plant.sku !== null) orphans.delete(skuKey(plant.sku))
    }
    for (const records of [none, ...orphans.values()]) {
      for (const record of records.records) wanted.records.add(record)
      for (const name of records.names) wanted.names.add(name)
    }
  }
  if (wanted.names.size > 0) {
    for (const plant of await finder.byNames([...wanted.names])) {
      const record = identityOf(plant as Plant & Parameters<typeof identityOf>[0])
      if (wanted.records.has(record)) known.records.set(record, (known.records.get(record) ?? 0) + 1)
    }
  }
  // An id the catalogue had now, gone when its row is looked up: refused, as the store would refuse its update.
  for (const id of present) known.gone!.add(id)
  return known
}

/**
 * The plants a slice of rows names, looked up before the slice is planned, each key once: by id, then
 * by SKU where the planner may look for it (a row without an id, or whose id no plant has) or where
 * the row would give the plant it names another SKU. Every key a write of the import can change is so
 * looked up before that write (the SKU a plant had when first named is kept by the planner), and what
 * is found is what one read of the whole catalogue first would have found. A plant the planner has
 * already changed keeps its version.
 */
class Lookup {
  private readonly ids = new Set<number>()
  private readonly skus = new Set<string>()
  constructor (private readonly finder: PlantFinder, private readonly known: Known) {}

  async load (slice: Row[]): Promise<void> {
    const ids = new Set<number>()
    for (const row of slice) {
      if (!row.ok) continue
      const id = rowId(row.id)
      if (typeof id === 'number' && !this.ids.has(id)) { this.ids.add(id); ids.add(id) }
    }
    if (ids.size > 0) {
      for (const plant of await this.finder.byIds([...ids])) {
        this.known.gone!.delete(plant.id)
        if (!this.known.byId.has(plant.id)) this.known.byId.set(plant.id, plant)
      }
    }
    const skus = new Set<string>()
    for (const row of slice) {
      if (!row.ok) continue
      const sku = rowSku(row)
      if (sku === undefined || this.skus.has(sku)) continue
      const id = rowId(row.id)
      const plant = typeof id === 'number' ? this.known.byId.get(id) : undefined
      if (plant !== undefined && plant.sku !== null && skuKey(plant.sku) === sku) continue
      this.skus.add(sku)
      skus.add(sku)
    }
    if (skus.size === 0) return
    for (const plant of await this.finder.bySkus([...skus])) {
      const key = skuKey(plant.sku!)
      if (skus.has(key) && !this.known.bySku.has(key)) this.known.bySku.set(key, plant)
    }
  }
}

async function knownPlants (catalogue: Catalogue, ids: Set<number>, skus: Set<string>, wanted: Records): Promise<Known> {
  const known: Known = { byId: new Map(), bySku: new Map(), records: new Map() }
  for await (const page of catalogue.pages(PAGE)) {
    for (const plant of page) {
      if (ids.has(plant.id)) known.byId.set(plant.id, plant)
      if (plant.sku !== null && skus.has(skuKey(plant.sku))) known.bySku.set(skuKey(plant.sku), plant)
      if (!wanted.names.has(plant.name)) continue
      const record = identityOf(plant as Plant & Parameters<typeof identityOf>[0])
      if (wanted.records.has(record)) known.records.set(record, (known.records.get(record) ?? 0) + 1)
    }
  }
  return known
}

/** A row planned to be written: its line, its operation, and what to say once it is written (Plan's `added`). */
interface Planned { line: number, operation: BatchOperation, added?: () => string }

/** What a batch says of its rows, each as FILE:LINE: a row refused, and a row added that the dry run spoke of. */
interface Said { refused (line: number, reason: string): void, added (line: number, what: string): void }

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

/** The folder or database that has no catalogue yet, named (a dry run then checks against an empty one), else undefined. */
async function withoutCatalogue (where: Location): Promise<string | undefined> {
  if (where.kind === 'folder') return existsSync(databaseFile(where.dataDir)) ? undefined : `data folder ${where.dataDir}`
  if (where.kind !== 'postgres') return undefined
  const { postgresHasCatalogue, redactUrl } = await import('./postgres-catalogue.js')
  return await postgresHasCatalogue(where.databaseUrl) ? undefined : `PostgreSQL database ${redactUrl(where.databaseUrl)}`
}

function summarise (io: Io, file: string, where: string, dryRun: boolean, counts: Counts, ms: number): void {
  const { rowsRead, matchedById, matchedBySku, added, updated, unchanged, rejected } = counts
  const rate = Math.round(rowsRead / Math.max(ms / 1000, 0.001)).toLocaleString('en')
  const width = String(rowsRead.toLocaleString('en')).length
  const n = (x: number): string => x.toLocaleString('en').padStart(width)
  io.stdout.write(`${dryRun ? 'checked' : 'imported'} ${file} into the ${where} in ${formatDuration(ms)} (${rate} rows/s)${dryRun ? '; nothing was changed' : ''}\n` +
    `  rows read        ${n(rowsRead)}\n` +
    // Rows that named a plant of the catalogue (updated, unchanged or refused): a file meant to
    // update, whose ids or SKUs match nothing, shows it here before it shows as all added.
    `  matched by id    ${n(matchedById)}\n` +
    `  matched by sku   ${n(matchedBySku)}\n` +
    `  ${dryRun ? 'would be added  ' : 'added           '} ${n(added)}\n` +
    `  ${dryRun ? 'would be updated' : 'updated         '} ${n(updated)}\n` +
    `  unchanged        ${n(unchanged)}\n` +
    `  rejected         ${n(rejected)}${rejected > 0 ? `  (${plural(rejected, 'line')} listed on standard error as ${file}:LINE: reason)` : ''}\n`)
}
