import { once } from 'node:events'
import { finished } from 'node:stream/promises'
import { createWriteStream, renameSync, rmSync, type WriteStream } from 'node:fs'
import type { Plant } from '../catalogue/plant.js'
import { locate, openCatalogue } from './target.js'
import { CommandFailed, FORMATS, oneOf, plural, TARGET_READ_HELP, TARGET_OPTIONS, UsageError, type Command, type Format, type Io } from './command.js'
import { LIST_FILTER_HELP, LIST_FILTER_OPTIONS, listQueryOf } from './list-filters.js'
import { formatOf, STOCK_COLUMN } from './rows.js'
import { neutraliseFormula } from './formula-cells.js'
import { cannotWrite, checkOutputFolder } from './output-file.js'

const PAGE = 100

export const exportCommand: Command = {
  name: 'export',
  usage: `Usage: plants export [options]

Writes every plant, in id order, to standard output (or --output FILE); with filters, the plants
GET /v3/plant finds with them, and with --sort, in its order. The catalogue is read one keyset page at a time
and written as it is read, so memory stays flat whatever its size. From a data folder the export
is one consistent snapshot, taken while the service keeps running.

CSV has the header id,name,category,tags,status,description,price,sku,barcode,lowStockAt,
stock.main,…,photos,updatedAt (tags joined by |; price with 2 fraction digits; a stock.LOCATION
column for each location, main first, holding a tracked plant's onHand there, empty for a plant
that does not track stock; photos: the URL of each photo's full picture, joined by |; updatedAt:
when the plant last changed); JSON Lines has one record per line, as the API returns it, photos
with all their URLs and the createdAt and updatedAt times, and for a tracked plant its
stock.LOCATION members. plants import --stock counts the stock columns back in. The URLs are
paths on the service (/v3/photos/…); the pictures themselves travel in backups and migrate, not in
an export. Both load back with plants import, which updates the plant each id names (an id the
catalogue does not hold adds a new plant, with an id of its own; one in its trash is refused),
writing only the cells edited in the file where a plant has changed since the export (its
updatedAt is then later: see plants import --help). A tag that itself holds | cannot be told apart in CSV: such plants are counted in a
warning; use jsonl.

With --output, the export is written beside FILE under a temporary name and given its name only
once whole: a failed export leaves no half-written FILE.

Options:
${LIST_FILTER_HELP}
  --format csv|jsonl   default: from --output's extension (.csv, .jsonl/.ndjson), else csv
  --output FILE        write to FILE instead of standard output
${TARGET_READ_HELP}
  --api-key-file FILE  with --url: a file holding an API key, for a service whose reads need one (READS=keys)
  -h, --help           this help`,
  options: {
    ...TARGET_OPTIONS,
    format: { type: 'string' },
    ...LIST_FILTER_OPTIONS,
    output: { type: 'string', short: 'o' }
  },
  run: runExport
}

async function runExport (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  if (positionals.length > 0) throw new UsageError(`export takes no FILE argument (use --output ${positionals[0]})`)
  // As import does: the file's extension names its format unless --format says otherwise.
  const explicit = oneOf('format', values.format, FORMATS, undefined)
  const format: Format = values.output === undefined ? explicit ?? 'csv' : formatOf(values.output, explicit)
  const query = await listQueryOf(values)
  if (values.output !== undefined) checkOutputFolder(values.output, 'export')
  const catalogue = await openCatalogue(await locate(values, io), io, { readOnly: true })
  const partial = values.output === undefined ? undefined : `${values.output}.partial-${process.pid}`
  const out: NodeJS.WritableStream = partial === undefined ? io.stdout : createWriteStream(partial)
  let failed: Error | undefined
  const onError = (err: Error): void => { failed = err }
  out.on('error', onError)
  let count = 0
  let pipeTags = 0
  try {
    // A column for each location, read before the first page (the snapshot's, so the same moment's).
    const locations = catalogue.stock === undefined ? [] : await catalogue.stock.locations()
    // The header goes with the first page: a catalogue that cannot be read writes nothing at all.
    let header = format === 'csv' ? `${csvHeader(locations)}\n` : ''
    for await (const page of catalogue.pages(PAGE, query)) {
      if (failed) break
      let chunk = header
      header = ''
      const tracked = page.filter((p) => p.stock !== null).map((p) => p.id)
      const levels = catalogue.stock === undefined || tracked.length === 0 ? new Map<number, Map<string, number>>() : await catalogue.stock.onHand(tracked)
      for (const plant of page) {
        const stock = stockCells(plant, locations, levels.get(plant.id))
        if (format === 'jsonl') {
          chunk += `${JSON.stringify(stock === undefined ? plant : { ...plant, ...stock })}\n`
        } else {
          if (plant.tags.some((t) => t.includes('|'))) pipeTags++
          chunk += csvLine(plant, locations, stock)
        }
      }
      count += page.length
      await write(out, chunk)
    }
    if (header !== '' && !failed) await write(out, header)
    if (partial !== undefined) {
      out.end()
      // Settles however the file ends, an error before this line included (once('finish') would wait forever).
      await finished(out).catch((err: Error) => { failed ??= err })
      if (failed) throw cannotWrite(values.output, failed)
      try {
        renameSync(partial, values.output)
      } catch (err) {
        throw cannotWrite(values.output, err)
      }
    }
  } catch (err) {
    if (partial !== undefined) {
      // A stream destroyed before its file is open still opens (creates) it, then closes it: the
      // file is removed once that is done (a service that refused at once left a .partial behind).
      const stream = out as WriteStream
      stream.destroy()
      if (!stream.closed) await once(stream, 'close')
      rmSync(partial, { force: true })
    }
    throw err
  } finally {
    await catalogue.close()
  }
  // A reader that stops early (| head) is not a failure of the export.
  if (failed && (failed as NodeJS.ErrnoException).code !== 'EPIPE') throw new CommandFailed(`writing the export: ${failed.message}`)
  if (pipeTags > 0) io.stderr.write(`warning: ${plural(pipeTags, 'plant')} ${pipeTags === 1 ? 'has' : 'have'} a tag holding |, which CSV cannot keep apart; use --format jsonl\n`)
  if (values.output !== undefined) io.stderr.write(`exported ${plural(count, 'plant')} from the ${catalogue.where} to ${values.output}\n`)
  return 0
}

/** Waits when the reader is slower than the catalogue: that wait is what keeps memory flat. */
async function write (out: NodeJS.WritableStream, chunk: string): Promise<void> {
  if (out.write(chunk)) return
  await new Promise<void>((resolve) => {
    const done = (): void => {
      out.off('drain', done).off('close', done).off('error', done)
      resolve()
    }
    out.on('drain', done).on('close', done).on('error', done)
  })
}

/** The stock columns sit beside lowStockAt, before the columns import ignores or checks (photos, updatedAt). */
export const csvHeader = (locations: string[]): string =>
  ['id,name,category,tags,status,description,price,sku,barcode,lowStockAt', ...locations.map((l) => `${STOCK_COLUMN}${l}`), 'photos,updatedAt'].join(',')

/**
 * A tracked plant's onHand at each location, as `stock.<location>` members (0 where it holds no
 * level); none for a plant that does not track stock, whose cells stay empty: a count of 0 would
 * start tracking it when the file is imported with --stock.
 */
function stockCells (p: Plant, locations: string[], levels: Map<string, number> | undefined): Record<string, number> | undefined {
  if (p.stock === null) return undefined
  return Object.fromEntries(locations.map((l) => [`${STOCK_COLUMN}${l}`, levels?.get(l) ?? 0]))
}

function csvLine (p: Plant, locations: string[], stock: Record<string, number> | undefined): string {
  const fields = [p.name, p.category ?? '', p.tags.join('|'), p.status, p.description ?? '', p.price ?? '', p.sku ?? '', p.barcode ?? '']
  const counts = locations.map((l) => `,${stock?.[`${STOCK_COLUMN}${l}`] ?? ''}`).join('')
  return `${p.id},${fields.map(cell).join(',')},${p.lowStockAt ?? ''}${counts},${p.photos.map((photo) => photo.urls.full).join('|')},${p.updatedAt}\n`
}

// Quoted when it holds a delimiter or quote, or begins or ends with white space a reader might trim.
const NEEDS_QUOTES = /[",\r\n]|^\s|\s$/
function cell (text: string): string {
  const value = neutraliseFormula(text)
  return NEEDS_QUOTES.test(value) ? `"${value.replace(/"/g, '""')}"` : value
}
