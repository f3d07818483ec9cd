import { hash } from 'node:crypto'
import { createReadStream, readFileSync } from 'node:fs'
import { createInterface } from 'node:readline'
import { identityFields } from '../catalogue/price-sku-barcode.js'
import { findMembers } from '../http/input/json-text-scan.js'
import type { PlantFields } from '../plants/schemas.js'
import { CommandFailed, UsageError, type Format } from './command.js'
import { csvRecords, RECORDS_AT_ONCE } from './csv-reader.js'
import { restoreFormula } from './formula-cells.js'

// Reading an import file: one candidate plant per row, each with the line it starts on.

/**
 * A row: `value` the plant's members (an empty CSV cell left out, so it takes the API's default),
 * `id` the plant it names (as written: checked by the import), `updatedAt` the plant's time of
 * change when it was exported (as written: checked by the import against the catalogue's),
 * `columns` the CSV's columns (a JSON Lines row's are its members): what an update of an existing
 * plant changes.
 */
export type Row =
  | { line: number, ok: true, value: Record<string, unknown>, id?: unknown, updatedAt?: unknown, columns?: string[], stock?: StockCell[] }
  | { line: number, ok: false, reason: string }

/** A column (JSON Lines: a member) `stock.<location>`: a tracked plant's onHand at that location. */
export const STOCK_COLUMN = 'stock.'

/** A row's stock.<location> cell that is not empty: counted by import --stock, else left alone. */
export interface StockCell { column: string, location: string, value: unknown }

const isStockColumn = (column: string): boolean => column.startsWith(STOCK_COLUMN) && column.length > STOCK_COLUMN.length

/** A CSV header is read in lower case; a member's own spelling, where it has capitals. */
const MEMBER_OF: Record<string, string> = { lowstockat: 'lowStockAt' }
const memberOf = (column: string): string => MEMBER_OF[column] ?? column

/** A count or threshold cell: digits are the number they spell; anything else is left for the schema to refuse in its words. */
const wholeNumber = (cell: string): unknown => /^[0-9]{1,15}$/.test(cell) ? Number(cell) : cell

const CSV_COLUMNS = ['name', 'category', 'tags', 'status', 'description', 'price', 'sku', 'barcode', 'lowstockat']
/**
 * Export writes ids, photo URLs, the record's times and (JSON Lines) its version; import accepts
 * them so an export loads back. An id names the plant a row updates, and updatedAt when that plant
 * last changed before the export (a plant changed since is not overwritten: import-plan.ts). The
 * times and versions are the catalogue's to set, and photos are uploaded pictures, not fields
 * (POST /v3/plant/{id}/photos).
 */
const IGNORED = ['photos', 'createdAt', 'version', 'stock']
/** An exported record's members that go without saying: a file with updatedAt was written by export; stock moves by movements. */
const UNSAID = ['photos', 'version', 'stock']
/** Why the ignored columns are ignored, said of those the file has: a file with photos alone is told nothing of times. */
const ignoredBecause = (ignored: string[]): string => [
  ...(ignored.some((column) => !UNSAID.includes(column)) ? ['the catalogue sets the times'] : []),
  ...(ignored.includes('version') ? ['the catalogue sets the versions'] : []),
  ...(ignored.includes('photos') ? ['photos are uploaded to a plant, not imported'] : []),
  ...(ignored.includes('stock') ? ['a plant\'s stock totals follow its levels, which move by movements (a stock.LOCATION count, with --stock)'] : [])
].join('; ')
/** The note of the ignored columns (members): what is ignored, and why where there is a why. */
const ignoredNote = (what: string, ignored: string[]): string => {
  const because = ignoredBecause(ignored)
  return `note: ${what} ignored${because === '' ? '' : `; ${because}`}`
}
/** A CSV header is read in lower case. */
const IGNORED_CSV = IGNORED.map((column) => column.toLowerCase())
const UPDATED_AT_CSV = 'updatedat'

export function formatOf (file: string, explicit: Format | undefined): Format {
  if (explicit) return explicit
  if (/\.csv$/i.test(file)) return 'csv'
  if (/\.(jsonl|ndjson)$/i.test(file)) return 'jsonl'
  throw new UsageError(`cannot tell the format of ${file} from its name: pass --format csv or --format jsonl`)
}

/** The file's rows in line order, a chunk of them at a time (an await per row cost more than some rows), RECORDS_AT_ONCE at most. */
export function readRows (file: string, format: Format, notice: (message: string) => void): AsyncGenerator<Row[]> {
  return format === 'csv' ? readCsv(file, notice) : readJsonLines(file, notice)
}

/** The identity of a row for re-runs: the whole record once defaulted, tags in their given order. */
export function identityOf (fields: PlantFields): string {
  return hash('sha256', JSON.stringify(identityFields(fields)), 'base64url').slice(0, 22)
}

/**
 * Quote errors that leave the parser inside a quoted cell: what follows (often the rest of the file)
 * is read into it or skipped, so no row after it can be trusted. The file is refused as a whole,
 * before anything is written, naming the line where the broken cell starts.
 */
const BROKEN_QUOTES = new Set(['CSV_QUOTE_NOT_CLOSED', 'CSV_INVALID_CLOSING_QUOTE'])

/** A quote inside a cell that does not start with one, said with the cell's column and how to write it. */
const strayQuote = (columns: string[] | undefined, field: number | undefined): string =>
  `a quote inside ${field === undefined ? 'a cell' : columns?.[field] !== undefined ? `the ${columns[field]} cell` : `cell ${field + 1}`}, which does not start with one: put the whole cell in quotes and write each quote in it twice ("")`

/**
 * csv-parse's "Invalid Record Length: expect 7, got 8" in the words of a spreadsheet's user, with
 * the likeliest cause: a price written with a decimal comma (12,50) splits its cell in two.
 */
function cellCount (error: string): string | undefined {
  const m = /Invalid Record Length: expect (\d+), got (\d+)/.exec(error)
  if (m === null) return undefined
  return `the row has ${m[2]} cells and the header ${m[1]}: a cell holding a comma must be in quotes ("12,50"; a price is written with a point, 12.50)`
}

async function * readCsv (file: string, notice: (message: string) => void): AsyncGenerator<Row[]> {
  let columns: string[] | undefined
  /** The columns a row's members come from: the id and the ignored ones left out, the same array for every row. */
  let members: string[] = []
  /** The line of the last refusal: csv-parse refuses a record again at each further stray quote in it; it is one bad row. */
  let refusedLine = 0
  for await (const records of csvRecords(file)) {
    const rows: Row[] = []
    for (const r of records) {
      if ('error' in r) {
        if (r.line === refusedLine) continue
        refusedLine = r.line
        if (r.code !== undefined && BROKEN_QUOTES.has(r.code)) refuseBrokenQuote(file, r.line, notice)
        rows.push({ line: r.line, ok: false, reason: `not valid CSV: ${r.code === 'INVALID_OPENING_QUOTE' ? strayQuote(columns, r.field) : cellCount(r.error) ?? r.error.replace(/ (on|at) line \d+.*$/, '')}` })
        continue
      }
      const record = r.cells
      if (!columns) {
        columns = header(record, file)
        // An export's own photos column (beside its updatedAt) goes without saying on every round trip.
        const ignored = columns.filter((c) => IGNORED_CSV.includes(c) && !(UNSAID.includes(c) && columns!.includes(UPDATED_AT_CSV)))
        if (ignored.length > 0) notice(ignoredNote(`the ${ignored.join(' and ')} column${ignored.length > 1 ? 's' : ''} of ${file} ${ignored.length > 1 ? 'are' : 'is'}`, ignored))
        members = columns.filter((c) => c !== 'id' && c !== UPDATED_AT_CSV && !IGNORED_CSV.includes(c) && !isStockColumn(c)).map(memberOf)
        continue
      }
      const value: Record<string, unknown> = {}
      let id: string | undefined
      let updatedAt: string | undefined
      let stock: StockCell[] | undefined
      for (let i = 0; i < columns.length; i++) {
        const column = columns[i]
        const cell = restoreFormula(record[i])
        if (column === 'name') value.name = cell
        else if (column === 'id') id = cell === '' ? undefined : cell
        else if (column === UPDATED_AT_CSV) updatedAt = cell === '' ? undefined : cell
        // An empty stock cell counts nothing (an untracked plant's, as export writes it).
        else if (isStockColumn(column)) {
          if (cell !== '') (stock ??= []).push({ column, location: column.slice(STOCK_COLUMN.length), value: wholeNumber(cell) })
        // A spreadsheet cannot tell an empty cell from a missing one: empty takes the API's default.
        } else if (cell !== '' && !IGNORED_CSV.includes(column)) value[memberOf(column)] = column === 'tags' ? cell.split('|') : column === 'lowstockat' ? wholeNumber(cell) : cell
      }
      rows.push({ line: r.line, ok: true, value, id, updatedAt, columns: members, stock })
    }
    if (rows.length > 0) yield rows
  }
  if (!columns) throw new UsageError(`${file} has no header line (expected id,${CSV_COLUMNS.map(memberOf).join(',')}, id optional)`)
}

/** Reports the cell whose quote breaks the file as FILE:LINE: reason, then stops the import before it writes. */
function refuseBrokenQuote (file: string, parserLine: number, notice: (message: string) => void): never {
  // The parser names the line where it noticed (for a quote never closed, the end of the file): the
  // cell's own first line is found by reading the file again, which happens only for a broken file.
  const found = firstBrokenQuote(readFileSync(file, 'utf8'))
  const line = found?.line ?? parserLine
  notice(`${file}:${line}: not valid CSV: ${found?.unclosed === false
    ? 'a quoted cell that starts on this line has more text after its closing quote'
    : 'a quoted cell starts on this line and its closing quote is missing'} (a quote inside a quoted cell is written twice: "")`)
  throw new CommandFailed(`nothing was imported: the rows after the broken quote at ${file}:${line} cannot be read reliably; fix it and run the import again`)
}

/**
 * The first quoted cell that is never closed, or that has text after its closing quote, as csv-parse
 * reads CSV (a quote opens a cell only as its first character; "" inside one is a quote): the line it
 * starts on. A quote inside an unquoted cell is a row's own error (reported with that row), not this.
 */
export function firstBrokenQuote (text: string): { line: number, unclosed: boolean } | undefined {
  let line = 1
  let atFieldStart = true
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0
  while (i < text.length) {
    const c = text[i]
    if (atFieldStart && c === '"') {
      const start = line
      i++
      for (;;) {
        if (i >= text.length) return { line: start, unclosed: true }
        const d = text[i]
        if (d === '"') {
          if (text[i + 1] === '"') { i += 2; continue }
          i++
          break
        }
        if (d === '\n') line++
        i++
      }
      const after = text[i]
      if (i < text.length && after !== ',' && after !== '\n' && after !== '\r') return { line: start, unclosed: false }
      atFieldStart = false
      continue
    }
    if (c === ',') atFieldStart = true
    else if (c === '\n') { line++; atFieldStart = true } else if (c !== '\r') atFieldStart = false
    i++
  }
  return undefined
}

function header (record: string[], file: string): string[] {
  const columns = record.map((c) => c.trim().toLowerCase())
  const unknown = columns.filter((c) => !CSV_COLUMNS.includes(c) && c !== 'id' && c !== UPDATED_AT_CSV && !IGNORED_CSV.includes(c) && !isStockColumn(c))
  if (unknown.length > 0) {
    // A spreadsheet set to another locale saves "CSV" with semicolons: the whole header is one column then.
    const separator = columns.length === 1 && /[;\t]/.test(columns[0]) ? `; the file looks separated by ${columns[0].includes(';') ? 'semicolons' : 'tabs'}: save it as CSV with commas` : ''
    throw new UsageError(`${file}: unknown column ${unknown.map((c) => JSON.stringify(c)).join(', ')} (allowed: id, ${CSV_COLUMNS.map(memberOf).join(', ')}, stock.LOCATION, updatedAt)${separator}`)
  }
  const repeated = columns.filter((c, i) => columns.indexOf(c) !== i)
  if (repeated.length > 0) throw new UsageError(`${file}: column ${JSON.stringify(repeated[0])} appears twice`)
  return columns
}

async function * readJsonLines (file: string, notice: (message: string) => void): AsyncGenerator<Row[]> {
  let rows: Row[] = []
  for await (const row of jsonLines(file, notice)) {
    rows.push(row)
    if (rows.length === RECORDS_AT_ONCE) {
      yield rows
      rows = []
    }
  }
  if (rows.length > 0) yield rows
}

async function * jsonLines (file: string, notice: (message: string) => void): AsyncGenerator<Row> {
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
    // As the API answers it: JSON.parse keeps the last of a member written twice, never what was meant.
    const { duplicate } = findMembers(text)
    if (duplicate !== undefined) {
      yield { line, ok: false, reason: `${duplicate} is given more than once` }
      continue
    }
    const record = value as Record<string, unknown>
    const ignored = IGNORED.filter((member) => Object.hasOwn(record, member))
    if (ignored.length > 0) {
      for (const member of ignored) delete record[member]
      // As for CSV: an exported record's photos and version go without saying.
      const said = ignored.filter((member) => !(UNSAID.includes(member) && Object.hasOwn(record, 'updatedAt')))
      if (!noticed && said.length > 0) {
        notice(ignoredNote(`${said.join(' and ')} members in ${file} are`, said))
        noticed = true
      }
    }
    const { id, updatedAt, ...members } = record
    let stock: StockCell[] | undefined
    for (const member of Object.keys(members)) {
      if (!isStockColumn(member)) continue
      if (members[member] !== null) (stock ??= []).push({ column: member, location: member.slice(STOCK_COLUMN.length), value: members[member] })
      delete members[member]
    }
    yield { line, ok: true, value: members, id, updatedAt, stock }
  }
}
