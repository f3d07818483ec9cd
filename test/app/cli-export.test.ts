import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { parse } from 'csv-parse/sync'
import { toRecord, type PlantInput, type StoredPlant } from '../../src/catalogue/plant.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { checkPlant } from '../../src/cli/validate-row.js'
import { neutraliseFormula, restoreFormula } from '../../src/cli/formula-cells.js'
import { plants } from '../../scripts/lib/cli-harness.js'
import { listenOn } from '../../scripts/lib/listening-service.js'

const TRICKY: PlantInput[] = [
  { name: 'Monstera', category: 'indoor', tags: ['large', 'green'], status: 'available', description: 'Split, "holed" leaves\nno direct sun', price: '12.5', barcode: '4006381333931' },
  { name: 'Fern, "the" shy one', category: null, tags: [], status: 'sold' },
  { name: 'Two\nlines\r\nand a tab\t', category: 'a,b', tags: ['x"y'], status: 'pending' },
  { name: '  padded  ', category: ' c ', tags: [' t '], status: 'available' },
  { name: 'Ünïcödé 🌵 漢字', category: 'ñ', tags: ['ü', '🌿'], status: 'available' },
  { name: '=1+2', category: null, tags: ['-', '@'], status: 'available', description: '=SUM(A1)', price: '0' }
]

async function seeded (t: TestContext, count: number): Promise<{ dir: string, dataDir: string, stored: StoredPlant[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'plants-export-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const dataDir = join(dir, 'data')
  const store = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  try {
    for (let i = 0; i < count; i++) await store.create({ ...TRICKY[i % TRICKY.length], name: `${TRICKY[i % TRICKY.length].name} ${i}`, sku: i % 4 === 0 ? `Sku.${i}` : null })
    // A hole in the ids: export walks by id, not by position.
    await store.remove(2)
    return { dir, dataDir, stored: await store.list({ afterId: 0, limit: 10_000 }) }
  } finally {
    await store.close()
  }
}

const record = (plant: StoredPlant): object => toRecord(plant)
/** A plant as a CSV row holds it (no times: they are the catalogue's). */
const csvRecord = ({ id, name, category, tags, status, description, price, sku, barcode }: StoredPlant): object =>
  ({ id, name, category, tags, status, description, price, sku, barcode, photos: '' })

test('export writes every plant in id order as JSON Lines and as CSV, exactly as stored', async (t) => {
  const { dataDir, stored } = await seeded(t, 2345)
  const jsonl = await plants(['export', '--data-dir', dataDir, '--format', 'jsonl'])
  assert.equal(jsonl.code, 0)
  assert.deepEqual(jsonl.stdout.trimEnd().split('\n').map((l) => JSON.parse(l)), stored.map(record))
  // The record as the API sends it, its version included.
  assert.deepEqual(jsonl.stdout.trimEnd().split('\n').slice(0, 2).map((l) => JSON.parse(l).version), [1, 1])

  const asCsv = await plants(['export', '--data-dir', dataDir])
  assert.equal(asCsv.code, 0)
  const rows = (parse(asCsv.stdout, { columns: true }) as Array<Record<string, string>>)
    .map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, restoreFormula(v)])))
  const orNull = (cell: string): string | null => cell === '' ? null : cell
  assert.deepEqual(rows.map((r) => ({
    id: Number(r.id),
    name: r.name,
    category: orNull(r.category),
    tags: r.tags === '' ? [] : r.tags.split('|'),
    status: r.status,
    description: orNull(r.description),
    price: orNull(r.price),
    sku: orNull(r.sku),
    barcode: orNull(r.barcode),
    photos: r.photos
  })), stored.map(csvRecord))
})

test('an export loads back with plants import into an equal catalogue (ids aside), in both formats', async (t) => {
  const { dir, dataDir, stored } = await seeded(t, 60)
  const fields = ({ name, category, tags, status, description, price, sku, barcode }: StoredPlant): object =>
    ({ name, category, tags, status, description, price, sku, barcode })
  // Text with white space at either end (stored before that rule, as '  padded  ' is here) is exported
  // exactly, but import judges rows as POST /v3/plant does: reported by line, never trimmed.
  const accepted = stored.filter((p) => checkPlant(fields(p)).ok)
  assert.equal(stored.length - accepted.length, 10)
  for (const format of ['csv', 'jsonl']) {
    const file = join(dir, `export.${format}`)
    assert.equal((await plants(['export', '--data-dir', dataDir, '--format', format, '--output', file])).code, 0)
    const copy = join(dir, `copy-${format}`)
    const result = await plants(['import', '--create', file, '--data-dir', copy])
    assert.equal(result.code, 1, result.stderr)
    assert.equal(result.stderr.match(/\/name must not begin or end with white space/g)?.length, 10, result.stderr)
    const store = openSqliteStore({ dataDir: copy, feedRetentionMs: 86_400_000 })
    const loaded = await store.list({ afterId: 0, limit: 10_000 })
    await store.close()
    assert.deepEqual(loaded.map(fields), accepted.map(fields), format)
  }
})

test('CSV export writes a cell a spreadsheet would run as a formula with a quote first, and import reads it back exactly', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plants-formula-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const dataDir = join(dir, 'data')
  const risky = ['=HYPERLINK("http://evil.example","Fern")', '+41 tall', '-5 % sale', '@SUM(A1)', "'=quoted already", "'plain quote"]
  const store = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  for (const name of risky) await store.create({ name, category: '=cat', tags: ['-x', 'y'], status: 'available' })
  await store.close()
  const file = join(dir, 'out.csv')
  assert.equal((await plants(['export', '--data-dir', dataDir, '--output', file])).code, 0)
  const rows = parse(await readFile(file, 'utf8'), { columns: true }) as Array<Record<string, string>>
  assert.deepEqual(rows.map((r) => r.name), ["'=HYPERLINK(\"http://evil.example\",\"Fern\")", "'+41 tall", "'-5 % sale", "'@SUM(A1)", "''=quoted already", "'plain quote"])
  assert.deepEqual(rows.map((r) => [r.category, r.tags]), risky.map(() => ["'=cat", "'-x|y"]))
  const copy = join(dir, 'copy')
  const loaded = await plants(['import', '--create', file, '--data-dir', copy])
  assert.equal(loaded.code, 0, loaded.stderr)
  const back = openSqliteStore({ dataDir: copy, feedRetentionMs: 86_400_000 })
  t.after(() => back.close())
  assert.deepEqual((await back.list({ afterId: 0, limit: 100 })).map((p) => [p.name, p.category, p.tags]), risky.map((name) => [name, '=cat', ['-x', 'y']]))
  // Every value, tab and carriage return first included, survives neutralise then restore.
  for (const value of ['\tx', '\rx', "''-", "'", '', 'a=b']) assert.equal(restoreFormula(neutraliseFormula(value)), value)
})

test('export through --url pages through the running service and writes the same bytes', async (t) => {
  const { dataDir } = await seeded(t, 1234)
  const direct = await plants(['export', '--data-dir', dataDir, '--format', 'jsonl'])
  const service = await listenOn(dataDir)
  t.after(() => service.close())
  const viaApi = await plants(['export', '--url', service.url, '--format', 'jsonl'])
  assert.equal(viaApi.code, 0)
  assert.equal(viaApi.stdout, direct.stdout)
})

test('a tag holding | is counted in a warning for CSV; export of a folder without a catalogue fails clearly', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plants-export-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const store = openSqliteStore({ dataDir: join(dir, 'data'), feedRetentionMs: 86_400_000 })
  await store.create({ name: 'Piped', category: null, tags: ['a|b'], status: 'available' })
  await store.close()
  const result = await plants(['export', '--data-dir', join(dir, 'data'), '--output', join(dir, 'out.csv')])
  assert.equal(result.code, 0)
  assert.match(result.stderr, /1 plant has a tag holding \|/)
  assert.match(await readFile(join(dir, 'out.csv'), 'utf8'), /^id,name,category,tags,status,description,price,sku,barcode,lowStockAt,stock.main,photos,updatedAt\n1,Piped,,a\|b,available,,,,,,,,\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\n$/)
  const missing = await plants(['export', '--data-dir', join(dir, 'nothing-here')])
  assert.equal(missing.code, 1)
  assert.match(missing.stderr, /no catalogue in/)
})

test('export, backup and restore-marks save into a missing folder fail with exit 1 naming that folder; a file that cannot be made fails the same way, never naming the .partial file', async (t) => {
  const { dir, dataDir } = await seeded(t, 3)
  const nowhere = join(dir, 'no-such-folder', 'x.csv')
  for (const args of [['export', '--output', nowhere], ['backup', nowhere], ['restore-marks', 'save', nowhere]]) {
    const result = await plants([...args, '--data-dir', dataDir])
    assert.equal(result.code, 1, `${args[0]}: ${result.stderr}`)
    assert.match(result.stderr, new RegExp(`the folder ${join(dir, 'no-such-folder')} does not exist: create it first`))
    assert.doesNotMatch(result.stderr, /partial/)
  }
  // The folder exists but no file can be made in it: the write stream fails before the first byte.
  // (Before, the export waited for a 'finish' that never came, and the process ended with 0.)
  const refused = await plants(['export', '--data-dir', dataDir, '--output', '/proc/plants-export.csv'])
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, /^plants export: cannot write \/proc\/plants-export\.csv: /)
  assert.doesNotMatch(refused.stderr, /partial/)
})

test('export --q, --status (repeated) and --sort find what GET /v3/plant finds, in its order, from a folder and through --url', async (t) => {
  const { dataDir, stored } = await seeded(t, 600)
  const { pageOf } = await import('../../src/catalogue/query.js')
  const query = { statuses: ['available', 'sold'] as Array<'available' | 'sold'>, tags: [], terms: ['uni'], sort: '-name' as const }
  const expected = pageOf(stored.map(record) as StoredPlant[], query, undefined, Infinity).map((p) => JSON.stringify(p)).join('\n') + '\n'
  const args = ['--q', 'ÜNÏ', '--status', 'available', '--status', 'sold', '--sort=-name', '--format', 'jsonl']
  const direct = await plants(['export', '--data-dir', dataDir, ...args])
  assert.equal(direct.code, 0, direct.stderr)
  assert.ok(expected.split('\n').length > 50)
  assert.equal(direct.stdout, expected)
  const service = await listenOn(dataDir)
  t.after(() => service.close())
  const viaApi = await plants(['export', '--url', service.url, ...args])
  assert.equal(viaApi.stdout, expected)
  // The same rules as the API, as usage errors.
  for (const [bad, message] of [[['--q', '\u0301'], /--q terms must each hold a character other than an accent/], [['--status', 'gone'], /--status must be one of/], [['--sort', 'cost'], /--sort must be one of/]] as const) {
    const refused = await plants(['export', '--data-dir', dataDir, ...bad])
    assert.equal(refused.code, 2, refused.stderr)
    assert.match(refused.stderr, message)
  }
})

test('import takes the store fields as CSV columns; a SKU another plant has, or a bad barcode, is reported by line', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plants-import-store-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, 'till.csv')
  await writeFile(file, [
    'name,price,sku,barcode,description,createdAt',
    'Fern,4.5,F-1,96385074,"Soft, green",2020-01-01T00:00:00.000Z',
    'Cactus,,C-1,,,',
    'Copy,1,f-1,,,',
    'Scanned,,,96385073,,'
  ].join('\n') + '\n')
  const dataDir = join(dir, 'data')
  const result = await plants(['import', '--create', file, '--data-dir', dataDir])
  assert.equal(result.code, 1, result.stderr)
  // Refused by the plan (the same in a dry run), naming the line that gives the SKU first.
  assert.match(result.stderr, /till\.csv:4: sku f-1 is taken by line 2 of the file, which gives it to a new plant \(SKUs are unique ignoring case\)/)
  assert.match(result.stderr, /till\.csv:5: \/barcode must end in a valid GTIN check digit/)
  const store = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  const loaded = await store.list({ afterId: 0, limit: 10 })
  await store.close()
  assert.deepEqual(loaded.map(({ name, price, sku, barcode, description }) => [name, price, sku, barcode, description]),
    [['Fern', '4.50', 'F-1', '96385074', 'Soft, green'], ['Cactus', null, 'C-1', null, null]])
  assert.notEqual(loaded[0].createdAt, '2020-01-01T00:00:00.000Z', 'the times are the catalogue\'s')
  // A second run changes nothing: the rows' plants (found by SKU) have what they say (the price compared as
  // the record shows it); the row whose SKU names a plant another row names already is refused again.
  const again = await plants(['import', file, '--data-dir', dataDir])
  assert.match(again.stdout, /added\s+0\n\s+updated\s+0\n\s+unchanged\s+2\n\s+rejected\s+2/)
  assert.match(again.stderr, /till\.csv:4: sku f-1 names plant 1, which line 2 of the file names already/)
})

test('export --url from a service whose reads need a key (READS=keys): refused without one, saying how to give it; done with --api-key-file', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plants-export-keys-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const service = await listenOn(join(dir, 'data'), { apiKeys: ['shop-front-0123456789'], readsNeedKey: true })
  t.after(() => service.close())
  await service.store.create({ name: 'Fern', category: null, tags: [], status: 'available' })
  const without = await plants(['export', '--url', service.url])
  assert.equal(without.code, 1)
  assert.match(without.stderr, /needs an API key \(scope write to write; to read, scope read, where the service has READS=keys\): pass --api-key-file FILE/)
  const keyFile = join(dir, 'key')
  await writeFile(keyFile, 'shop-front-0123456789\n')
  const withKey = await plants(['export', '--url', service.url, '--api-key-file', keyFile])
  assert.equal(withKey.code, 0, withKey.stderr)
  assert.match(withKey.stdout, /^id,name,.*\n1,Fern,/)
})
