import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { plants } from '../../scripts/lib/cli-harness.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { adminQuery, freshSchema, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'

// plants migrate carries the reservations: an open one keeps holding its units on PostgreSQL (and
// can be committed or released there), ended ones still answer reads; its check counts and digests them.

const DAY = 86_400_000

test('migrate copies the reservations: the open one keeps holding and commits on PostgreSQL; ended ones read as they ended', {
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set'
}, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plants-migrate-reservations-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const dataDir = join(dir, 'data')
  const sqlite = openSqliteStore({ dataDir, feedRetentionMs: 7 * DAY })
  const fern = (await sqlite.create({ name: 'Fern', category: null, tags: [], status: 'available' })).plant
  await sqlite.stock.move(fern.id, { delta: 10, reason: 'received' })
  for (const [id, quantity] of [['open-1', 3], ['sold-1', 2], ['let-go-1', 1]] as const) await sqlite.stock.reserve({ id, lines: [{ plant: fern.id, quantity }], ttlSeconds: 3600 })
  await sqlite.stock.commitReservation('sold-1')
  await sqlite.stock.releaseReservation('let-go-1')
  const before = await Promise.all(['open-1', 'sold-1', 'let-go-1'].map(async (id) => await sqlite.stock.reservation(id)))
  await sqlite.close()

  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const result = await plants(['migrate', '--to', scratch.url, '--data-dir', dataDir, '--batch-size', '2'])
  assert.equal(result.code, 0, result.stderr)
  assert.match(result.stdout, /reservations +3 \(1 held, still holding their units\)\n/)
  assert.match(result.stdout, /the ledger, the reservations\)/)

  const pg = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 7 * DAY })
  t.after(() => pg.close())
  assert.deepEqual(await Promise.all(['open-1', 'sold-1', 'let-go-1'].map(async (id) => await pg.stock.reservation(id))), before)
  assert.deepEqual((await pg.get(fern.id))?.stock, { onHand: 8, reserved: 3, available: 5 })
  const units = await adminQuery<{ value: number }>("SELECT value::int AS value FROM meta WHERE key = 'count_units_reserved'", [], scratch.url)
  assert.deepEqual(units, [{ value: 3 }])
  const committed = await pg.stock.commitReservation('open-1')
  assert.deepEqual(committed.plants, [{ id: fern.id, version: committed.plants[0].version, stock: { onHand: 5, reserved: 0, available: 5 } }])
  await assert.rejects(pg.stock.commitReservation('sold-1'), /committed/)
})
