import assert from 'node:assert/strict'
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { plants } from '../../scripts/lib/cli-harness.js'
import type { CatalogueLocation, CatalogueSnapshot, Kind } from '../../src/store/admin-store.js'
import { openAdmin } from '../../src/store/open/open-admin.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { adminQuery, freshDatabase, freshSchema, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'
import { moveStock, type StockMove } from '../helpers/stock-rows.js'

// A backup holds the stock, and a restore brings it back as it was at the backup: the locations,
// every level, the ledger; the ledger's positions continue after the highest the replaced
// catalogue gave (on a data folder by plants restore, on PostgreSQL by restore-marks apply).

const DAY = 86_400_000
const STOCK: Kind[] = ['locations', 'stockLevels', 'stockMovements', 'reservations']

async function stockAt (where: CatalogueLocation): Promise<Record<string, unknown[]>> {
  const snapshot: CatalogueSnapshot = await (await openAdmin(where)).snapshot()
  const rows: Record<string, unknown[]> = {}
  try {
    for (const kind of STOCK) {
      rows[kind] = []
      for await (const page of snapshot.rows(kind, 100)) rows[kind].push(...page)
    }
    return rows
  } finally {
    await snapshot.close()
  }
}

const BEFORE: StockMove[] = [
  { plant: 1, location: 'main', delta: 10, reason: 'received', reference: null },
  { plant: 1, location: 'greenhouse', delta: 4, reason: 'received', reference: null },
  { plant: 2, location: 'main', delta: 3, reason: 'received', reference: null }
]
const SINCE: StockMove[] = [
  { plant: 1, location: 'main', delta: -2, reason: 'sale', reference: 'order-9' },
  { plant: 2, location: 'main', delta: -3, reason: 'sale', reference: null }
]

/** More movements in a closed data folder's catalogue. */
async function moveIn (dataDir: string, movements: StockMove[]): Promise<void> {
  const store = openSqliteStore({ dataDir, feedRetentionMs: 7 * DAY })
  try { await moveStock(store, movements, []) } finally { await store.close() }
}

async function folderWithStock (t: import('node:test').TestContext): Promise<{ dir: string, dataDir: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'plants-backup-stock-'))
  t.after(() => rm(dir, { recursive: true, force: true }))
  const dataDir = join(dir, 'data')
  const store = openSqliteStore({ dataDir, feedRetentionMs: 7 * DAY })
  await store.create({ name: 'Fern', category: null, tags: [], status: 'available', lowStockAt: 2 })
  await store.create({ name: 'Palm', category: null, tags: [], status: 'available' })
  await moveStock(store, BEFORE)
  // An open reservation: a backup holds it, and a restore brings it back holding.
  await store.stock.reserve({ id: 'checkout-1', lines: [{ plant: 1, quantity: 2 }], ttlSeconds: 86_400 })
  await store.close()
  return { dir, dataDir }
}

const totals = async (dataDir: string): Promise<unknown[]> => {
  const store = openSqliteStore({ dataDir, feedRetentionMs: 7 * DAY })
  try { return (await store.list({ afterId: 0, limit: 10 })).map((p) => [p.id, p.stock, p.lowStockAt]) } finally { await store.close() }
}

test('data folder: backup and restore keep the locations, every level and the ledger as at the backup; new movements take positions after the replaced catalogue\'s', async (t) => {
  const { dir, dataDir } = await folderWithStock(t)
  const folder: CatalogueLocation = { kind: 'folder', dataDir }
  const expected = await stockAt(folder)
  const expectedTotals = await totals(dataDir)
  assert.deepEqual(expectedTotals, [[1, { onHand: 14, reserved: 2, available: 12 }, 2], [2, { onHand: 3, reserved: 0, available: 3 }, null]])
  const file = join(dir, 'backup.db')
  const backup = await plants(['backup', file, '--data-dir', dataDir])
  assert.equal(backup.code, 0, backup.stderr)
  // The summary says what of the stock it carries: main and greenhouse, Fern at both and Palm at main, three movements.
  assert.match(backup.stdout, /, stock: 2 locations, 3 levels, 3 movements in the ledger, /)

  await moveIn(dataDir, SINCE)
  const since = openSqliteStore({ dataDir, feedRetentionMs: 7 * DAY })
  await since.stock.releaseReservation('checkout-1')
  await since.close()
  assert.notDeepEqual(await stockAt(folder), expected)
  const restore = await plants(['restore', file, '--data-dir', dataDir])
  assert.equal(restore.code, 0, restore.stderr)
  assert.match(restore.stdout, /, stock: 2 locations, 3 levels, 3 movements in the ledger; new ids start after /)
  assert.deepEqual(await stockAt(folder), expected, 'the stock as it was at the backup')
  const main = expected.locations.find((l) => (l as { name: string }).name === 'main') as { created_at: number }
  assert.ok(Number(main.created_at) > Date.parse('2020-01-01'), 'main\'s time (not 1970) comes back with it')
  assert.deepEqual(await totals(dataDir), expectedTotals, 'the plants\' totals and thresholds too')
  assert.equal(expected.reservations.length, 1)
  const db = new Database(join(dataDir, 'catalogue.db'), { readonly: true })
  try {
    assert.equal(db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'stock_movements'").pluck().get(), BEFORE.length + SINCE.length,
      'the next movement is numbered after every one the replaced catalogue handed out')
  } finally {
    db.close()
  }
})

test('PostgreSQL: restore-marks apply keeps a restored database\'s stock and moves its ledger past the replaced one\'s', {
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set'
}, async (t) => {
  const { dir, dataDir } = await folderWithStock(t)
  // The database as the dump held it (the stock of BEFORE), and the one it replaces (a ledger since).
  // A database of its own: apply refuses while a service is connected to the database, and other
  // test files' stores are connected to the shared test database.
  const restored = await freshDatabase()
  t.after(() => restored.drop())
  assert.equal((await plants(['migrate', '--to', restored.url, '--data-dir', dataDir])).code, 0)
  const expected = await stockAt({ kind: 'postgres', databaseUrl: restored.url })
  const later = join(dir, 'later')
  await mkdir(later)
  await copyFile(join(dataDir, 'catalogue.db'), join(later, 'catalogue.db'))
  await moveIn(later, SINCE)
  const replaced = await freshSchema()
  t.after(() => replaced.drop())
  assert.equal((await plants(['migrate', '--to', replaced.url, '--data-dir', later])).code, 0)

  const marks = join(dir, 'marks.json')
  const save = await plants(['restore-marks', 'save', marks, '--database-url', replaced.url])
  assert.equal(save.code, 0, save.stderr)
  const apply = await plants(['restore-marks', 'apply', marks, '--database-url', restored.url])
  assert.equal(apply.code, 0, apply.stderr)
  assert.deepEqual(await stockAt({ kind: 'postgres', databaseUrl: restored.url }), expected)
  const [{ next }] = await adminQuery<{ next: number }>("SELECT nextval(pg_get_serial_sequence('stock_movements', 'seq'))::int AS next", [], restored.url)
  assert.equal(next, BEFORE.length + SINCE.length + 1)
})
