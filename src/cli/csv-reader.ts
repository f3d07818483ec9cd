import { createReadStream } from 'node:fs'
import { Readable } from 'node:stream'
import { parse } from 'csv-parse'

// The records of a CSV file, each with the line it starts on, as csv-parse reads them with the
// import's settings (bom, skip_empty_lines, skip_records_with_error), but fast. csv-parse walks
// every character through its state machine and gives each record its own info object: reading a
// file of 100,000 exported plants twice (the import reads it twice) took half the import's main
// thread. Here a record of the shape an export writes (cells plain or in double quotes, as many as
// the header has, ended by the header's own line ending) is cut out with indexOf and slice. At the
// first record of any other shape, csv-parse takes over from that record to the end of the file,
// given the header line again first, so a malformed record, and everything after it, is read (and
// refused, in csv-parse's words) exactly as before. A header that is not plain (quoted, or after an
// empty line) leaves the whole file to csv-parse. test/app/csv-reader.test.ts checks both against
// csv-parse alone on random files.

/**
 * A record with the line it starts on, or a record csv-parse refused, with its message, code and
 * (`field`, counted from 0, when csv-parse says) the cell it refused.
 */
export type CsvRecord = { line: number, cells: string[] } | { line: number, error: string, code?: string, field?: number }

const CHUNK = 1 << 20
/**
 * Records yielded at most at once: a megabyte of short rows is some 100,000 of them, and the rows an
 * import holds at once stay a thousand whatever the file's rows are like, so its memory stays flat.
 */
export const RECORDS_AT_ONCE = 1000
const QUOTE = 34
const COMMA = 44
const LF = 10
const CR = 13

/** A record cut out of the text (no cells: an empty line), and where the next one starts; or why not. */
type Cut = { cells?: string[], end: number, newlines: number } | 'more' | 'other'

/**
 * The record at `pos`, when it has the plain shape: 'more' when the text ends inside it (and the
 * file goes on), 'other' for any shape the fast path leaves to csv-parse.
 */
function cut (text: string, pos: number, eof: boolean, crlf: boolean): Cut {
  const n = text.length
  const first = text.charCodeAt(pos)
  if (first === LF) return crlf ? 'other' : { end: pos + 1, newlines: 0 }
  if (first === CR) {
    if (!crlf) return 'other'
    if (pos + 1 >= n) return eof ? 'other' : 'more'
    return text.charCodeAt(pos + 1) === LF ? { end: pos + 2, newlines: 0 } : 'other'
  }
  const cells: string[] = []
  let newlines = 0
  let p = pos
  for (;;) {
    if (text.charCodeAt(p) === QUOTE) {
      let q = p + 1
      let close: number
      for (;;) {
        close = text.indexOf('"', q)
        if (close < 0 || (close + 1 >= n && !eof)) return eof ? 'other' : 'more'
        if (text.charCodeAt(close + 1) !== QUOTE) break
        q = close + 2
      }
      const raw = text.slice(p + 1, close)
      // csv-parse counts a carriage return inside quotes as a line of its own (and CRLF as two): its to read and count.
      if (raw.includes('\r') || (crlf && raw.includes('\n'))) return 'other'
      for (let k = raw.indexOf('\n'); k >= 0; k = raw.indexOf('\n', k + 1)) newlines++
      cells.push(q === p + 1 ? raw : raw.replaceAll('""', '"'))
      p = close + 1
    } else {
      let q = p
      for (; q < n; q++) {
        const c = text.charCodeAt(q)
        if (c === COMMA || c === LF || c === CR) break
        if (c === QUOTE) return 'other'
      }
      if (q >= n && !eof) return 'more'
      cells.push(text.slice(p, q))
      p = q
    }
    if (p >= n) return eof ? { cells, end: n, newlines } : 'more'
    const c = text.charCodeAt(p)
    if (c === COMMA) {
      p++
      continue
    }
    if (c === LF) return crlf ? 'other' : { cells, end: p + 1, newlines }
    if (c === CR && crlf) {
      if (p + 1 >= n) return eof ? 'other' : 'more'
      return text.charCodeAt(p + 1) === LF ? { cells, end: p + 2, newlines } : 'other'
    }
    return 'other'
  }
}

/** The file's records in line order, a chunk's worth at a time; the first is the header. */
export async function * csvRecords (file: string): AsyncGenerator<CsvRecord[]> {
  const stream = createReadStream(file, { encoding: 'utf8', highWaterMark: CHUNK })
  try {
    yield * records(stream[Symbol.asyncIterator]() as AsyncIterator<string>)
  } finally {
    // A reader that stops early (a failed import) leaves no file open.
    stream.destroy()
  }
}

async function * records (chunks: AsyncIterator<string>): AsyncGenerator<CsvRecord[]> {
  let text = ''
  let eof = false
  const more = async (): Promise<void> => {
    const next = await chunks.next()
    if (next.done === true) eof = true
    else text = text === '' ? next.value : text + next.value
  }

  // The header line says how lines end; a header that is not plain leaves the whole file to csv-parse.
  while (!eof && !text.includes('\n')) await more()
  if (text.charCodeAt(0) === 0xFEFF) text = text.slice(1)
  const lf = text.indexOf('\n')
  const crlf = lf > 0 && text.charCodeAt(lf - 1) === CR
  const headerEnd = lf < 0 ? text.length : lf + 1
  const headerText = text.slice(0, headerEnd)
  if (headerText === '' || /["\r\n]/.test(headerText.slice(0, crlf ? -2 : lf < 0 ? undefined : -1)) || text.charCodeAt(0) === LF || text.charCodeAt(0) === CR) {
    yield * slowRecords(rest(text, chunks), 0, false)
    return
  }

  let width = 0
  let pos = 0
  let line = 1
  for (;;) {
    let records: CsvRecord[] = []
    for (;;) {
      if (pos >= text.length) break
      const next = cut(text, pos, eof, crlf)
      if (next === 'more') break
      if (next === 'other' || (next.cells !== undefined && width > 0 && next.cells.length !== width)) {
        // From this record on, csv-parse reads the file: the header again first, so it expects its width.
        if (records.length > 0) yield records
        yield * slowRecords(rest(headerText + text.slice(pos), chunks), line - 2, true)
        return
      }
      if (next.cells !== undefined) {
        if (width === 0) width = next.cells.length
        records.push({ line, cells: next.cells })
        line += next.newlines
      }
      if (next.end > pos && text.charCodeAt(next.end - 1) === LF) line++
      pos = next.end
      if (records.length >= RECORDS_AT_ONCE) {
        yield records
        records = []
      }
    }
    if (records.length > 0) yield records
    if (eof) return
    text = text.slice(pos)
    pos = 0
    await more()
  }
}

/** The text read so far, then the rest of the file. */
async function * rest (text: string, chunks: AsyncIterator<string>): AsyncGenerator<string> {
  if (text !== '') yield text
  for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) yield next.value
}

/**
 * csv-parse's reading of the text, with the lines it names moved on by `lineOffset` (its text starts
 * there), the header it was given again left out when `skipHeader`. Records it refuses are merged
 * back into line order.
 */
async function * slowRecords (source: AsyncIterable<string>, lineOffset: number, skipHeader: boolean): AsyncGenerator<CsvRecord[]> {
  const parser = Readable.from(source).pipe(parse({ bom: true, info: true, skip_empty_lines: true, skip_records_with_error: true }))
  const skipped: CsvRecord[] = []
  parser.on('skip', (err: Error & { code?: string, lines?: number, index?: number }) => {
    skipped.push({ line: (err.lines ?? 0) + lineOffset, error: err.message, code: err.code, field: typeof err.index === 'number' ? err.index : undefined })
  })
  let header = skipHeader
  for await (const { record, info } of parser as AsyncIterable<{ record: string[], info: { lines: number } }>) {
    // info.lines is where the record ends; a quoted cell may span lines, so count back to its start.
    const line = info.lines + lineOffset - record.reduce((n, cell) => n + (cell.match(/\n/g)?.length ?? 0), 0)
    const records: CsvRecord[] = []
    while (skipped.length > 0 && skipped[0].line < line) records.push(skipped.shift()!)
    if (header) header = false
    else records.push({ line, cells: record })
    if (records.length > 0) yield records
  }
  if (skipped.length > 0) yield skipped
}
