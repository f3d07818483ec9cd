import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
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
import { receiver, until, type Receiver } from '../helpers/receiver.js'

// A restore reaches webhook receivers: backup; plant 4 created, plant 1 priced, plant 2 deleted
// (all delivered); restore. A receiver that applies what it is sent, in order, then holds the
// restored catalogue: plant 4 gone, plant 1's price back, plant 2 back.

const run = promisify(execFile)

async function tempDir (t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'plants-restore-hooks-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  return dir
}

async function service (open: () => Promise<PlantStore>): Promise<{ app: FastifyInstance, close: () => Promise<void> }> {
  const store = await open()
  const app = await buildApp(testConfig({ webhookAllowPrivate: true }), { store, webhooks: { retryDelayMs: () => 10 } })
  await app.ready()
  return { app, close: async () => { await app.close(); await store.close() } }
}

/** What a receiver holds: every change applied in the order it came, by plant id. */
function holding (r: Receiver): Map<number, object> {
  const held = new Map<number, object>()
  for (const { body } of r.received) {
    const change = JSON.parse(body)
    if (change.kind === 'deleted') held.delete(change.id)
    else held.set(change.id, change.plant)
  }
  return held
}

async function catalogue (app: FastifyInstance): Promise<Map<number, object>> {
  const page = await app.inject({ method: 'GET', url: '/v3/plant?limit=100' })
  assert.equal(page.statusCode, 200)
  return new Map(page.json().items.map((p: { id: number }) => [p.id, p]))
}

/** Waits until every active webhook has been delivered the feed up to its head. */
async function delivered (app: FastifyInstance): Promise<void> {
  const head = Number((await app.inject({ method: 'GET', url: '/v3/plant?limit=1' })).headers['feed-position'])
  await until(`every active webhook delivered up to ${head}`, async () => {
    const hooks = (await app.inject({ method: 'GET', url: '/v3/webhooks' })).json().items as Array<{ status: string, deliveredUpTo: number }>
    return hooks.every((w) => w.status !== 'active' || w.deliveredUpTo >= head)
  })
}

interface Receivers { steady: Receiver, behind: Receiver }

/**
 * Before the backup: three plants, both receivers told; then the second webhook is paused and
 * plant 3 changes, so its receiver is behind when the backup is taken (and after the restore).
 */
async function beforeBackup (t: TestContext, app: FastifyInstance): Promise<Receivers> {
  const steady = await receiver(t)
  const behind = await receiver(t)
  for (const r of [steady, behind]) {
    assert.equal((await app.inject({ method: 'POST', url: '/v3/webhooks', payload: { url: r.url } })).statusCode, 201)
  }
  for (const name of ['Monstera', 'Fern', 'Cactus']) assert.equal((await app.inject({ method: 'POST', url: '/v3/plant', payload: { name } })).statusCode, 200)
  await delivered(app)
  assert.equal((await app.inject({ method: 'PATCH', url: '/v3/webhooks/2', payload: { status: 'paused' } })).statusCode, 200)
  assert.equal((await app.inject({ method: 'PATCH', url: '/v3/plant/3', payload: { category: 'succulent' } })).statusCode, 200)
  await delivered(app)
  return { steady, behind }
}

/** After the backup, undone by the restore: plant 4 created, plant 1 priced, plant 2 deleted, plant 5 created and deleted. */
async function afterBackup (app: FastifyInstance, { steady }: Receivers): Promise<void> {
  assert.equal((await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Ficus' } })).json().id, 4)
  assert.equal((await app.inject({ method: 'PATCH', url: '/v3/plant/1', payload: { price: '12.50' } })).statusCode, 200)
  assert.equal((await app.inject({ method: 'DELETE', url: '/v3/plant/2' })).statusCode, 204)
  assert.equal((await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Olive' } })).json().id, 5)
  assert.equal((await app.inject({ method: 'DELETE', url: '/v3/plant/5' })).statusCode, 204)
  await delivered(app)
  assert.deepEqual([...holding(steady).keys()].sort(), [1, 3, 4], 'the steady receiver holds the catalogue before the restore')
}

/**
 * Both receivers, once told, hold exactly the restored catalogue; the feed goes on after the
 * restore's changes. `before`: what the steady receiver had been sent before the restore (counted
 * then: the restored service starts sending at once, before this can look).
 */
async function assertReceiversHoldRestored (app: FastifyInstance, { steady, behind }: Receivers, before: number): Promise<void> {
  // The paused webhook is the backup's: resumed, it is sent what it missed.
  assert.equal((await app.inject({ method: 'PATCH', url: '/v3/webhooks/2', payload: { status: 'active' } })).statusCode, 200)
  await delivered(app)
  const restored = await catalogue(app)
  assert.deepEqual([...restored.keys()].sort(), [1, 2, 3])
  assert.equal((restored.get(1) as { price: string | null }).price, null, 'plant 1\'s price is back')
  assert.deepEqual(holding(steady), restored)
  assert.deepEqual(holding(behind), restored)
  // Plants 4 and 5 are deleted first; plant 3 is sent too, as the paused receiver may hold an older version of it.
  // At least once: a duplicate (same webhook-id, after a timeout on a loaded machine) is counted once.
  const told = [...new Map(steady.received.slice(before).map(({ headers, body }) => [headers['webhook-id'], JSON.parse(body)])).values()]
  assert.deepEqual(told.map((c) => [c.kind, c.id]), [['deleted', 4], ['deleted', 5], ['updated', 1], ['created', 2], ['updated', 3]])
  for (const c of told.filter((c) => c.kind !== 'deleted')) {
    const etag = (await app.inject({ method: 'GET', url: `/v3/plant/${c.id}` })).headers.etag
    assert.equal(etag, `"${c.id}.${c.version}"`, 'a restored plant is sent with its restored version')
  }
  // The next write is delivered after them, and a receiver still applies it.
  assert.equal((await app.inject({ method: 'PATCH', url: '/v3/plant/2', payload: { status: 'sold' } })).statusCode, 200)
  await delivered(app)
  assert.deepEqual(holding(steady), await catalogue(app))
  assert.deepEqual(holding(behind), await catalogue(app))
}

describe('a restore tells webhook receivers what it undid (SQLite: plants restore)', () => {
  test('backup; create, price, delete, all delivered; restore: each receiver applying what it is sent holds the restored catalogue', async (t) => {
    const dir = await tempDir(t)
    const dataDir = join(dir, 'data')
    const open = (): Promise<PlantStore> => openStore({ dataDir, feedRetentionMs: 86_400_000 })
    const first = await service(open)
    const receivers = await beforeBackup(t, first.app)
    const backup = join(dir, 'backup.db')
    const made = await plants(['backup', backup, '--data-dir', dataDir])
    assert.equal(made.code, 0, made.stderr)
    await afterBackup(first.app, receivers)
    await first.close()
    const before = receivers.steady.received.length

    const restored = await plants(['restore', backup, '--data-dir', dataDir])
    assert.equal(restored.code, 0, restored.stderr)
    assert.match(restored.stdout, /webhook receivers are sent 5 changes after the floor/)

    const second = await service(open)
    t.after(second.close)
    await assertReceiversHoldRestored(second.app, receivers, before)
  })

  test('marks saved without the plants\' versions still restore, and the output says receivers are not told', async (t) => {
    const dir = await tempDir(t)
    const dataDir = join(dir, 'data')
    const first = await service(() => openStore({ dataDir, feedRetentionMs: 86_400_000 }))
    assert.equal((await first.app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern' } })).statusCode, 200)
    await first.close()
    const backup = join(dir, 'backup.db')
    assert.equal((await plants(['backup', backup, '--data-dir', dataDir])).code, 0)
    const marks = join(dir, 'marks.json')
    assert.equal((await plants(['restore-marks', 'save', marks, '--data-dir', dataDir])).code, 0)
    const { told, ...older } = JSON.parse(await readFile(marks, 'utf8'))
    assert.deepEqual(told, { plants: [[1, 1]], unsure: [] })
    await writeFile(marks, JSON.stringify(older))
    await mkdir(join(dir, 'elsewhere'))
    const restored = await plants(['restore', backup, '--marks', marks, '--data-dir', join(dir, 'elsewhere')])
    assert.equal(restored.code, 0, restored.stderr)
    assert.match(restored.stdout, /webhook receivers are not told what the restore undid: the marks were saved without the plants' versions/)
  })
})

describe('a restore tells webhook receivers what it undid (PostgreSQL: restore-marks save, pg_restore, restore-marks apply)', { skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set' }, () => {
  test('backup; create, price, delete, all delivered; restore: each receiver applying what it is sent holds the restored catalogue', async (t) => {
    const dir = await tempDir(t)
    const old = await freshDatabase()
    t.after(() => old.drop())
    const first = await service(() => openStore({ databaseUrl: old.url, dataDir: '', feedRetentionMs: 86_400_000 }))
    const receivers = await beforeBackup(t, first.app)
    const dump = join(dir, 'catalogue.dump')
    await run('pg_dump', ['--format=custom', '--file', dump, old.url])
    await afterBackup(first.app, receivers)
    await first.close()
    const before = receivers.steady.received.length

    const marks = join(dir, 'marks.json')
    const saved = await plants(['restore-marks', 'save', marks, '--database-url', old.url])
    assert.equal(saved.code, 0, saved.stderr)
    const fresh = await freshDatabase()
    t.after(() => fresh.drop())
    await run('pg_restore', ['--no-owner', '--dbname', fresh.url, dump])
    const applied = await plants(['restore-marks', 'apply', marks, '--database-url', fresh.url])
    assert.equal(applied.code, 0, applied.stderr)
    assert.match(applied.stdout, /webhook receivers are sent 5 changes after the floor/)

    const second = await service(() => openStore({ databaseUrl: fresh.url, dataDir: '', feedRetentionMs: 86_400_000 }))
    t.after(second.close)
    await assertReceiversHoldRestored(second.app, receivers, before)
  })
})
