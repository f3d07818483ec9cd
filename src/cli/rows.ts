import { createHash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import { parse } from 'csv-parse'
import { identityFields } from '../catalogue/store-fields.js'
import type { PlantFields } from '../plants/schemas.js'
import { UsageError } from './command.js'
import { restoreFormula } from './formula-cells.js'

// Reading an import file: one candidate plant per row, each with the line it starts on.

import type { Format } from './command.js'

/**
 * A row: `value` the plant's members (an empty CSV cell left out, so it takes the API's default),
 * `id` the plant it names (as written: checked by the import), `columns` the CSV's columns (a JSON
 * Lines row's are its members): what an update of an existing plant changes.
 */
export type Row =
  | { line: number, ok: true, value: Record<string, unknown>, id?: unknown, columns?: string[] }
  | { line: number, ok: false, reason: string }

const CSV_COLUMNS = ['name', 'category', 'tags', 'status', 'description', 'price', 'sku', 'barcode']
/**
 * Export writes ids, photo URLs and (in JSON Lines) the record's times; import accepts them so an
 * export loads back. An id names the plant a row updates; times are the catalogue's to set, and
 * photos are uploaded pictures, not fields (POST /v3/plant/{id}/photos).
 */
const IGNORED = ['photos', 'createdAt', 'updatedAt']
const IGNORED_NOTE = 'the catalogue sets the times; photos are uploaded to a plant, not imported'
/** A CSV header is read in lower case. */
const IGNORED_CSV = IGNORED.map((column) => column.toLowerCase())

export function formatOf (file: string, explicit: Format | undefined): Format {
  if (explicit) return explicit
  if (/\.csv$/i.test(file)) return 'csv'
  if (/\.(jsonl|ndjson)$/i.test(file)) return 'jsonl'
  throw new UsageError(`cannot tell the format of ${file} from its name: pass --format csv or --format jsonl`)
}

export function readRows (file: string, format: Format, notice: (message: string) => void): AsyncGenerator<Row> {
  return format === 'csv' ? readCsv(file, notice) : readJsonLines(file, notice)
}

/** The identity of a row for re-runs: the whole record once defaulted, tags in their given order. */
export function identityOf (fields: PlantFields): string {
  return createHash('sha256').update(JSON.stringify(identityFields(fields))).digest('base64url').slice(0, 22)
}

async function * readCsv (file: string, notice: (message: string) => void): AsyncGenerator<Row> {
  const parser = createReadStream(file).pipe(parse({ bom: true, info: true, skip_empty_lines: true, skip_records_with_error: true }))
  // Malformed records are skipped by the parser and reported here, merged back into line order.
  const skipped: Row[] = []
  parser.on('skip', (err: Error & { lines?: number }) => {
    skipped.push({ line: err.lines ?? 0, ok: false, reason: `not valid CSV: ${err.message.replace(/ (on|at) line \d+.*$/, '')}` })
  })
  let columns: string[] | undefined
  for await (const { record, info } of parser as AsyncIterable<{ record: string[], info: { lines: number } }>) {
    // info.lines is where the record ends; a quoted cell may span lines, so count back to its start.
    const line = info.lines - record.reduce((n, cell) => n + (cell.match(/\n/g)?.length ?? 0), 0)
    while (skipped.length > 0 && skipped[0].line < line) yield skipped.shift()!
    if (!columns) {
      columns = header(record, file)
      const ignored = columns.filter((c) => IGNORED_CSV.includes(c))
      if (ignored.length > 0) notice(`note: the ${ignored.join(' and ')} column${ignored.length > 1 ? 's' : ''} of ${file} ${ignored.length > 1 ? 'are' : 'is'} ignored; ${IGNORED_NOTE}`)
      continue
    }
    const value: Record<string, unknown> = {}
    let id: string | undefined
    columns.forEach((column, i) => {
      const cell = restoreFormula(record[i])
      if (column === 'name') value.name = cell
      else if (column === 'id') id = cell === '' ? undefined : cell
      // A spreadsheet cannot tell an empty cell from a missing one: empty takes the API's default.
      else if (!IGNORED_CSV.includes(column) && cell !== '') value[column] = column === 'tags' ? cell.split('|') : cell
    })
    yield { line, ok: true, value, id, columns: columns.filter((c) => c !== 'id' && !IGNORED_CSV.includes(c)) }
  }
  yield * skipped
  if (!columns) throw new UsageError(`${file} has no header line (expected ${CSV_COLUMNS.join(',')})`)
}

function header (record: string[], file: string): string[] {
  const columns = record.map((c) => c.trim().toLowerCase())
  const unknown = columns.filter((c) => !CSV_COLUMNS.includes(c) && c !== 'id' && !IGNORED_CSV.includes(c))
  if (unknown.length > 0) throw new UsageError(`${file}: unknown column ${unknown.map((c) => JSON.stringify(c)).join(', ')} (allowed: ${CSV_COLUMNS.join(', ')})`)
  const repeated = columns.filter((c, i) => columns.indexOf(c) !== i)
  if (repeated.length > 0) throw new UsageError(`${file}: column ${JSON.stringify(repeated[0])} appears twice`)
  if (!columns.includes('name')) throw new UsageError(`${file}: the header has no name column (expected ${CSV_COLUMNS.join(',')})`)
  return columns
}

async function * readJsonLines (file: string, notice: (message: string) => void): AsyncGenerator<Row> {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity })
  let line = 0
  let noticed = false
  for await (const text of lines) {
    line++
    if (text.trim() === '') continue
    let value: unknown
    try {
      value = JSON.parse(line === 1 ? text.replace(/^\uFEFF/, '') : text)
    } catch (err) {
      yield { line, ok: false, reason: `not valid JSON: ${(err as Error).message}` }
      continue
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      yield { line, ok: false, reason: 'must be a JSON object' }
      continue
    }
    const record = value as Record<string, unknown>
    const ignored = IGNORED.filter((member) => Object.hasOwn(record, member))
    if (ignored.length > 0) {
      for (const member of ignored) delete record[member]
      if (!noticed) notice(`note: ${ignored.join(' and ')} members in ${file} are ignored; ${IGNORED_NOTE}`)
      noticed = true
    }
    const { id, ...members } = record
    yield { line, ok: true, value: members, id }
  }
}
