import assert from 'node:assert/strict'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import Database from 'better-sqlite3'
import type { StockLevelRow } from '../../src/store/admin-store.js'
import { verifyBackup } from '../../src/store/sqlite/backup.js'
import { MAIN_LEVEL_VERSION, migrate } from '../../src/store/sqlite/migrations.js'
import { SqliteSnapshot } from '../../src/store/sqlite/snapshot.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import { build, type TestApp } from '../helpers/app.js'
import type { Engine } from '../helpers/engines.js'
import { tempDir } from '../helpers/process.js'

// SQLite keeps a live plant's level at main on its own row (main_on_hand, main_reserved: migration
// 33), so a sale at main reads and writes only the plant's row; stock_levels keeps the other
// locations' levels and a trashed plant's main level. Every reader sees the levels as before.

const DAY = 86_400_000

/** A service on a catalogue file in a folder of its own (the test reads the file beside it). */
async function onFile (t: TestContext): Promise<{ api: TestApp, file: string, dir: string }> {
  const dir = tempDir('plants-main-level')
  t.after(dir.remove)
  const engine: Engine = { name: 'sqlite', skip: false, open: async () => openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY }) }
  return { api: await build(t, engine), file: join(dir.path, 'catalogue.db'), dir: dir.path }
}

const move = async (api: TestApp, id: number, body: object, headers: Record<string, string> = {}): Promise<void> => {
  const res = await api.request({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload: body, headers })
  assert.equal(res.statusCode, 201, res.body)
}
const reserve = async (api: TestApp, lines: object[]): Promise<string> => {
  const res = await api.request({ method: 'POST', url: '/v3/reservations', payload: { lines, ttlSeconds: 900 } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().id
}
const levels = async (api: TestApp, id: number): Promise<unknown> => await api.app.store.stock.levels(id)

/** The rows stock_levels itself holds, read beside the service. */
function levelRows (file: string): Array<[number, string, number, number]> {
  const db = new Database(file, { readonly: true })
  try {
    return db.prepare('SELECT plant_id, location, on_hand, reserved FROM stock_levels ORDER BY plant_id, location').raw(true).all() as Array<[number, string, number, number]>
  } finally {
    db.close()
  }
}

test('SQLite: a sale, a hold and a commit at main write no stock_levels row; the levels read as before; the trash keeps main\'s level in stock_levels and a restore brings it back', async (t) => {
  const { api, file } = await onFile(t)
  assert.equal((await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'shop' } })).statusCode, 201)
  const fern = (await api.add({ name: 'Fern' })).id as number
  await move(api, fern, { delta: 10, reason: 'received' })
  await move(api, fern, { delta: 3, reason: 'received', location: 'shop' })
  await move(api, fern, { delta: -1, reason: 'sale' }, { 'idempotency-key': 'till-1' })
  const held = await reserve(api, [{ plant: fern, quantity: 2 }, { plant: fern, quantity: 1, location: 'shop' }])
  assert.equal((await api.request({ method: 'POST', url: `/v3/reservations/${held}/commit` })).statusCode, 200)
  await reserve(api, [{ plant: fern, quantity: 3 }])
  assert.deepEqual(levelRows(file), [[fern, 'shop', 2, 0]], 'main\'s level is on the plant\'s row')
  const expected = [{ location: 'main', onHand: 7, reserved: 3, available: 4 }, { location: 'shop', onHand: 2, reserved: 0, available: 2 }]
  assert.deepEqual(await levels(api, fern), expected)
  assert.deepEqual((await api.request({ method: 'GET', url: `/v3/plant/${fern}/stock` })).json().items, expected)

  // A plant that has only counted main's level (a count of 0 at no level makes one): main's level is there, at 0.
  const palm = (await api.add({ name: 'Palm' })).id as number
  await move(api, palm, { set: 0, reason: 'count' })
  assert.deepEqual(await levels(api, palm), [{ location: 'main', onHand: 0, reserved: 0, available: 0 }])

  // Trashed: main's level goes to stock_levels with the plant; a hold let go meanwhile is let go there.
  const ivy = (await api.add({ name: 'Ivy' })).id as number
  await move(api, ivy, { delta: 5, reason: 'received' })
  const ivyHold = await reserve(api, [{ plant: ivy, quantity: 2 }])
  assert.equal((await api.request({ method: 'DELETE', url: `/v3/plant/${ivy}` })).statusCode, 204)
  assert.deepEqual(levelRows(file).filter(([id]) => id === ivy), [[ivy, 'main', 5, 2]])
  assert.equal((await api.request({ method: 'DELETE', url: `/v3/reservations/${ivyHold}` })).statusCode, 204)
  assert.deepEqual(await levels(api, ivy), [{ location: 'main', onHand: 5, reserved: 0, available: 5 }], 'a trashed plant\'s levels')
  assert.equal((await api.request({ method: 'POST', url: `/v3/trash/${ivy}/restore` })).statusCode, 200)
  assert.deepEqual(levelRows(file).filter(([id]) => id === ivy), [], 'restored: main\'s level is on the row again')
  assert.deepEqual(await levels(api, ivy), [{ location: 'main', onHand: 5, reserved: 0, available: 5 }])
  await move(api, ivy, { delta: -1, reason: 'sale' })
  assert.deepEqual(await levels(api, ivy), [{ location: 'main', onHand: 4, reserved: 0, available: 4 }])

  // Untracked: no level anywhere.
  await move(api, palm, { delta: 2, reason: 'received', location: 'shop' })
  await move(api, palm, { delta: -2, reason: 'damaged', location: 'shop' })
  assert.equal((await api.request({ method: 'DELETE', url: `/v3/plant/${palm}/stock` })).statusCode, 200)
  assert.deepEqual(await levels(api, palm), [])
  await move(api, palm, { delta: 1, reason: 'received' })
  assert.deepEqual(await levels(api, palm), [{ location: 'main', onHand: 1, reserved: 0, available: 1 }], 'tracked again from nothing')
})

test(`SQLite migration ${MAIN_LEVEL_VERSION + 1}: main's levels move onto the live plants' rows, a trashed plant's stay in stock_levels; every reader sees the same levels, and a restore brings main's back`, async (t) => {
  const { api, file, dir } = await onFile(t)
  assert.equal((await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'shop' } })).statusCode, 201)
  const add = async (name: string): Promise<number> => (await api.add({ name })).id as number
  const [fern, palm, ivy, moss] = [await add('Fern'), await add('Palm'), await add('Ivy'), await add('Moss')]
  await move(api, fern, { delta: 10, reason: 'received' })
  await move(api, fern, { delta: 4, reason: 'received', location: 'shop' })
  await reserve(api, [{ plant: fern, quantity: 3 }])
  await move(api, palm, { delta: 2, reason: 'received', location: 'shop' })
  await move(api, ivy, { delta: 6, reason: 'received' })
  await move(api, ivy, { delta: 1, reason: 'received', location: 'shop' })
  assert.equal((await api.request({ method: 'DELETE', url: `/v3/plant/${ivy}` })).statusCode, 204)
  const ids = [fern, palm, ivy, moss]
  const read = async (): Promise<unknown[]> => await Promise.all(ids.map(async (id) => await api.app.store.stock.levels(id)))
  const before = await read()
  await api.app.close()
  await api.app.store.close()

  // The catalogue as the version before left it: every main level in stock_levels, no columns on the row.
  const db = connect(file)
  db.exec(`
    INSERT INTO stock_levels (plant_id, location, on_hand, reserved) SELECT id, 'main', main_on_hand, main_reserved FROM plants WHERE main_on_hand IS NOT NULL;
    ALTER TABLE plants DROP COLUMN main_on_hand;
    ALTER TABLE plants DROP COLUMN main_reserved;
  `)
  db.pragma(`user_version = ${MAIN_LEVEL_VERSION}`)
  const older = new Database(':memory:')
  migrate(older, () => {}, MAIN_LEVEL_VERSION)
  const columns = (d: Database.Database): unknown[] => d.prepare("SELECT name FROM pragma_table_info('plants') ORDER BY cid").pluck().all()
  assert.deepEqual(columns(db), columns(older), 'the plants table as the version before made it')
  older.close()
  db.close()
  const oldRows = levelRows(file)
  assert.deepEqual(oldRows, [[fern, 'main', 10, 3], [fern, 'shop', 4, 0], [palm, 'shop', 2, 0], [ivy, 'main', 6, 0], [ivy, 'shop', 1, 0]])

  /** What the snapshot (plants migrate, its verify) and a backup's check read of the levels. */
  const readers = async (): Promise<{ rows: StockLevelRow[], some: StockLevelRow[], counted: number }> => {
    const snapshot = new SqliteSnapshot(file)
    try {
      const rows: StockLevelRow[] = []
      for await (const page of snapshot.rows('stockLevels', 2)) rows.push(...page)
      return { rows, some: await snapshot.levels([ivy, fern]), counted: verifyBackup(file).stock.levels }
    } finally {
      await snapshot.close()
    }
  }
  const asRows = oldRows.map(([plantId, location, onHand, reserved]) => ({ plant_id: plantId, location, on_hand: onHand, reserved }))
  const expected = { rows: asRows, some: asRows.filter((r) => r.plant_id === fern || r.plant_id === ivy), counted: 5 }
  assert.deepEqual(await readers(), expected, 'a catalogue of the version before, read as it is')

  const store = openSqliteStore({ dataDir: dir, feedRetentionMs: DAY })
  await store.close()
  assert.deepEqual(levelRows(file), [[fern, 'shop', 4, 0], [palm, 'shop', 2, 0], [ivy, 'main', 6, 0], [ivy, 'shop', 1, 0]], 'the live plants\' main levels left stock_levels')
  assert.deepEqual(await readers(), expected, 'migrated: the same rows, in the same order')

  const engine: Engine = { name: 'sqlite', skip: false, open: async () => openSqliteStore({ dataDir: dir, feedRetentionMs: DAY }) }
  const again = await build(t, engine)
  assert.deepEqual(await Promise.all(ids.map(async (id) => await again.app.store.stock.levels(id))), before)
  assert.equal((await again.request({ method: 'POST', url: `/v3/trash/${ivy}/restore` })).statusCode, 200)
  assert.deepEqual(await levels(again, ivy), before[2], 'restored with its main level')
  await move(again, ivy, { delta: -1, reason: 'sale' })
  await move(again, fern, { delta: -1, reason: 'sale' })
  assert.deepEqual(await levels(again, ivy), [{ location: 'main', onHand: 5, reserved: 0, available: 5 }, { location: 'shop', onHand: 1, reserved: 0, available: 1 }])
  assert.deepEqual(await levels(again, fern), [{ location: 'main', onHand: 9, reserved: 3, available: 6 }, { location: 'shop', onHand: 4, reserved: 0, available: 4 }])
  assert.deepEqual(levelRows(file), [[fern, 'shop', 4, 0], [palm, 'shop', 2, 0], [ivy, 'shop', 1, 0]])
})
