import assert from 'node:assert/strict'
import { createReadStream } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { parse } from 'csv-parse'
import fc from 'fast-check'
import { csvRecords, type CsvRecord } from '../../src/cli/csv-reader.js'

// The import's CSV reader cuts plain records out itself and leaves any other shape to csv-parse
// (src/cli/csv-reader.ts): every file must read exactly as csv-parse alone reads it with the
// import's settings, records, refusals and lines alike. Random files from a few characters that
// matter (quotes, commas, both line endings, a BOM, a character outside the BMP), some of them
// well-formed exports, some anything at all; and a file larger than a chunk.

const RUNS = Number(process.env.PROPERTY_RUNS ?? 300)

/** What the import read before the fast path: csv-parse over the whole file, refusals merged back into line order. */
async function reference (file: string): Promise<CsvRecord[]> {
  const parser = createReadStream(file).pipe(parse({ bom: true, info: true, skip_empty_lines: true, skip_records_with_error: true }))
  const skipped: CsvRecord[] = []
  const out: CsvRecord[] = []
  parser.on('skip', (err: Error & { lines?: number }) => { skipped.push({ line: err.lines ?? 0, error: err.message }) })
  for await (const { record, info } of parser as AsyncIterable<{ record: string[], info: { lines: number } }>) {
    const line = info.lines - record.reduce((n, cell) => n + (cell.match(/\n/g)?.length ?? 0), 0)
    while (skipped.length > 0 && skipped[0].line < line) out.push(skipped.shift()!)
    out.push({ line, cells: record })
  }
  return [...out, ...skipped]
}

async function read (file: string): Promise<CsvRecord[]> {
  const out: CsvRecord[] = []
  for await (const records of csvRecords(file)) out.push(...records)
  return out
}

/** The messages name lines of the text csv-parse was given: compared without them, as the import shows them. */
const shown = (records: CsvRecord[]): unknown[] => records.map((r) => 'error' in r ? { line: r.line, error: r.error.replace(/ (on|at) line \d+.*$/, '') } : r)

const quoted = (cell: string): string => /[",\r\n]/.test(cell) || cell === '' ? `"${cell.replace(/"/g, '""')}"` : cell
const cellText = fc.stringMatching(/^[a-z"\n\r,é😀 ]{0,6}$/u)
const ending = fc.constantFrom('\n', '\r\n')

/** A well-formed file: a header of `width` columns, rows of as many cells, quoted where they must be; sometimes a BOM, a blank line, no final line ending. */
const wellFormed = fc.record({
  width: fc.integer({ min: 1, max: 4 }),
  rows: fc.array(fc.array(cellText, { minLength: 4, maxLength: 4 }), { maxLength: 12 }),
  ending,
  bom: fc.boolean(),
  blank: fc.nat(14),
  last: fc.boolean(),
  alwaysQuote: fc.boolean()
}).map(({ width, rows, ending, bom, blank, last, alwaysQuote }) => {
  const lines = [Array.from({ length: width }, (_, i) => `c${i}`).join(','),
    ...rows.map((r) => r.slice(0, width).map((c) => alwaysQuote ? `"${c.replace(/"/g, '""')}"` : quoted(c)).join(','))]
  if (blank > 0 && blank < lines.length) lines.splice(blank, 0, '')
  return (bom ? '\uFEFF' : '') + lines.join(ending) + (last ? ending : '')
})
/** Anything at all from the characters that matter, after a plain header most of the time. */
const anyText = fc.tuple(fc.constantFrom('a,b\n', 'a,b\r\n', 'a\n', '', '"a",b\n', '\na,b\n'), fc.stringMatching(/^[ab"\n\r,]{0,40}$/)).map(([h, rest]) => h + rest)

test('random files read exactly as csv-parse reads them: records, refusals and lines', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'csv-reader-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'f.csv')
  await fc.assert(fc.asyncProperty(fc.oneof(wellFormed, anyText), async (text) => {
    await writeFile(file, text)
    assert.deepEqual(shown(await read(file)), shown(await reference(file)), JSON.stringify(text))
  }), { numRuns: RUNS })
})

test('a file of many chunks (quoted cells across their edges, a malformed record far in) reads as csv-parse reads it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'csv-reader-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'big.csv')
  const rows = ['id,name,description']
  for (let i = 1; i <= 60_000; i++) rows.push(`${i},Plant ${i},"A plant, ""number"" ${i}${i % 7 === 0 ? '\nsecond line' : ''} 😀"`)
  const plain = rows.join('\n') + '\n'
  await writeFile(file, plain)
  const fast = await read(file)
  assert.equal(fast.length, 60_001)
  assert.deepEqual(fast, await reference(file))
  // A record of another shape near the end: csv-parse reads from there on, lines as before.
  rows.splice(59_000, 0, 'x,"bad"quote,y', 'too,few')
  await writeFile(file, rows.join('\n') + '\n')
  const mixed = await read(file)
  assert.deepEqual(shown(mixed), shown(await reference(file)))
  assert.ok(mixed.some((r) => 'error' in r), 'the malformed records are refused')
})
