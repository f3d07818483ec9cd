import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test, type TestContext } from 'node:test'
import { promisify } from 'node:util'
import type { FastifyInstance } from 'fastify'
import { plants } from '../../scripts/lib/cli-harness.js'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { openStore } from '../../src/store/open/open-store.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { freshDatabase, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'

// After a restore from a backup, nothing handed out before it names something
// else. The operator's reproduction: backup, one more plant (id 5, Feed-Position 5), restore; then a
// new plant got id 5, ETag "5.1", seq 5 again, and changes?after=5 answered an empty page.

const run = promisify(execFile)

async function tempDir (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plants-restore-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** What clients were handed before the restore. */
interface HandedOut { ids: Set<number>, etags: Set<string>, positions: Set<number>, historyCursors?: string[] }

async function service (open: () => Promise<PlantStore>): Promise<{ app: FastifyInstance, close: () => Promise<void> }> {
  const store = await open()
  const app = await buildApp(testConfig({}), { store })
  return { app, close: async () => { await app.close(); await store.close() } }
}

/** Sends a request and notes every id, ETag and Feed-Position it hands out. */
function noting (app: FastifyInstance, handed: HandedOut) {
  return async (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) => {
    const res = await app.inject({ method, url, payload })
    if (res.headers.etag) handed.etags.add(String(res.headers.etag))
    if (res.headers['feed-position']) handed.positions.add(Number(res.headers['feed-position']))
    if (res.statusCode === 200 && method !== 'GET' && res.json().id !== undefined) handed.ids.add(res.json().id)
    return res
  }
}

/** Writes before the backup: four plants, one of them updated, one in the trash. */
async function beforeBackup (app: FastifyInstance, handed: HandedOut): Promise<void> {
  const send = noting(app, handed)
  for (const name of ['Monstera', 'Fern', 'Cactus', 'Palm']) assert.equal((await send('POST', '/v3/plant', { name })).statusCode, 200)
  assert.equal((await send('PATCH', '/v3/plant/1', { status: 'pending' })).statusCode, 200)
  assert.equal((await send('DELETE', '/v3/plant/4')).statusCode, 204)
  await send('GET', '/v3/plant/1')
}

/** Writes after the backup, lost by the restore: a fifth plant, updates, a delete, a restore from the trash. */
async function afterBackup (app: FastifyInstance, handed: HandedOut): Promise<void> {
  const send = noting(app, handed)
  assert.equal((await send('POST', '/v3/trash/4/restore')).statusCode, 200)
  assert.equal((await send('PATCH', '/v3/plant/4', { status: 'sold' })).statusCode, 200)
  const fifth = await send('POST', '/v3/plant', { name: 'Ficus' })
  assert.equal(fifth.json().id, 5)
  assert.equal((await send('PATCH', '/v3/plant/2', { status: 'sold' })).statusCode, 200)
  assert.equal((await send('PATCH', '/v3/plant/2', { category: 'indoor' })).statusCode, 200)
  assert.equal((await send('DELETE', '/v3/plant/3')).statusCode, 204)
  for (const id of [1, 2, 4, 5]) await send('GET', `/v3/plant/${id}`)
  await send('GET', '/v3/plant?limit=10')
  // Plant 2's history, a page at a time: versions 3, 2 and 1, each page's cursor naming the last.
  handed.historyCursors = []
  for (let cursor: string | null = null, pages = 0; pages === 0 || cursor !== null; pages++) {
    const page: { nextCursor: string | null } = (await send('GET', `/v3/plant/2/history?limit=1${cursor === null ? '' : `&cursor=${cursor}`}`)).json()
    cursor = page.nextCursor
    if (cursor !== null) handed.historyCursors.push(cursor)
  }
  assert.equal(handed.historyCursors.length, 2)
}

/** Every id, ETag and position handed out before the restore is refused (404, 412) or 410. */
async function assertNothingReused (app: FastifyInstance, handed: HandedOut): Promise<void> {
  assert.ok(handed.positions.size >= 2 && handed.etags.size >= 8, `the test handed out positions and ETags: ${[...handed.positions]} ${[...handed.etags]}`)
  const head = Math.max(...handed.positions)
  for (let after = 0; after <= head; after++) {
    const res = await app.inject({ method: 'GET', url: `/v3/plant/changes?after=${after}` })
    assert.equal(res.statusCode, 410, `changes?after=${after} (handed out before the restore) answered ${res.statusCode} ${res.body}`)
  }
  assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/5' })).statusCode, 404, 'the plant created after the backup is gone')
  for (const etag of handed.etags) {
    const id = Number(etag.slice(1).split('.')[0])
    const res = await app.inject({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { tags: ['checked'] }, headers: { 'if-match': etag } })
    // Plant 5 is lost; plant 4 is in the trash again, as in the backup.
    assert.equal(res.statusCode, id === 5 || id === 4 ? 404 : 412, `If-Match ${etag} answered ${res.statusCode}`)
  }
  // The restored plants answer with ETags never handed out, the deleted one included (it was in the
  // backup), and so does the one brought back from the trash.
  const back = await app.inject({ method: 'POST', url: '/v3/trash/4/restore' })
  assert.equal(back.statusCode, 200, back.body)
  for (const id of [1, 2, 3, 4]) {
    const res = await app.inject({ method: 'GET', url: `/v3/plant/${id}` })
    assert.equal(res.statusCode, 200)
    assert.equal(handed.etags.has(String(res.headers.etag)), false, `plant ${id} answers ${res.headers.etag}, handed out before`)
  }
  // A history cursor from before is 410 (an empty page would end the history there); one handed out since pages on.
  for (const cursor of handed.historyCursors!) {
    const res = await app.inject({ method: 'GET', url: `/v3/plant/2/history?limit=1&cursor=${cursor}` })
    assert.equal(res.statusCode, 410, `history cursor ${cursor} answered ${res.statusCode} ${res.body}`)
    assert.match(res.json().detail, /handed out before the catalogue was restored from a backup/)
  }
  const first = (await app.inject({ method: 'GET', url: '/v3/plant/1/history?limit=1' })).json()
  const second = await app.inject({ method: 'GET', url: `/v3/plant/1/history?limit=1&cursor=${first.nextCursor}` })
  assert.equal(second.statusCode, 200)
  assert.equal(second.json().items.length, 1)
  // New things get new names: an id, an ETag and a position never handed out, and the feed from
  // the position a fresh read gives lists the new change.
  const from = Number((await app.inject({ method: 'GET', url: '/v3/plant?limit=1' })).headers['feed-position'])
  assert.ok(from > head + 1, `the feed follows from ${from}, after every position handed out (${head})`)
  const created = await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Olive' } })
  assert.equal(created.statusCode, 200)
  assert.ok(!handed.ids.has(created.json().id) && created.json().id > 5, `the new plant got id ${created.json().id}`)
  assert.equal(handed.etags.has(String(created.headers.etag)), false)
  const page = (await app.inject({ method: 'GET', url: `/v3/plant/changes?after=${from}` })).json()
  assert.deepEqual(page.items.map((c: { kind: string, id: number }) => [c.kind, c.id]), [['created', created.json().id]])
  assert.ok(page.items[0].seq > head)
  // The history moved with the versions: plant 1's newest version is its ETag's, and a revert to the one before still works.
  const etag = String((await app.inject({ method: 'GET', url: '/v3/plant/1' })).headers.etag)
  const history = (await app.inject({ method: 'GET', url: '/v3/plant/1/history' })).json().items
  assert.deepEqual(history.map((e: { version: number, kind: string }) => [`"1.${e.version}"`, e.kind]), [[etag, 'updated'], [`"1.${history[1].version}"`, 'created']])
  const reverted = await app.inject({ method: 'POST', url: '/v3/plant/1/revert', payload: { version: history[1].version, status: true }, headers: { 'if-match': etag } })
  assert.equal(reverted.statusCode, 200, reverted.body)
  assert.equal(reverted.json().status, 'available')
}

describe('restore from a backup reuses nothing (SQLite: plants restore)', () => {
  test('backup, writes, restore: every id, ETag and feed position handed out before is 404, 412 or 410', async (t) => {
    const dir = await tempDir(t)
    const dataDir = join(dir, 'data')
    const open = (): Promise<PlantStore> => openStore({ dataDir, feedRetentionMs: 86_400_000 })
    const handed: HandedOut = { ids: new Set(), etags: new Set(), positions: new Set() }
    const first = await service(open)
    await beforeBackup(first.app, handed)
    const backup = join(dir, 'backup.db')
    const made = await plants(['backup', backup, '--data-dir', dataDir])
    assert.equal(made.code, 0, made.stderr)
    await afterBackup(first.app, handed)

    // While the service has the catalogue open, restore refuses and changes nothing.
    const refused = await plants(['restore', backup, '--data-dir', dataDir])
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /in use by another process: stop the service first/)
    assert.equal((await first.app.inject({ method: 'GET', url: '/v3/plant/5' })).statusCode, 200)
    await first.close()

    const restored = await plants(['restore', backup, '--data-dir', dataDir])
    assert.equal(restored.code, 0, restored.stderr)
    assert.match(restored.stdout, /new ids start after 5, feed positions up to \d+ are gone \(410\)/)
    assert.match(restored.stdout, /the replaced catalogue is .*catalogue\.db\.replaced-/)

    const second = await service(open)
    t.after(second.close)
    await assertNothingReused(second.app, handed)
  })
})

describe('restore from a backup reuses nothing (PostgreSQL: restore-marks save, pg_restore, restore-marks apply)', { skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set' }, () => {
  test('backup, writes, restore: every id, ETag and feed position handed out before is 404, 412 or 410', async (t) => {
    const dir = await tempDir(t)
    const old = await freshDatabase()
    t.after(() => old.drop())
    const handed: HandedOut = { ids: new Set(), etags: new Set(), positions: new Set() }
    const first = await service(() => openStore({ databaseUrl: old.url, dataDir: '', feedRetentionMs: 86_400_000 }))
    await beforeBackup(first.app, handed)
    const dump = join(dir, 'catalogue.dump')
    await run('pg_dump', ['--format=custom', '--file', dump, old.url])
    await afterBackup(first.app, handed)
    await first.close()

    // The documented procedure: the marks of the database being replaced, the dump restored into a
    // new database, the marks applied to it before any instance starts.
    const marks = join(dir, 'marks.json')
    const saved = await plants(['restore-marks', 'save', marks, '--database-url', old.url])
    assert.equal(saved.code, 0, saved.stderr)
    assert.match(saved.stdout, /ids up to 5, feed positions up to \d+/)
    assert.equal(saved.stderr, '', 'no instance was running: no warning')
    const fresh = await freshDatabase()
    t.after(() => fresh.drop())
    await run('pg_restore', ['--no-owner', '--dbname', fresh.url, dump])

    // An instance still running on the restored database: apply refuses and changes nothing.
    const early = await openStore({ databaseUrl: fresh.url, dataDir: '', feedRetentionMs: 86_400_000 })
    const refused = await plants(['restore-marks', 'apply', marks, '--database-url', fresh.url])
    assert.equal(refused.code, 1)
    assert.match(refused.stderr, /the service is connected to this database \(\d+ connections?\): stop every instance.*nothing was changed/)
    // Saving beside a running instance is allowed (a timer's marks) but warned of.
    const beside = await plants(['restore-marks', 'save', join(dir, 'timer.json'), '--database-url', fresh.url])
    assert.equal(beside.code, 0, beside.stderr)
    assert.match(beside.stderr, /warning: the service is connected to this database .*Before a restore, stop every instance and save again/)
    await early.close()

    const applied = await plants(['restore-marks', 'apply', marks, '--database-url', fresh.url])
    assert.equal(applied.code, 0, applied.stderr)
    // Applied twice (a retried script), it would undo what the first did and what came since: refused.
    const twice = await plants(['restore-marks', 'apply', marks, '--database-url', fresh.url])
    assert.equal(twice.code, 1)
    assert.match(twice.stderr, /this database is past these marks .*they were applied already\. Restore the dump again \(pg_restore\) before applying them; nothing was changed/)

    const second = await service(() => openStore({ databaseUrl: fresh.url, dataDir: '', feedRetentionMs: 86_400_000 }))
    t.after(second.close)
    await assertNothingReused(second.app, handed)
  })
})
