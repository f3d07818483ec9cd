import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { plants, csv } from '../../scripts/lib/cli-harness.js'
import { freshSchema, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'
import { freePort } from '../helpers/process.js'
import { seedView } from '../helpers/records.js'

// The CLI follows the service's configuration: DATABASE_URL, DATA_DIR, and refuses what would surprise.

async function folder (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plants-config-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  return dir
}

const ROWS = csv('Monstera,indoor,large|green,available', 'Fern,,,sold', '"NUL-free, quoted",outdoor,,pending')

test('with DATABASE_URL set, import and export work on PostgreSQL, as the service does, and write no SQLite file', {
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set (.ci/run sets it when PostgreSQL is installed)'
}, async (t) => {
  const dir = await folder(t)
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const env = { DATABASE_URL: scratch.url, DATA_DIR: join(dir, 'data') }
  const file = join(dir, 'stock.csv')
  await writeFile(file, ROWS)

  const refused = await plants(['import', file], env)
  assert.equal(refused.code, 1, refused.stderr)
  assert.match(refused.stderr, /no catalogue in the PostgreSQL database postgres:\/\/postgres@127\.0\.0\.1:5432\/[^ ]+ \(it has no plants table\); pass --create/)
  const exportNone = await plants(['export'], env)
  assert.equal(exportNone.code, 1)
  assert.match(exportNone.stderr, /no catalogue in the PostgreSQL database/)

  const imported = await plants(['import', file, '--create'], env)
  assert.equal(imported.code, 0, imported.stderr)
  assert.match(imported.stdout, /into the PostgreSQL database postgres:\/\/postgres@127\.0\.0\.1:5432\/\S+ in /)
  assert.match(imported.stdout, /added +3/)
  assert.equal(existsSync(join(dir, 'data')), false, 'no SQLite catalogue beside a PostgreSQL service')

  const again = await plants(['import', file], env)
  assert.equal(again.code, 0, again.stderr)
  assert.match(again.stdout, /unchanged +3/)

  const exported = await plants(['export', '--format', 'jsonl'], env)
  assert.equal(exported.code, 0, exported.stderr)
  assert.deepEqual(exported.stdout.trimEnd().split('\n').map((l) => JSON.parse(l)).map(({ name, category, tags, status }) => ({ name, category, tags, status })), [
    { name: 'Monstera', category: 'indoor', tags: ['large', 'green'], status: 'available' },
    { name: 'Fern', category: null, tags: [], status: 'sold' },
    { name: 'NUL-free, quoted', category: 'outdoor', tags: [], status: 'pending' }
  ])

  const backup = await plants(['backup', join(dir, 'b.db')], env)
  assert.equal(backup.code, 1)
  assert.match(backup.stderr, /PostgreSQL \(DATABASE_URL is set\): back it up with pg_dump/)
})

test('migrate takes its target from DATABASE_URL when --to is not given', {
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set (.ci/run sets it when PostgreSQL is installed)'
}, async (t) => {
  const dir = await folder(t)
  const file = join(dir, 'stock.csv')
  await writeFile(file, ROWS)
  const dataDir = join(dir, 'data')
  assert.equal((await plants(['import', file, '--data-dir', dataDir, '--create'])).code, 0)
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const migrated = await plants(['migrate', '--data-dir', dataDir], { DATABASE_URL: scratch.url })
  assert.equal(migrated.code, 0, migrated.stderr)
  const exported = await plants(['export'], { DATABASE_URL: scratch.url })
  assert.equal(exported.stdout.trimEnd().split('\n').length, 4, exported.stdout)
})

test('a data folder that holds no catalogue is refused unless --create asks for a new one', async (t) => {
  const dir = await folder(t)
  const file = join(dir, 'stock.csv')
  await writeFile(file, ROWS)
  const typo = join(dir, 'dtaa')
  const refused = await plants(['import', file, '--data-dir', typo])
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, /no catalogue in .*dtaa \(.*catalogue\.db does not exist\); pass --create to start a new catalogue there/)
  assert.equal(existsSync(typo), false, 'nothing was created')
  // The same through DATA_DIR, as the service reads it.
  assert.equal((await plants(['import', file], { DATA_DIR: typo })).code, 1)
  assert.equal(existsSync(typo), false)

  const created = await plants(['import', file, '--data-dir', typo, '--create'])
  assert.equal(created.code, 0, created.stderr)
  assert.match(created.stdout, /added +3/)
  assert.equal((await plants(['import', file], { DATA_DIR: typo })).code, 0, 'an existing catalogue needs no --create')
  assert.equal((await plants(['import', file, '--create', '--url', 'http://127.0.0.1:1'])).code, 2, '--create goes with a folder')
})

test('export --output picks the format from the extension, as import does; --format still wins', async (t) => {
  const dir = await folder(t)
  const file = join(dir, 'stock.csv')
  await writeFile(file, ROWS)
  const dataDir = join(dir, 'data')
  assert.equal((await plants(['import', file, '--data-dir', dataDir, '--create'])).code, 0)

  for (const name of ['out.jsonl', 'out.ndjson']) {
    assert.equal((await plants(['export', '--data-dir', dataDir, '--output', join(dir, name)])).code, 0)
    const lines = readFileSync(join(dir, name), 'utf8').trimEnd().split('\n')
    assert.deepEqual(seedView(JSON.parse(lines[0])), { id: 1, name: 'Monstera', category: 'indoor', tags: ['large', 'green'], status: 'available', photos: [] })
  }
  assert.equal((await plants(['export', '--data-dir', dataDir, '--output', join(dir, 'out.csv')])).code, 0)
  assert.match(readFileSync(join(dir, 'out.csv'), 'utf8'), /^id,name,category,tags,status,description,price,sku,barcode,lowStockAt,stock.main,photos,updatedAt\n1,Monstera,indoor,large\|green,available,,,,,,,,20\d\d-/)
  assert.equal((await plants(['export', '--data-dir', dataDir, '--format', 'csv', '--output', join(dir, 'forced.jsonl')])).code, 0)
  assert.match(readFileSync(join(dir, 'forced.jsonl'), 'utf8'), /^id,name,/)

  const unknown = await plants(['export', '--data-dir', dataDir, '--output', join(dir, 'out.txt')])
  assert.equal(unknown.code, 2)
  assert.match(unknown.stderr, /cannot tell the format of .*out\.txt from its name: pass --format csv or --format jsonl/)
  assert.equal(existsSync(join(dir, 'out.txt')), false)
  assert.equal((await plants(['export', '--data-dir', dataDir])).stdout.split('\n')[0], 'id,name,category,tags,status,description,price,sku,barcode,lowStockAt,stock.main,photos,updatedAt', 'standard output stays CSV by default')
})

test('an unreachable --url is named for what it is and leaves no file, half-written or whole', async (t) => {
  const dir = await folder(t)
  const closed = `http://127.0.0.1:${await freePort()}`
  const output = join(dir, 'catalogue.csv')
  const started = Date.now()
  const exported = await plants(['export', '--url', closed, '--output', output])
  assert.equal(exported.code, 1)
  assert.match(exported.stderr, /plants export: reading service http:\/\/127\.0\.0\.1:\d+: connection refused \(nothing listens there\) \[ECONNREFUSED\]/)
  assert.deepEqual(readdirSync(dir), [], 'no catalogue.csv and no partial file')

  const file = join(dir, 'stock.csv')
  await writeFile(file, ROWS)
  const imported = await plants(['import', file, '--url', closed])
  assert.equal(imported.code, 1)
  assert.match(imported.stderr, /connection refused \(nothing listens there\) \[ECONNREFUSED\]/)
  // Never answered: a wrong address, reported at once rather than after the retries a restart deserves.
  t.diagnostic(`both refusals reported in ${Date.now() - started} ms`)
})

test('an unreachable DATABASE_URL is named with its cause, the password left out', async (t) => {
  const dir = await folder(t)
  const file = join(dir, 'stock.csv')
  await writeFile(file, ROWS)
  const env = { DATABASE_URL: `postgres://plants:secret@127.0.0.1:${await freePort()}/catalogue` }
  for (const args of [['export'], ['import', file], ['import', file, '--create']]) {
    const result = await plants(args, env)
    assert.equal(result.code, 1, args.join(' '))
    assert.match(result.stderr, /cannot reach PostgreSQL at postgres:\/\/plants:\*\*\*@127\.0\.0\.1:\d+\/catalogue: connection refused \(nothing listens there\) \[ECONNREFUSED\]/)
    assert.doesNotMatch(result.stderr, /secret/)
  }
})

test('backup into a folder that does not exist says so, and writes nothing', async (t) => {
  const dir = await folder(t)
  const file = join(dir, 'stock.csv')
  await writeFile(file, ROWS)
  const dataDir = join(dir, 'data')
  assert.equal((await plants(['import', file, '--data-dir', dataDir, '--create'])).code, 0)
  const missing = join(dir, 'backups', 'nightly')
  const result = await plants(['backup', join(missing, 'catalogue.db'), '--data-dir', dataDir])
  assert.equal(result.code, 1)
  assert.match(result.stderr, /plants backup: the folder .*backups\/nightly does not exist: create it first/)
  assert.equal(existsSync(join(dir, 'backups')), false)
  await mkdir(missing, { recursive: true })
  assert.equal((await plants(['backup', join(missing, 'catalogue.db'), '--data-dir', dataDir])).code, 0)
})

test('plants --version prints the package version', async () => {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  const result = await plants(['--version'])
  assert.equal(result.code, 0)
  assert.equal(result.stdout, `${pkg.version}\n`)
  // As `npx plants -- --version` hands it over.
  assert.deepEqual(await plants(['--', '--version']), { code: 0, stdout: `${pkg.version}\n`, stderr: '' })
})
