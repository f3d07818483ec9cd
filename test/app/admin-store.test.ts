import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import type { CatalogueSnapshot, Kind } from '../../src/store/admin-store.js'
import { openAdmin } from '../../src/store/open/open-admin.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { freshSchema, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'

// The admin part of the store on its own: a data folder's snapshot copied into PostgreSQL reads
// back, through the same interface, as the same rows of every kind; a copy its check refuses
// leaves the database as it was.

const DAY = 86_400_000
const KINDS: Kind[] = ['plants', 'changes', 'idempotencyKeys', 'apiKeys', 'trash', 'history', 'photoFiles', 'webhooks', 'webhookDeliveries', 'locations', 'stockLevels', 'stockMovements', 'reservations']

async function everything (snapshot: CatalogueSnapshot): Promise<Record<string, unknown[]>> {
  const rows: Record<string, unknown[]> = {}
  for (const kind of KINDS) {
    rows[kind] = []
    for await (const page of snapshot.rows(kind, 2)) rows[kind].push(...page)
  }
  return { ...rows, tallies: [await snapshot.tallies()] }
}

test('a data folder\'s snapshot received by PostgreSQL reads back as the same rows of every kind; a copy its check refuses commits nothing', {
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set (.ci/run sets it when PostgreSQL is installed)'
}, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'admin-store-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const store = openSqliteStore({ dataDir: dir, feedRetentionMs: 7 * DAY })
  await store.create({ name: 'NUL \u0000 inside', category: 'c\u0000', tags: ['t\u0000', 'b'], status: 'available' }, { key: 'k1', requestHash: 'h1' })
  const gone = await store.create({ name: 'Fern', category: null, tags: [], status: 'sold' })
  for (let i = 0; i < 5; i++) await store.create({ name: `Plant ${i}`, category: 'even', tags: ['x'], status: 'pending' })
  await store.update(gone.plant.id, { name: 'Fern', category: 'outdoor', tags: [], status: 'sold' })
  await store.remove(gone.plant.id)
  // Stock and a reservation held, one committed: the reservations are a kind of their own.
  await store.stock.move(gone.plant.id + 1, { delta: 5, reason: 'received' })
  await store.stock.reserve({ id: 'held-1', lines: [{ plant: gone.plant.id + 1, quantity: 2 }], ttlSeconds: 900 })
  await store.stock.reserve({ id: 'done-1', lines: [{ plant: gone.plant.id + 1, quantity: 1 }], ttlSeconds: 900 })
  await store.stock.commitReservation('done-1')
  await store.close()

  const schema = await freshSchema()
  t.after(() => schema.drop())
  const source = await openAdmin({ kind: 'folder', dataDir: dir })
  const target = await openAdmin({ kind: 'postgres', databaseUrl: schema.url })
  const snapshot = await source.snapshot()
  t.after(() => snapshot.close())
  const expected = await everything(snapshot)
  assert.equal(expected.plants.length, 6)
  assert.equal(expected.trash.length, 1)
  assert.equal(expected.reservations.length, 2)

  await assert.rejects(target.receive(snapshot, { batchSize: 2, verify: async () => { throw new Error('refused by the check') } }), /refused by the check/)
  const empty = await target.snapshot()
  assert.deepEqual((await everything(empty)).plants, [])
  await empty.close()

  let copied: Record<string, unknown[]> | undefined
  await target.receive(snapshot, { batchSize: 2, verify: async (copy) => { copied = await everything(copy) } })
  assert.deepEqual(copied, expected)
  // Committed: a snapshot of its own reads the same.
  const after = await target.snapshot()
  assert.deepEqual(await everything(after), expected)
  await after.close()
})
