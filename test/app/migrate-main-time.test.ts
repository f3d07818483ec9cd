import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { MAIN_TIME_VERSION, migrate } from '../../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { adminQuery, freshSchema, postgresEngine } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'

// The location main was made by the stock's migration with created_at 0 (listed as 1970). A new
// catalogue's main is as old as the catalogue; an existing one's gets the time the stock part was
// set up (PostgreSQL: migration 018's time; SQLite, which keeps none: this migration's), or an
// earlier record of stock (a movement), on both engines (SQLite 28, PostgreSQL 022).

const SET_UP = Date.parse('2026-03-01T10:00:00.000Z')
const MOVED = Date.parse('2026-04-02T08:30:00.000Z')

async function mainOf (store: PlantStore): Promise<string> {
  return (await store.stock.locations()).find((l) => l.name === 'main')!.createdAt
}

/** A plant with one movement, through the API. */
async function moveOne (store: PlantStore): Promise<void> {
  const app = await buildApp(testConfig({}), { store })
  try {
    const { id } = (await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern' } })).json()
    assert.equal((await app.inject({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload: { delta: 3, reason: 'received' } })).statusCode, 201)
  } finally {
    await app.close()
  }
}

test('SQLite: a new catalogue\'s main is as old as it is; one made before (main at 0) gets the earliest stock record, or the migration\'s time', async (t) => {
  const dir = tempDir('plants-main-time')
  t.after(dir.remove)
  const before = Date.now()
  const first = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  const made = Date.parse(await mainOf(first))
  assert.ok(made >= before && made <= Date.now(), `main made at ${new Date(made).toISOString()}, not 1970`)
  await moveOne(first)
  await first.close()

  const rerun = (sql: string[]): void => {
    const db = connect(`${dir.path}/catalogue.db`)
    for (const s of sql) db.exec(s)
    const latest = db.pragma('user_version', { simple: true }) as number
    db.pragma(`user_version = ${MAIN_TIME_VERSION}`)
    migrate(db, () => {}, MAIN_TIME_VERSION + 1)
    db.pragma(`user_version = ${latest}`)
    db.close()
  }
  // As made before: main at 0, the ledger's movement at MOVED.
  rerun(["UPDATE locations SET created_at = 0 WHERE name = 'main'", `UPDATE stock_movements SET at = ${MOVED}`])
  let store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  assert.equal(await mainOf(store), new Date(MOVED).toISOString())
  await store.close()
  // No record of stock at all: the migration's time.
  const rerunAt = Date.now()
  rerun(["UPDATE locations SET created_at = 0 WHERE name = 'main'", 'DELETE FROM stock_movements'])
  store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  t.after(() => store.close())
  const at = Date.parse(await mainOf(store))
  assert.ok(at >= rerunAt && at <= Date.now())
})

test('PostgreSQL migration 022: a new catalogue\'s main is as old as it is; one made before (main at 0) gets migration 018\'s time, or an earlier movement\'s', { skip: postgresEngine.skip }, async (t) => {
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const open = async (): Promise<PlantStore> => await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 86_400_000, startWaitMs: 60_000 })
  const before = Date.now()
  const first = await open()
  const made = Date.parse(await mainOf(first))
  assert.ok(made >= before - 60_000 && made <= Date.now(), `main made at ${new Date(made).toISOString()}, not 1970`)
  await moveOne(first)
  await first.close()

  const rerun = async (sql: string[]): Promise<PlantStore> => {
    for (const s of sql) await adminQuery(s)
    await adminQuery(`DELETE FROM ${scratch.name}.schema_migrations WHERE version = 22`)
    return await open()
  }
  const asBefore = [`UPDATE ${scratch.name}.locations SET created_at = 0 WHERE name = 'main'`,
    `UPDATE ${scratch.name}.schema_migrations SET applied_at = to_timestamp(${SET_UP / 1000}) WHERE version = 18`]
  let store = await rerun([...asBefore, `UPDATE ${scratch.name}.stock_movements SET at = ${MOVED}`])
  assert.equal(await mainOf(store), new Date(SET_UP).toISOString(), 'the stock part\'s set-up, before the movement')
  await store.close()
  store = await rerun([...asBefore, `UPDATE ${scratch.name}.stock_movements SET at = ${SET_UP - 86_400_000}`])
  t.after(() => store.close())
  assert.equal(await mainOf(store), new Date(SET_UP - 86_400_000).toISOString(), 'a movement recorded before it (a clock set back) wins')
})
