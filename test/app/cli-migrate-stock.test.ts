import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { plants } from '../../scripts/lib/cli-harness.js'
import type { CatalogueSnapshot, Kind } from '../../src/store/admin-store.js'
import { openAdmin } from '../../src/store/open/open-admin.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { adminQuery, freshSchema, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'
import { moveStock } from '../helpers/stock-rows.js'

// plants migrate carries the stock: the locations, every plant's level at each, the ledger with its
// positions, the totals and thresholds on the plants; its check compares them before it commits.

const DAY = 86_400_000
const STOCK: Kind[] = ['locations', 'stockLevels', 'stockMovements']

async function stockOf (snapshot: CatalogueSnapshot): Promise<Record<string, unknown[]>> {
  const rows: Record<string, unknown[]> = {}
  for (const kind of STOCK) {
    rows[kind] = []
    for await (const page of snapshot.rows(kind, 2)) rows[kind].push(...page)
  }
  try { return rows } finally { await snapshot.close() }
}

test('migrate copies the locations, every level and every movement of the ledger into PostgreSQL, with the plants\' totals and thresholds', {
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set'
}, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'plants-migrate-stock-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const dataDir = join(dir, 'data')
  const sqlite = openSqliteStore({ dataDir, feedRetentionMs: 7 * DAY })
  const fern = (await sqlite.create({ name: 'Fern', category: null, tags: [], status: 'available', lowStockAt: 3 })).plant
  const palm = (await sqlite.create({ name: 'Palm', category: null, tags: [], status: 'available' })).plant
  await sqlite.create({ name: 'Untracked', category: null, tags: [], status: 'available', lowStockAt: 1 })
  await moveStock(sqlite, [
    { plant: fern.id, location: 'main', delta: 10, reason: 'received', reference: null },
    { plant: fern.id, location: 'greenhouse', delta: 5, reason: 'received', reference: 'delivery 12' },
    { plant: fern.id, location: 'main', delta: -1, reason: 'sale', reference: 'order-7' },
    { plant: palm.id, location: 'main', delta: 2, reason: 'received', reference: null },
    { plant: palm.id, location: 'main', delta: -2, reason: 'sale', reference: null }
  ])
  await sqlite.close()
  const source = openSqliteStore({ dataDir, feedRetentionMs: 7 * DAY })
  const records = await source.list({ afterId: 0, limit: 10 })
  await source.close()
  assert.deepEqual(records.map((p) => [p.stock, p.lowStockAt]), [[{ onHand: 14, reserved: 0, available: 14 }, 3], [{ onHand: 0, reserved: 0, available: 0 }, null], [null, 1]])
  const expected = await stockOf(await (await openAdmin({ kind: 'folder', dataDir })).snapshot())
  assert.equal(expected.stockMovements.length, 5)
  const db = new Database(join(dataDir, 'catalogue.db'), { readonly: true })
  const sourceCrossings = (db.prepare('SELECT seq, stock_events FROM changes WHERE stock_events IS NOT NULL ORDER BY seq').all() as Array<{ seq: number, stock_events: string }>)
    .map((c) => [c.seq, (JSON.parse(c.stock_events) as { events: string[] }).events])
  db.close()
  assert.deepEqual(sourceCrossings.map((c) => c[1]), [['stock.out']], 'the Palm sold out (Fern stays above its 3)')
  const main = expected.locations.find((l) => (l as { name: string }).name === 'main') as { created_at: number }
  assert.ok(Number(main.created_at) > Date.parse('2020-01-01'), 'main has the time the catalogue was made (not 1970), which migrate carries row for row')

  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const result = await plants(['migrate', '--to', scratch.url, '--data-dir', dataDir, '--batch-size', '2'])
  assert.equal(result.code, 0, result.stderr)
  assert.match(result.stdout, /stock +2 locations, 3 levels, 5 movements in the ledger \(last position 5\)\n/)
  assert.match(result.stdout, /and so does a digest of the stock/)

  assert.deepEqual(await stockOf(await (await openAdmin({ kind: 'postgres', databaseUrl: scratch.url })).snapshot()), expected, 'the same locations, levels and ledger, row for row')
  const pg = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 7 * DAY })
  t.after(() => pg.close())
  assert.deepEqual(await pg.list({ afterId: 0, limit: 10 }), records, 'each plant with its totals and threshold')
  // The ledger's positions carry on after the highest: a cursor held from before never names another movement.
  const [{ next }] = await adminQuery<{ next: number }>("SELECT nextval(pg_get_serial_sequence('stock_movements', 'seq'))::int AS next", [], scratch.url)
  assert.equal(next, 6)
  // The units the inventory counts, kept by every movement, start from what was copied.
  const units = await adminQuery<{ key: string, value: number }>("SELECT key, value::int AS value FROM meta WHERE key LIKE 'count_units_%' ORDER BY key", [], scratch.url)
  assert.deepEqual(units, [{ key: 'count_units_on_hand', value: 14 }, { key: 'count_units_reserved', value: 0 }])
  // The crossings (stock.low / stock.out) ride on their changes: one not yet delivered is sent from PostgreSQL.
  const crossings = await adminQuery<{ seq: number, stock_events: string }>('SELECT seq::int AS seq, stock_events FROM changes WHERE stock_events IS NOT NULL ORDER BY seq', [], scratch.url)
  assert.deepEqual(crossings.map((c) => [c.seq, (JSON.parse(c.stock_events) as { events: string[] }).events]), sourceCrossings)
})
