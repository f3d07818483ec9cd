import { once } from 'node:events'
import { existsSync } from 'node:fs'
import type { Writable } from 'node:stream'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { MAX_BATCH_OPERATIONS } from '../catalogue/batch.js'
import { emptyCatalogue, locate, openCatalogue, type Location } from './target.js'
import type { PlantFinder } from '../store/admin-store.js'
import { admin, openCatalogueAdmin } from './admin.js'
import {
  CommandFailed, FORMATS, formatDuration, oneOf, plural, positiveInteger, TARGET_HELP, TARGET_OPTIONS, UsageError, type Command, type Format, type Io
} from './command.js'
import { Batches, RowsInHand, type Counts } from './import-apply.js'
import { loadBases, Lookup, newPlantsKnown, surveyFile, trashedOfFile, wholeCatalogue } from './import-known.js'
import { Planner, targetOf } from './import-plan.js'
import { exportTimeOf } from './import-base.js'
import { countSaid, keptSaid, StockCounts, type PlannedCount } from './import-stock.js'
import { Scratch } from './import-scratch.js'
import { startProgress } from './progress.js'
import { formatOf, readRows } from './rows.js'

/*
 * A row with an id updates that plant, a row whose SKU a plant has updates that plant, any other
 * row adds one (import-plan.ts). Updates merge the row's columns and send only what differs, so an
 * exported file edited in a spreadsheet changes exactly the edited plants. A new plant is added only
 * when the catalogue holds fewer plants with its whole record than the file has rows with it, so
 * the same file twice adds nothing and an import cut short is finished by running it again, with no
 * ledger beside the catalogue. Everything is written through the store's batch (POST /v3/plant/batch
 * over --url): all or nothing a batch, a refused row reported and the rest of its batch sent again.
 */

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
 * instead of overlapping (PostgreSQL and the CLI each idle much of the import).
 */
const ROWS_A_TURN = 20
/** Rows whose plants are looked up at a time, where the catalogue looks them up by key (Lookup). */
const LOOKUP_ROWS = 1000
/**
 * Refused rows kept waiting, at most, for the batch with the catalogue to settle (they are said
 * after its own): past that the batch is waited for, so that a slow catalogue and a file of bad
 * rows do not pile them up.
 */
const WAITING_MAX = 500

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

FILE is CSV with the header id,name,category,tags,status,description,price,sku,barcode,lowStockAt
and stock.LOCATION columns (stock.main,stock.greenhouse,…), in any order (tags separated by |), or JSON Lines (one add-plant body per line, with an id to update); plants
export writes both. Every column is optional: a file without name (say sku,price) updates the plants
its rows name, and a row of it that names none is refused, as a new plant needs a name. An empty
cell means the API's default, in an update too: it clears the value (category, description, price,
sku, barcode, lowStockAt null; tags empty; status available); an empty name is refused. To leave a value as it
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
  --stock              count the stock.LOCATION cells: set each named plant's onHand there (a movement
                       with reason count, in the ledger; see below); without it they are left alone
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

plants export writes a stock.LOCATION column for each location (a tracked plant's onHand there).
With --stock, each non-empty such cell of a row naming a plant of the catalogue (by id or sku) sets
its onHand at that location, as a count. A row with updatedAt is compared with the level at the
export (the ledger's): a cell as exported counts nothing, even where the level has moved since (a
sale stands); a cell edited where the level has also moved since is refused, saying what happened
(stock.main moved since the export (sold 1): count it again); --overwrite does not apply to
counts. Else the count is compared with the level read as the row is planned (a sale in between
refuses that count rather than undo it). A row without updatedAt counts against the level now.
--dry-run names each decision (would count … stock.main 9 → 12; would leave …). A location the
catalogue lacks is refused, naming the line and column: the import makes none. A row adding a
plant cannot carry counts (its id is not known yet): import it first, then count it.

Exit status: 0 when every row is in the catalogue, 1 when some rows were rejected or the import
failed, 2 for a usage mistake.`,
  options: {
    ...TARGET_OPTIONS,
    format: { type: 'string' },
    'batch-size': { type: 'string' },
    'dry-run': { type: 'boolean' },
    overwrite: { type: 'boolean' },
    stock: { type: 'boolean' },
    create: { type: 'boolean' },
    quiet: { type: 'boolean' }
  },
  run: runImport
}

/** The most rows the last import of this process held at once (RowsInHand): a test checks it stays bounded whatever the file's size. */
export const lastImport = { peakRows: 0 }

async function runImport (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  if (positionals.length !== 1) throw new UsageError('import takes one FILE')
  const file = positionals[0]
  const format: Format = formatOf(file, oneOf('format', values.format, FORMATS, undefined))
  const given = values['batch-size'] === undefined ? undefined : positiveInteger('batch-size', values['batch-size'], 1)
  if (given !== undefined && given > MAX_BATCH_OPERATIONS) throw new UsageError(`--batch-size must be at most ${MAX_BATCH_OPERATIONS} (the most operations of one batch)`)
  if (!existsSync(file)) throw new CommandFailed(`${file} does not exist`)
  const scratch = new Scratch()
  try {
    return await importFile(file, format, given, values, io, scratch)
  } finally {
    scratch.close()
  }
}

async function importFile (file: string, format: Format, given: number | undefined, values: Record<string, any>, io: Io, scratch: Scratch): Promise<number> {
  const dryRun = values['dry-run'] === true
  const started = Date.now()
  const notice = (message: string): void => { io.stderr.write(`${message}\n`) }

  // 1. What the file names: the ids and SKUs of plants it may update, the names of plants it may add.
  const rowsRead = await surveyFile(file, format, scratch, notice)

  const where = await locate(values, io)
  if (values.create && where.kind === 'service') throw new UsageError('--create goes with a data folder or DATABASE_URL, not --url')
  if (values.stock && where.kind === 'service') throw new UsageError('--stock goes with a data folder or DATABASE_URL, not --url (over HTTP: POST /v3/plant/{id}/stock/movements with reason count)')
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
  /** Without --stock: the stock.<location> columns whose counts were left alone, and the rows that had one. */
  const uncounted = { columns: new Set<string>(), rows: 0 }
  /** With --stock: the counts, planned as their rows are, applied once every plant is written. */
  const stockCounts = values.stock === true ? new StockCounts(catalogue.counter) : undefined
  const counted: PlannedCount[] = []
  try {
    // 2. What the catalogue holds that the file names. Where it can look plants up by key
    // (PostgreSQL), the plants each slice of rows names are looked up as it is planned, while the
    // batches before it are written (no snapshot is held: see PostgresPlantFinder); elsewhere, one
    // pass through it first.
    finder = await catalogue.finder?.()
    if (finder === undefined) await wholeCatalogue(catalogue, file, format, scratch)
    else await newPlantsKnown(finder, file, format, scratch)
    // An id of no live plant may name one in the trash: its row is refused (import-plan.ts), not added as a second plant.
    await trashedOfFile(catalogue, scratch)
    const lookup = finder === undefined ? undefined : new Lookup(finder, scratch)
    // 3. The file again, a chunk of rows at a time: each refused, unchanged, or an operation of the next batch.
    const progress = startProgress(io, `${dryRun ? 'checking' : 'importing'} ${file}`, rowsRead, {
      quiet: values.quiet || dryRun,
      afterwards: 'each batch written is kept whole, none half-written: run the same import again to finish (rows already applied count as unchanged)'
    })
    const print = (line: number, reason: string): void => { counts.rejected++; progress.log(`${file}:${line}: ${reason}`) }
    const tell = (line: number, what: string): void => { progress.log(`${file}:${line}: ${what}`) }
    const planner = new Planner(scratch.known, scratch.soFar, values.overwrite === true)
    if (stockCounts !== undefined) await stockCounts.start()
    const hand = new RowsInHand()
    const batches = new Batches(catalogue, batchSize, counts, { refused: print, added: tell }, hand)
    let done = 0
    try {
      for await (const rows of readRows(file, format, () => {})) {
        hand.take(rows.length)
        for (const [i, row] of rows.entries()) {
          if (i % LOOKUP_ROWS === 0) {
            const slice = rows.slice(i, i + LOOKUP_ROWS)
            if (lookup !== undefined) await lookup.load(slice)
            await loadBases(slice, scratch.known, catalogue)
          }
          // Each row: the bar takes the count as often as it redraws (progress.ts), not in steps of a thousand rows.
          progress.update(++done)
          if (batches.writing && done % ROWS_A_TURN === 0) await nextTurn()
          // The plant a row's counts go to, as the rows before it leave the catalogue (planning it moves on).
          const target = row.ok && row.stock !== undefined && stockCounts !== undefined ? targetOf(row, scratch.known) : undefined
          const stockRefused = row.ok && row.stock !== undefined && stockCounts !== undefined ? stockCounts.refusal(row.stock, target?.plant) : undefined
          if (!row.ok) batches.refuse(row.line, row.reason)
          else if (stockRefused !== undefined) {
            // Still a row that named a plant: the summary's matched lines count it, whatever became of it.
            if (target !== undefined) planner.matched[target.bySku ? 'sku' : 'id']++
            batches.refuse(row.line, stockRefused)
          } else {
            if (row.stock !== undefined && stockCounts === undefined) {
              uncounted.rows++
              for (const { column } of row.stock) uncounted.columns.add(column)
            }
            const plan = planner.plan(row)
            const count = plan.kind === 'refused' || target === undefined || row.stock === undefined ? undefined : await stockCounts!.plan(row.line, target.plant, row.stock, exportTimeOf(row.updatedAt))
            if (count !== undefined) counted.push(count)
            if (plan.kind === 'refused') batches.refuse(row.line, plan.reason)
            else if (plan.kind === 'unchanged') {
              counts.unchanged++
              hand.done(1)
            } else if (dryRun) {
              counts[plan.kind === 'add' ? 'added' : 'updated']++
              io.stdout.write(`${file}:${row.line}: would ${plan.what()}\n`)
              hand.done(1)
            } else {
              await batches.add({ line: row.line, operation: plan.operation, added: plan.kind === 'add' ? plan.added : undefined })
            }
            // Said after the row's update, in the order the import applies them (the counts once every plant is written).
            if (count !== undefined && dryRun) {
              for (const said of [countSaid(count), keptSaid(count)]) if (said !== undefined) io.stdout.write(`${file}:${row.line}: would ${said}\n`)
              if (count.refused !== undefined) print(row.line, count.refused)
            }
          }
          // Refusals wait for the batch with the catalogue to be said in line order: that many are not kept waiting longer.
          if (batches.waiting >= WAITING_MAX) await batches.settle()
          // A line a row, to a pipe slower than the import (a pager, a grep), waits for it rather
          // than piling up in memory, which a large dry run into a pipe did.
          await drained(io.stdout)
          await drained(io.stderr)
        }
      }
      await batches.finish()
      // Counted once every plant of the file is written: each count is a movement of its own (the store's
      // compare and set against the level the row was planned with), outside the import's batches.
      if (!dryRun) for (const count of counted) await stockCounts!.apply(count, (line, reason) => { counts.rejected++; progress.log(`${file}:${line}: ${reason}`) })
      progress.update(done)
      counts.matchedById = planner.matched.id
      counts.matchedBySku = planner.matched.sku
      fromExport = planner.exported
      unchecked = planner.unchecked
    } finally {
      await batches.abandon()
      progress.stop()
      lastImport.peakRows = hand.peak
    }
    // Asked only when applying would write: an import with nothing to write sends no request.
    if (dryRun && counts.added + counts.updated > 0) needs = await catalogue.writesNeed?.()
  } finally {
    await finder?.close()
    await catalogue.close()
  }
  summarise(io, file, catalogue.where, dryRun, counts, Date.now() - started)
  if (stockCounts !== undefined) {
    io.stdout.write(dryRun ? `  would be counted ${plural(counted.reduce((n, c) => n + c.changes.length, 0), 'location')} (the "would count" lines)\n` : `  counted          ${plural(stockCounts.counted, 'location')} (movements with reason count)\n`)
    const kept = dryRun ? counted.reduce((n, c) => n + c.kept.length, 0) : stockCounts.kept
    if (kept > 0) io.stdout.write(`  ${dryRun ? 'would be left  ' : 'left           '}  ${plural(kept, 'location')} as exported, where the stock moved since (${dryRun ? 'the "would leave" lines' : 'no movement'})\n`)
  }
  // Its updatedAt cells now name the times before this import's own writes: a further edit of those
  // cells would be taken for a change over one made since (import-plan.ts).
  if (unchecked !== undefined) {
    notice(`note: rows update plants by id with no updatedAt (the first: ${file}:${unchecked}): their cells ${dryRun ? 'would be' : 'were'} written over the plants as they are now, ` +
      'including any change made since the file was written (a sale); a file from plants export has the updatedAt column that keeps such changes')
  }
  // An export's counts load back with its plants only when asked: a file edited for its prices must not set the stock as it was when exported.
  if (uncounted.rows > 0) {
    const kind = format === 'csv' ? 'column' : 'member'
    notice(`note: the ${[...uncounted.columns].join(', ')} ${kind}${uncounted.columns.size === 1 ? '' : 's'} of ${file} (${plural(uncounted.rows, 'row')} with a count) ${uncounted.columns.size === 1 ? 'was' : 'were'} not counted: ` +
      'run the import with --stock to set each plant\'s stock at those locations (a count, in the ledger)')
  }
  if (!dryRun && counts.updated > 0 && fromExport) notice(`note: ${file} is now older than the plants it updated: export again before editing it further`)
  // Said ahead, as the dry run passed without a key: the import itself would stop at its first batch.
  if (needs !== undefined) notice(`note: applying this import needs a key: ${needs}`)
  return counts.rejected > 0 ? 1 : 0
}

/** Once what was written to `stream` has been taken (a pipe, a socket); at once when nothing waits. */
async function drained (stream: NodeJS.WritableStream): Promise<void> {
  if ((stream as Partial<Writable>).writableNeedDrain === true) await once(stream, 'drain')
}

/** The folder or database that has no catalogue yet, named (a dry run then checks against an empty one), else undefined. */
async function withoutCatalogue (where: Location): Promise<string | undefined> {
  if (where.kind === 'service') return undefined
  const catalogue = await openCatalogueAdmin(where)
  return await admin(async () => catalogue.hasCatalogue()) ? undefined : catalogue.where
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
