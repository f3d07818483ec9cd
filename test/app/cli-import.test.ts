import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { buildApp } from '../../src/app.js'
import { checkPlant } from '../../src/cli/validate-row.js'
import { testConfig } from '../../src/config.js'
import type { StoredPlant } from '../../src/catalogue/plant.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { csv, plants } from '../../scripts/lib/cli-harness.js'
import { listenOn } from '../../scripts/lib/listening-service.js'
import { adminQuery, freshSchema, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'
import { seedView } from '../helpers/records.js'

async function tempDir (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plants-import-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  return dir
}

async function catalogueOf (dataDir: string): Promise<StoredPlant[]> {
  const store = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  try {
    return await store.list({ afterId: 0, limit: 1_000_000 })
  } finally {
    await store.close()
  }
}

const summary = (stdout: string, what: string): number => Number(new RegExp(`${what}\\s+([\\d,]+)`).exec(stdout)?.[1].replace(/,/g, ''))
const reportedLines = (stderr: string, file: string): number[] =>
  reports(stderr, file).map((l) => Number(l.split(':')[0]))
/** The bad-row reports, FILE:LINE: reason, without the FILE: prefix. */
const reports = (stderr: string, file: string): string[] =>
  stderr.split('\n').filter((l) => l.startsWith(`${file}:`)).map((l) => l.slice(file.length + 1))

test('a CSV with 1% bad rows: every good row is stored, every bad row is reported by line, a second run adds nothing', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'plants.csv')
  const bad = ['   ,x,,', 'X,,,gone', `${'n'.repeat(201)},,,`, 'X,,a|a,', 'X,,a||b,', 'X,,,,extra', `X,${'c'.repeat(101)},,`]
  const lines = ['name,category,tags,status']
  const badLines: number[] = []
  const good: string[] = []
  for (let i = 0; i < 2000; i++) {
    if (i % 100 === 7) {
      lines.push(bad[(i / 100 | 0) % bad.length])
      badLines.push(lines.length)
    } else {
      const name = i % 3 === 0 ? `Plant "${i}", the tall` : `Plant ${i}`
      lines.push(`${i % 3 === 0 ? `"${name.replace(/"/g, '""')}"` : name},${i % 2 ? 'indoor' : ''},${i % 5 ? 'green|large' : ''},${i % 4 ? 'available' : 'sold'}`)
      good.push(name)
    }
  }
  await writeFile(file, lines.join('\n') + '\n')
  const dataDir = join(dir, 'data')

  const first = await plants(['import', '--create', file, '--data-dir', dataDir, '--batch-size', '250'])
  assert.equal(first.code, 1, 'rejected rows make the exit status 1')
  assert.deepEqual(reportedLines(first.stderr, file), badLines)
  assert.equal(summary(first.stdout, 'rows read'), 2000)
  assert.equal(summary(first.stdout, 'added'), 1980)
  assert.equal(summary(first.stdout, 'rejected'), 20)
  const stored = await catalogueOf(dataDir)
  assert.deepEqual(stored.map((p) => p.name), good, 'every good row, in file order')
  assert.deepEqual(seedView(stored[0]), { id: 1, name: 'Plant "0", the tall', category: null, tags: [], status: 'sold', photos: [] })
  assert.deepEqual(seedView(stored[1]), { id: 2, name: 'Plant 1', category: 'indoor', tags: ['green', 'large'], status: 'available', photos: [] })

  const second = await plants(['import', '--create', file, '--data-dir', dataDir])
  assert.deepEqual(reportedLines(second.stderr, file), badLines)
  assert.equal(summary(second.stdout, 'added'), 0)
  assert.equal(summary(second.stdout, 'unchanged'), 1980)
  assert.equal((await catalogueOf(dataDir)).length, 1980)
})

test('rows repeated on purpose are all kept, and an import cut short is completed by running it again', async (t) => {
  const dir = await tempDir(t)
  const dataDir = join(dir, 'data')
  const rows = ['Fern,,,', 'Fern,,,', 'Fern,,,', 'Olive,tree,,', 'Fern,shade,,', 'Olive,tree,,']
  const head = join(dir, 'head.csv')
  const whole = join(dir, 'whole.csv')
  await writeFile(head, csv(...rows.slice(0, 2)))
  await writeFile(whole, csv(...rows))
  assert.equal((await plants(['import', '--create', head, '--data-dir', dataDir])).code, 0)
  const rest = await plants(['import', '--create', whole, '--data-dir', dataDir])
  assert.equal(rest.code, 0)
  assert.equal(summary(rest.stdout, 'added'), 4)
  assert.equal(summary(rest.stdout, 'unchanged'), 2)
  const again = await plants(['import', '--create', whole, '--data-dir', dataDir])
  assert.equal(summary(again.stdout, 'added'), 0)
  const names = (await catalogueOf(dataDir)).map((p) => `${p.name}/${p.category ?? ''}`)
  assert.deepEqual(names, ['Fern/', 'Fern/', 'Fern/', 'Olive/tree', 'Fern/shade', 'Olive/tree'])
})

test('JSON Lines: each line is an add-plant body; bad JSON, non-objects, unknown members and members given twice are reported by line', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'plants.jsonl')
  await writeFile(file, [
    '{"name":"Monstera","tags":["large"]}',
    '',
    '{"name":"Fern","staus":"sold"}',
    '{"name":',
    '["Cactus"]',
    '{"id":99,"name":"Olive","category":"tree","status":"pending"}',
    '{"name":"Aloe","__proto__":{"x":1}}',
    '{"name":"Ivy","tags":"green"}',
    // A member written twice is refused as the API refuses it: JSON.parse would keep the last.
    '{"name":"Rose","name":"Lily"}',
    '{"id":1,"status":"sold","id":2}'
  ].join('\r\n'))
  const dataDir = join(dir, 'data')
  const result = await plants(['import', '--create', file, '--data-dir', dataDir])
  assert.equal(result.code, 1)
  assert.deepEqual(reports(result.stderr, file), [
    '3: /staus is not a known field',
    `4: not valid JSON: ${jsonError('{"name":')}`,
    '5: must be a JSON object',
    '7: /__proto__ is not a known field',
    '8: /tags must be an array',
    '9: /name is given more than once',
    '10: /id is given more than once',
    // Said once its batch is written, as the dry run says it (would add): the id is not the plant's.
    '6: added "Olive" (no plant 99 in the catalogue: a new plant, with an id of its own)'
  ])
  // An id names the plant a row updates: 99 is none of this catalogue's, so that row adds a plant (with an id of its own).
  assert.deepEqual((await catalogueOf(dataDir)).map(({ id, name, category, tags, status }) => ({ id, name, category, tags, status })), [
    { id: 1, name: 'Monstera', category: null, tags: ['large'], status: 'available' },
    { id: 2, name: 'Olive', category: 'tree', tags: [], status: 'pending' }
  ])
})

function jsonError (text: string): string {
  try { JSON.parse(text) } catch (err) { return (err as Error).message }
  return ''
}

test('the note on columns an import ignores gives the reasons for those the file has: times only when it has createdAt or updatedAt, versions when it has version, stock totals when it has stock', async (t) => {
  const dir = await tempDir(t)
  const photos = join(dir, 'photos.csv')
  await writeFile(photos, 'name,photos\nFern,http://x/1.jpg\n')
  const times = join(dir, 'times.jsonl')
  await writeFile(times, '{"name":"Fern","createdAt":"2026-01-01T00:00:00.000Z"}\n')
  // (Without the note that the folder holds no catalogue yet, which comes after it.)
  const noted = async (file: string): Promise<string> => (await plants(['import', file, '--data-dir', join(dir, 'data'), '--dry-run'])).stderr.replace(/note: .* holds no catalogue yet: .*\n/, '')
  assert.equal(await noted(photos), `note: the photos column of ${photos} is ignored; photos are uploaded to a plant, not imported\n`)
  assert.equal(await noted(times), `note: createdAt members in ${times} are ignored; the catalogue sets the times\n`)
  const versions = join(dir, 'versions.jsonl')
  await writeFile(versions, '{"name":"Fern","version":3}\n')
  assert.equal(await noted(versions), `note: version members in ${versions} are ignored; the catalogue sets the versions\n`)
  // The record's stock totals: not a field, and the note ends on its reason (it ended on a bare "; ").
  const totals = join(dir, 'totals.jsonl')
  await writeFile(totals, '{"name":"Fern","stock":{"onHand":3,"reserved":0,"available":3}}\n')
  const stockBecause = 'a plant\'s stock totals follow its levels, which move by movements (a stock.LOCATION count, with --stock)'
  assert.equal(await noted(totals), `note: stock members in ${totals} are ignored; ${stockBecause}\n`)
  const totalsCsv = join(dir, 'totals.csv')
  await writeFile(totalsCsv, 'name,stock\nFern,3\n')
  assert.equal(await noted(totalsCsv), `note: the stock column of ${totalsCsv} is ignored; ${stockBecause}\n`)
  // A record as export wrote it (with updatedAt) says nothing of its photos and version.
  const exported = join(dir, 'exported.jsonl')
  await writeFile(exported, '{"name":"Fern","photos":[],"version":3,"updatedAt":"2026-01-01T00:00:00.000Z"}\n')
  assert.equal(await noted(exported), '')
})

test('a row is judged by the same rules and words as POST /v3/plant', async (t) => {
  const store = openSqliteStore({ dataDir: ':memory:', feedRetentionMs: 86_400_000 })
  const app = await buildApp(testConfig(), { store })
  t.after(async () => { await app.close(); await store.close() })
  const candidates: unknown[] = [
    { name: 'Monstera' },
    { name: 'Ünïcödé 🌵', category: 'indoor', tags: ['a', 'b'], status: 'sold' },
    { name: '' }, { name: ' \t ' }, { name: 'x'.repeat(201) }, { name: 12 }, {},
    { name: 'X', category: '' }, { name: 'X', category: null }, { name: 'X', category: 'c'.repeat(101) },
    { name: 'X', tags: Array.from({ length: 21 }, (_, i) => `t${i}`) }, { name: 'X', tags: ['a', 'a'] }, { name: 'X', tags: [''] },
    { name: 'X', tags: ['t'.repeat(51)] }, { name: 'X', status: 'gone' }, { name: 'X', status: null },
    { name: 'X', id: 3 }, { name: 'X', 'a/b~c': 1 }, { name: '', status: 'gone', extra: true },
    { name: 'lone \ud800 surrogate' }, { name: 'X', tags: ['\udc00'] }, { name: 'X', category: 'a\ud83c' }, { name: 'pair \ud83c\udf35' }
  ]
  for (const candidate of candidates) {
    const res = await app.inject({ method: 'POST', url: '/v3/plant', payload: candidate as object })
    const check = checkPlant(structuredClone(candidate))
    const label = JSON.stringify(candidate).slice(0, 60)
    assert.equal(check.ok, res.statusCode === 200, `${label}: CLI ${check.ok ? 'accepts' : 'refuses'}, API answers ${res.statusCode}`)
    if (!check.ok) assert.equal(check.reason, res.json().detail, label)
  }
})

test('a CSV header with an unknown column is refused before anything is written, naming the columns allowed (and semicolons, when they separate it)', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'plants.csv')
  await writeFile(file, 'name,colour\nFern,green\n')
  const result = await plants(['import', '--create', file, '--data-dir', join(dir, 'data')])
  assert.equal(result.code, 2)
  assert.match(result.stderr, /unknown column "colour" \(allowed: id, name, category, tags, status, description, price, sku, barcode, lowStockAt, stock.LOCATION, updatedAt\)\n/)
  assert.equal((await plants(['import', '--create', join(dir, 'plants.txt'), '--data-dir', join(dir, 'data')])).code, 2, 'no format for .txt')
  // Saved by a spreadsheet that separates with semicolons: the whole header is one unknown column.
  await writeFile(file, 'id;name;price\n1;Fern;2.50\n')
  const semicolons = await plants(['import', '--create', file, '--data-dir', join(dir, 'data')])
  assert.equal(semicolons.code, 2)
  assert.match(semicolons.stderr, /unknown column "id;name;price" \(allowed: [^)]*\); the file looks separated by semicolons: save it as CSV with commas/)
})

test('import through --url writes through the API; a second run adds nothing', async (t) => {
  const dir = await tempDir(t)
  const service = await listenOn(join(dir, 'data'))
  t.after(() => service.close())
  const file = join(dir, 'plants.csv')
  await writeFile(file, csv('Monstera,indoor,large,', 'Fern,,,', ' ,,,', 'Fern,,,', 'Olive,tree,a|b,pending'))
  const first = await plants(['import', file, '--url', service.url])
  assert.equal(first.code, 1)
  assert.deepEqual(reportedLines(first.stderr, file), [4])
  assert.equal(summary(first.stdout, 'added'), 4)
  const second = await plants(['import', file, '--url', service.url])
  assert.equal(summary(second.stdout, 'added'), 0)
  // A service without keys takes writes without one: a dry run has nothing to warn of.
  await writeFile(file, csv('Palm,,,'))
  assert.doesNotMatch((await plants(['import', file, '--url', service.url, '--dry-run'])).stderr, /needs a key/)
  const page = await (await fetch(`${service.url}/v3/plant`)).json() as { items: Array<{ name: string }> }
  assert.deepEqual(page.items.map((p) => p.name), ['Monstera', 'Fern', 'Fern', 'Olive'])
  const changes = await (await fetch(`${service.url}/v3/plant/changes`)).json() as { items: unknown[] }
  assert.equal(changes.items.length, 4, 'imports appear in the change feed like any add')
})

test('import through --url: a key file that is missing, empty or holds the wrong key is named for what it is', async (t) => {
  const dir = await tempDir(t)
  const service = await listenOn(join(dir, 'data'), { apiKeys: ['till-key-0123456789'] })
  t.after(() => service.close())
  const file = join(dir, 'plants.csv')
  await writeFile(file, csv('Fern,,,'))
  const keyFile = join(dir, 'key')
  const run = async (...extra: string[]): Promise<string> => {
    const result = await plants(['import', file, '--url', service.url, ...extra])
    assert.equal(result.code, 1, result.stderr)
    return result.stderr
  }
  assert.match(await run(), /needs an API key \(scope write to write; to read, scope read, where the service has READS=keys\): pass --api-key-file FILE/)
  assert.match(await run('--api-key-file', join(dir, 'missing')), /--api-key-file .*missing cannot be read \(ENOENT\)/)
  await writeFile(keyFile, '\n  \n')
  assert.match(await run('--api-key-file', keyFile), /--api-key-file .*key holds no key \(it is empty\)/)
  await writeFile(keyFile, 'not-the-key-0123456789\n')
  const wrong = await run('--api-key-file', keyFile)
  assert.match(wrong, /refused the key in --api-key-file .*key: it is not one of the service's keys/)
  assert.doesNotMatch(wrong, /needs an API key/, 'a key was given')
  await writeFile(keyFile, `${'ab'.repeat(32)}\n`)
  assert.match(await run('--api-key-file', keyFile), /looks like a SHA-256 digest \(a line of API_KEYS_FILE\), and the file must hold the key itself/)
  await writeFile(keyFile, 'till-key-0123456789\n')
  const right = await plants(['import', file, '--url', service.url, '--api-key-file', keyFile])
  assert.equal(right.code, 0, right.stderr)
})

test('a dry run through --url without a key says, after its summary, that applying it needs a key with write access and how to give one', async (t) => {
  const dir = await tempDir(t)
  const service = await listenOn(join(dir, 'data'), { apiKeys: ['till-key-0123456789'] })
  t.after(() => service.close())
  const file = join(dir, 'plants.csv')
  await writeFile(file, csv('Fern,,,'))
  const note = 'note: applying this import needs a key: service ' + service.url + ' takes writes only with an API key with write access (scope write or admin): pass --api-key-file FILE, a file holding the key\n'
  const dry = await plants(['import', file, '--url', service.url, '--dry-run'])
  assert.deepEqual([dry.code, dry.stderr], [0, note])
  assert.equal(summary(dry.stdout, 'would be added'), 1)
  const keyFile = join(dir, 'key')
  await writeFile(keyFile, 'till-key-0123456789\n')
  const keyed = await plants(['import', file, '--url', service.url, '--dry-run', '--api-key-file', keyFile])
  assert.deepEqual([keyed.code, keyed.stderr], [0, ''])
})

/** A dry run of a CSV file of `text` against a folder of its own: what it said, and the file's path. */
async function dryRunOf (t: TestContext, text: string): Promise<{ file: string, result: Awaited<ReturnType<typeof plants>> }> {
  const dir = await tempDir(t)
  const file = join(dir, 'plants.csv')
  await writeFile(file, text)
  return { file, result: await plants(['import', '--create', file, '--data-dir', join(dir, 'data'), '--dry-run']) }
}

test('a row with more cells than the header (a decimal comma) is reported in a spreadsheet user\'s words', async (t) => {
  const { file, result } = await dryRunOf(t, 'name,price\nFern,12,50\nIvy,3.50\n')
  assert.equal(result.code, 1, result.stderr)
  assert.deepEqual(reports(result.stderr, file), [
    '2: not valid CSV: the row has 3 cells and the header 2: a cell holding a comma must be in quotes ("12,50"; a price is written with a point, 12.50)'
  ])
  assert.equal(summary(result.stdout, 'rejected'), 1)
})

test('a quote inside a cell that does not start with one is reported once, naming its column and how to write it', async (t) => {
  const { file, result } = await dryRunOf(t, 'name,category\nFern,in"do"or\nIvy,\n')
  assert.equal(result.code, 1, result.stderr)
  assert.deepEqual(reports(result.stderr, file), [
    '2: not valid CSV: a quote inside the category cell, which does not start with one: put the whole cell in quotes and write each quote in it twice ("")'
  ])
  assert.equal(summary(result.stdout, 'rows read'), 2)
  assert.equal(summary(result.stdout, 'rejected'), 1)
})

test('--dry-run checks and counts, and writes nothing (no catalogue made, even with --create)', async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'plants.csv')
  await writeFile(file, csv('Fern,,,', 'Ivy,,,gone'))
  const result = await plants(['import', '--create', file, '--data-dir', join(dir, 'data'), '--dry-run'])
  assert.equal(summary(result.stdout, 'would be added'), 1)
  assert.equal(summary(result.stdout, 'rejected'), 1)
  assert.ok(!existsSync(join(dir, 'data', 'catalogue.db')))
  assert.ok(result.stderr.startsWith(`note: the data folder ${join(dir, 'data')} holds no catalogue yet: every row is checked as a new plant, and the import itself needs --create to start one\n`), result.stderr)
})

test('--dry-run --create on a PostgreSQL database with no catalogue makes none', { skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set' }, async (t) => {
  const dir = await tempDir(t)
  const file = join(dir, 'plants.csv')
  await writeFile(file, csv('Fern,,,'))
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const result = await plants(['import', '--create', file, '--dry-run'], { DATABASE_URL: scratch.url })
  assert.equal(result.code, 0, result.stderr)
  assert.equal(summary(result.stdout, 'would be added'), 1)
  assert.match(result.stdout, /no catalogue yet/)
  assert.match(result.stderr, /^note: the PostgreSQL database .* holds no catalogue yet: every row is checked as a new plant/)
  assert.deepEqual(await adminQuery('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [scratch.name]), [])
  // Without --dry-run, --create makes it.
  assert.equal((await plants(['import', '--create', file], { DATABASE_URL: scratch.url })).code, 0)
  assert.notDeepEqual(await adminQuery('SELECT table_name FROM information_schema.tables WHERE table_schema = $1', [scratch.name]), [])
})

test('a broken quote stops the import before anything is written, naming FILE:LINE where its cell starts (a dry run too)', async (t) => {
  const dir = await tempDir(t)
  const dataDir = join(dir, 'data')
  const MISSING = 'not valid CSV: a quoted cell starts on this line and its closing quote is missing (a quote inside a quoted cell is written twice: "")'
  const AFTER = 'not valid CSV: a quoted cell that starts on this line has more text after its closing quote (a quote inside a quoted cell is written twice: "")'
  const cases: Array<[string, string, string]> = [
    // Never closed: the parser reads the rest of the file into the cell and notices at the end (line 7).
    ['unclosed.csv', 'name,category,tags,status\nFern,,,\n"Palm,indoor,,\nRose,,,\n\nOlive,,,\n', `3: ${MISSING}`],
    // Text after the closing quote of a cell that spans two lines (the parser notices on line 6), after a valid multi-line cell.
    ['closing.csv', 'name,category,tags,status\nFern,,,\nRose,"two\nlines",,\n"Palm\nbig" tree,indoor,,\nOlive,,,\n', `5: ${AFTER}`]
  ]
  for (const [name, text, report] of cases) {
    const file = join(dir, name)
    await writeFile(file, text)
    for (const dry of [['--dry-run'], []]) {
      const result = await plants(['import', '--create', file, '--data-dir', dataDir, ...dry])
      assert.equal(result.code, 1, result.stderr)
      assert.deepEqual(reports(result.stderr, file), [report])
      assert.match(result.stderr, new RegExp(`nothing was imported: the rows after the broken quote at ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:${report.split(':')[0]} cannot be read reliably`))
      assert.equal(existsSync(dataDir), false, 'nothing was written, not even a new catalogue')
    }
  }
  // A quote inside an unquoted cell is that row's own error: reported by line and skipped, the rest imported.
  const inner = join(dir, 'inner.csv')
  await writeFile(inner, 'name,category,tags,status\nFern,,,\nPot 5" wide,,,\nOlive,,,\n')
  const result = await plants(['import', '--create', inner, '--data-dir', dataDir])
  assert.equal(result.code, 1)
  assert.deepEqual(reportedLines(result.stderr, inner), [3])
  assert.deepEqual((await catalogueOf(dataDir)).map((p) => p.name), ['Fern', 'Olive'])
})
