import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { promisify } from 'node:util'
import Database from 'better-sqlite3'
import { verifyBackup } from '../../src/store/sqlite/backup.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { plants } from '../../scripts/lib/cli-harness.js'
import { listenOn } from '../../scripts/lib/listening-service.js'
import { picture } from '../helpers/pictures.js'
import { cliCommand } from '../helpers/process.js'

const run = promisify(execFile)

async function tempDir (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plants-backup-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  return dir
}

test('a backup taken by another process during a write load is whole and holds every write acknowledged before it began', async (t) => {
  const dir = await tempDir(t)
  const dataDir = join(dir, 'data')
  const service = await listenOn(dataDir)
  t.after(() => service.close())

  // Writers keep adding plants through HTTP for the whole test; each acknowledged id is noted.
  const acknowledged: number[] = []
  let writing = true
  const writer = async (w: number): Promise<void> => {
    for (let i = 0; writing; i++) {
      const res = await fetch(`${service.url}/v3/plant`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: `writer ${w} plant ${i}`, tags: [`w${w}`] })
      })
      assert.equal(res.status, 200)
      acknowledged.push(((await res.json()) as { id: number }).id)
    }
  }
  // A photo stored before the backup travels with it, and so do the plant's store fields.
  const body = '{"name":"photographed","price":"7.25","sku":"BK-1","barcode":"96385074","description":"by the door"}'
  const plant = await (await fetch(`${service.url}/v3/plant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).json() as Record<string, unknown> & { id: number }
  const upload = await fetch(`${service.url}/v3/plant/${plant.id}/photos`, { method: 'POST', headers: { 'content-type': 'image/png' }, body: new Uint8Array(await picture('png', 8, 600)) })
  assert.equal(upload.status, 201)
  const photo = (await upload.json()) as { urls: Record<string, string> }
  let failure: unknown
  const writers = Array.from({ length: 16 }, async (_, w) => writer(w).catch((err: unknown) => { failure ??= err; writing = false }))
  // A writer's failure ends the wait (it would otherwise never reach 100 and hang the run).
  while (acknowledged.length < 100 && failure === undefined) await new Promise((resolve) => setTimeout(resolve, 10))
  if (failure !== undefined) throw failure

  const before = [...acknowledged]
  const file = join(dir, 'backup.db')
  const { stdout } = await run(...cliCommand('backup', file, '--data-dir', dataDir))
  const during = acknowledged.length - before.length
  writing = false
  await Promise.all(writers)
  if (failure !== undefined) throw failure

  assert.match(stdout, /integrity ok/)
  const check = verifyBackup(file)
  const db = new Database(file, { readonly: true })
  const ids = new Set((db.prepare('SELECT id FROM plants').all() as Array<{ id: number }>).map((r) => r.id))
  db.close()
  assert.equal(check.plants, ids.size)
  const missing = before.filter((id) => !ids.has(id))
  assert.deepEqual(missing, [], `${missing.length} of ${before.length} writes acknowledged before the backup are missing`)
  t.diagnostic(`${before.length} writes before the backup, ${during} while the CLI started and copied, ${check.plants} plants in the copy`)

  // Restored the documented way (the copy in a fresh data folder), the service serves it.
  const restored = join(dir, 'restored')
  const store = openSqliteStore({ dataDir: restored, feedRetentionMs: 86_400_000 })
  await store.close()
  await copyFile(file, join(restored, 'catalogue.db'))
  await rm(join(restored, 'catalogue.db-wal'), { force: true })
  await rm(join(restored, 'catalogue.db-shm'), { force: true })
  const again = await listenOn(restored)
  t.after(() => again.close())
  const res = await fetch(`${again.url}/v3/plant/${before[0]}`)
  assert.equal(res.status, 200)
  assert.match(stdout, /3 photo files/)
  assert.equal(check.photoFiles, 3)
  for (const url of Object.values(photo.urls)) assert.equal((await fetch(`${again.url}${url}`)).status, 200, `${url} after restore`)
  const found = await (await fetch(`${again.url}/v3/plant?sku=bk-1`)).json() as { items: Array<Record<string, unknown>> }
  assert.deepEqual(found.items.map(({ id, price, sku, barcode, description, createdAt }) => ({ id, price, sku, barcode, description, createdAt })),
    [{ id: plant.id, price: '7.25', sku: 'BK-1', barcode: '96385074', description: 'by the door', createdAt: plant.createdAt }])
  const taken = await fetch(`${again.url}/v3/plant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"copy","sku":"bk-1"}' })
  assert.equal(taken.status, 409, 'the SKU stays unique in the restored catalogue')
  const added = await fetch(`${again.url}/v3/plant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"after restore"}' })
  assert.ok(((await added.json()) as { id: number }).id > check.maxId, 'ids carry on after the restored ones')
})

test('backup refuses to overwrite a file, to run over --url, and to copy a folder without a catalogue', async (t) => {
  const dir = await tempDir(t)
  const dataDir = join(dir, 'data')
  const store = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  await store.create({ name: 'Fern', category: null, tags: [], status: 'available' })
  await store.close()
  const file = join(dir, 'taken.db')
  await writeFile(file, 'precious')
  const refused = await plants(['backup', file, '--data-dir', dataDir])
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, /exists \(pass --force/)
  const forced = await plants(['backup', file, '--data-dir', dataDir, '--force'])
  assert.equal(forced.code, 0, forced.stderr)
  assert.equal(verifyBackup(file).plants, 1)
  assert.equal((await plants(['backup', file, '--url', 'http://127.0.0.1:1'])).code, 2)
  const none = await plants(['backup', join(dir, 'x.db'), '--data-dir', join(dir, 'empty')])
  assert.equal(none.code, 1)
  assert.match(none.stderr, /no catalogue in/)
})

test('restore refuses a file that is not a whole catalogue backup in one line naming it, exit 1, and leaves the catalogue as it was', async (t) => {
  const dir = await tempDir(t)
  const dataDir = join(dir, 'data')
  const store = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  for (let i = 0; i < 200; i++) await store.create({ name: `Fern ${i}`, category: null, tags: [], status: 'available' })
  await store.close()
  const good = join(dir, 'good.db')
  assert.equal((await plants(['backup', good, '--data-dir', dataDir])).code, 0)
  const bytes = await readFile(good)
  const other = new Database(join(dir, 'other.db'))
  other.exec('CREATE TABLE notes (text TEXT)')
  other.close()
  const bad: Array<[string, (file: string) => Promise<void>, RegExp]> = [
    ['photo.png', async (file) => { await writeFile(file, await picture('png', 1, 32)) }, /is not a catalogue backup \(not a database file: plants backup writes one\)/],
    ['cut-short.db', async (file) => { await writeFile(file, bytes.subarray(0, Math.floor(bytes.length / 3))) }, /is damaged: it fails the integrity check/],
    ['empty.db', async (file) => { await writeFile(file, '') }, /is empty: not a catalogue backup/],
    ['folder', async (file) => { await mkdir(file) }, /is a folder, not a file: name the file plants backup wrote/],
    ['other.db', async () => {}, /is not a catalogue backup \(a database without the catalogue's tables\)/],
    ['backup.dump', async (file) => { await writeFile(file, Buffer.concat([Buffer.from('PGDMP'), Buffer.alloc(200, 1)])) }, /is a PostgreSQL dump \(pg_dump\), not a catalogue backup: restore it with pg_restore/],
    [join('data', 'catalogue.db'), async () => {}, /is the catalogue itself, not a backup: name the file plants backup wrote/]
  ]
  const catalogue = join(dataDir, 'catalogue.db')
  const before = { bytes: await readFile(catalogue), files: (await readdir(dataDir)).sort() }
  for (const [name, make, why] of bad) {
    const file = join(dir, name)
    await make(file)
    const refused = await plants(['restore', file, '--data-dir', dataDir])
    assert.equal(refused.code, 1, `${name}: ${refused.stderr}`)
    assert.equal(refused.stdout, '')
    // One line: the file, what is wrong with it, and that nothing happened; no SQLite error, no stack.
    assert.match(refused.stderr, new RegExp(`^plants restore: ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} .*; nothing was restored and the catalogue is unchanged\n$`), name)
    assert.match(refused.stderr, why, name)
    assert.doesNotMatch(refused.stderr, /SqliteError|\n\s+at /, name)
    assert.deepEqual(await readFile(catalogue), before.bytes, `${name}: the catalogue is untouched`)
    assert.deepEqual((await readdir(dataDir)).sort(), before.files, `${name}: nothing left beside it`)
  }
})

test('restore takes a backup made while the service was stopped (backup leaves the catalogue\'s -wal and -shm, which no process holds)', async (t) => {
  const dir = await tempDir(t)
  const dataDir = join(dir, 'data')
  const store = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  await store.create({ name: 'Fern', category: null, tags: [], status: 'available' })
  await store.close()
  const file = join(dir, 'backup.db')
  assert.equal((await plants(['backup', file, '--data-dir', dataDir])).code, 0)
  const restored = await plants(['restore', file, '--data-dir', dataDir])
  assert.equal(restored.code, 0, restored.stderr)
  assert.match(restored.stdout, /^restored .* 1 plant, /)
  assert.deepEqual((await readdir(dataDir)).filter((f) => !f.includes('.replaced-')).sort(), ['catalogue.db'])
  const again = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  t.after(() => again.close())
  assert.equal((await again.get(1))?.name, 'Fern')
})

test('a lost catalogue: restore refuses without marks, pointing to docs/backup-restore.md; marks made from the backup itself and raised (its way) restore past them', async (t) => {
  const dir = await tempDir(t)
  const store = openSqliteStore({ dataDir: join(dir, 'old'), feedRetentionMs: 86_400_000 })
  await store.create({ name: 'Fern', category: null, tags: [], status: 'available' })
  await store.close()
  const file = join(dir, 'backup.db')
  assert.equal((await plants(['backup', file, '--data-dir', join(dir, 'old')])).code, 0)
  const dataDir = join(dir, 'data')
  await mkdir(dataDir)
  const refused = await plants(['restore', file, '--data-dir', dataDir])
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, /pass --marks FILE saved from it \(plants restore-marks save; with none saved, docs\/backup-restore.md: "When the catalogue is lost"\)/)
  assert.match(await readFile(new URL('../../docs/backup-restore.md', import.meta.url), 'utf8'), /^- \*\*When the catalogue is lost\*\*/m)

  await mkdir(join(dir, 'scratch'))
  await copyFile(file, join(dir, 'scratch', 'catalogue.db'))
  const marks = join(dir, 'marks.json')
  assert.equal((await plants(['restore-marks', 'save', marks, '--data-dir', join(dir, 'scratch')])).code, 0)
  const saved = JSON.parse(await readFile(marks, 'utf8'))
  await writeFile(marks, JSON.stringify({ ...saved, lastId: saved.lastId + 1000, feedHead: saved.feedHead + 1000, versionHigh: saved.versionHigh + 1000 }))
  const restored = await plants(['restore', file, '--marks', marks, '--data-dir', dataDir])
  assert.equal(restored.code, 0, restored.stderr)
  assert.match(restored.stdout, /new ids start after 1001, feed positions up to 1001 are gone \(410\)/)

  // The folder holds a catalogue again: a marks file (older, knowing less) is refused, not taken
  // for it, and the catalogue is left as it is.
  const live = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  const made = await live.create({ name: 'Ivy', category: null, tags: [], status: 'available' })
  await live.close()
  const again = await plants(['restore', file, '--marks', marks, '--data-dir', dataDir])
  assert.equal(again.code, 1)
  assert.match(again.stderr, /still holds its catalogue, which knows what it handed out better than .*marks\.json: run restore without --marks/)
  const kept = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  t.after(() => kept.close())
  assert.equal((await kept.get(made.plant.id))?.name, 'Ivy')
})
