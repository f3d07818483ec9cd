import { existsSync } from 'node:fs'
import type { PlantFields } from '../plants/schemas.js'
import { databaseFile, emptyCatalogue, locate, openCatalogue } from './catalogue.js'
import type { NewRow } from './catalogue-interface.js'
import {
  CommandFailed, FORMATS, formatDuration, oneOf, plural, positiveInteger, TARGET_HELP, TARGET_OPTIONS, UsageError, type Command, type Format, type Io
} from './command.js'
import { startProgress } from './progress.js'
import { formatOf, identityOf, readRows } from './rows.js'
import { checkPlant } from './validate-row.js'

/*
 * Re-runs add nothing because a row's identity is its whole record (name, category, tags, status,
 * after defaults): a file row is added only when the catalogue holds fewer plants with that record
 * than the file has rows with it. So the same file twice adds nothing, an import cut short is
 * finished by running it again, and rows that are repeated on purpose are all kept. It needs no
 * ledger beside the catalogue, so it works the same on a data folder and through the API.
 */

const PAGE = 1000

export const importCommand: Command = {
  name: 'import',
  usage: `Usage: plants import FILE [options]

Adds the plants in FILE to the catalogue. Every row is checked by the API's own rules; a bad row is
reported as FILE:LINE: reason and skipped, the others are written in batches.

The catalogue is the one the service uses: --url, --data-dir, else DATABASE_URL when it is set,
else DATA_DIR (default ./data).

FILE is CSV with the header name,category,tags,status (tags separated by |; an empty cell takes the
API's default) or JSON Lines (one add-plant body per line). An id column or member, as written by
plants export, is ignored: the catalogue assigns ids.

Safe to re-run: a row is added only when the catalogue holds fewer plants with exactly that record
(name, category, tags, status) than the file has rows with it. Importing the same file twice adds
nothing; an interrupted import is completed by running it again. Do not run two imports of the
same file at the same time.

Options:
  --format csv|jsonl   the file's format (default: from its extension, .csv or .jsonl/.ndjson)
${TARGET_HELP}
  --create             start a new catalogue if the data folder (or PostgreSQL database) has none;
                       without it, a folder that holds no catalogue is refused
  --batch-size N       rows per write (default 1000; each batch is one transaction on a data folder)
  --dry-run            check the file and count what would be added; write nothing
  --quiet              no progress output
  -h, --help           this help

Exit status: 0 when every row is in the catalogue, 1 when some rows were rejected or the import
failed, 2 for a usage mistake.`,
  options: {
    ...TARGET_OPTIONS,
    format: { type: 'string' },
    'batch-size': { type: 'string' },
    'dry-run': { type: 'boolean' },
    create: { type: 'boolean' },
    quiet: { type: 'boolean' }
  },
  run: runImport
}

async function runImport (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  if (positionals.length !== 1) throw new UsageError('import takes one FILE')
  const file = positionals[0]
  const format: Format = formatOf(file, oneOf('format', values.format, FORMATS, undefined))
  const batchSize = positiveInteger('batch-size', values['batch-size'], 1000)
  if (!existsSync(file)) throw new CommandFailed(`${file} does not exist`)
  const started = Date.now()
  const notice = (message: string): void => { io.stderr.write(`${message}\n`) }

  // 1. Check every row and count the records the file holds; report the bad rows by line.
  const inFile = new Map<string, number>()
  let rowsRead = 0
  let rejected = 0
  for await (const row of readRows(file, format, notice)) {
    rowsRead++
    const check = row.ok ? checkPlant(row.value) : row
    if (!check.ok) {
      rejected++
      io.stderr.write(`${file}:${row.line}: ${check.reason}\n`)
      continue
    }
    const key = identityOf(check.fields)
    inFile.set(key, (inFile.get(key) ?? 0) + 1)
  }
  const good = rowsRead - rejected

  // 2. Count how many of those records the catalogue holds already (one pass, keyset pages).
  const where = await locate(values, io)
  if (values.create && where.kind === 'service') throw new UsageError('--create goes with a data folder or DATABASE_URL, not --url')
  // A dry run writes nothing, so it may check a file against a folder that has no catalogue yet.
  const catalogue = values['dry-run'] && where.kind === 'folder' && !existsSync(databaseFile(where.dataDir))
    ? emptyCatalogue(`data folder ${where.dataDir} (no catalogue yet)`)
    : await openCatalogue(where, io, { create: values.create === true })
  let added = 0
  let present = 0
  try {
    const inCatalogue = new Map<string, number>()
    for await (const page of catalogue.pages(PAGE)) {
      for (const plant of page) {
        const key = identityOf(plant as PlantFields)
        if (inFile.has(key)) inCatalogue.set(key, (inCatalogue.get(key) ?? 0) + 1)
      }
    }
    let toAdd = 0
    for (const [key, n] of inFile) toAdd += Math.max(0, n - (inCatalogue.get(key) ?? 0))
    present = good - toAdd
    inFile.clear()

    // 3. Read the file again and write the rows the catalogue lacks, a batch at a time.
    if (!values['dry-run'] && toAdd > 0) {
      const progress = startProgress(io, `importing ${file}`, good, { quiet: values.quiet })
      const seen = new Map<string, number>()
      const refused: string[] = []
      let done = 0
      let batch: NewRow[] = []
      const flush = async (): Promise<void> => {
        const outcomes = await catalogue.createAll(batch)
        outcomes.forEach((outcome, i) => {
          if (outcome.ok) added++
          else refused.push(`${file}:${batch[i].line}: ${outcome.reason}`)
        })
        batch = []
        progress.update(done)
      }
      try {
        for await (const row of readRows(file, format, () => {})) {
          const check = row.ok ? checkPlant(row.value) : row
          if (!check.ok) continue
          done++
          const key = identityOf(check.fields)
          const occurrence = (seen.get(key) ?? 0) + 1
          seen.set(key, occurrence)
          if (occurrence <= (inCatalogue.get(key) ?? 0)) {
            if (done % batchSize === 0) progress.update(done)
            continue
          }
          batch.push({ fields: check.fields, line: row.line })
          if (batch.length >= batchSize) await flush()
        }
        if (batch.length > 0) await flush()
      } finally {
        progress.stop()
      }
      for (const line of refused) io.stderr.write(`${line}\n`)
      rejected += refused.length
    } else if (values['dry-run']) {
      added = toAdd
    }
  } finally {
    await catalogue.close()
  }

  const ms = Date.now() - started
  const rate = Math.round(rowsRead / Math.max(ms / 1000, 0.001)).toLocaleString('en')
  const width = String(rowsRead.toLocaleString('en')).length
  const n = (x: number): string => x.toLocaleString('en').padStart(width)
  io.stdout.write(`${values['dry-run'] ? 'checked' : 'imported'} ${file} into the ${catalogue.where} in ${formatDuration(ms)} (${rate} rows/s)\n` +
    `  rows read        ${n(rowsRead)}\n` +
    `  ${values['dry-run'] ? 'would be added' : 'added         '}   ${n(added)}\n` +
    `  already present  ${n(present)}\n` +
    `  rejected         ${n(rejected)}${rejected > 0 ? `  (${plural(rejected, 'line')} listed above as ${file}:LINE: reason)` : ''}\n`)
  return rejected > 0 ? 1 : 0
}
