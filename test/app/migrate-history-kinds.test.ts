import assert from 'node:assert/strict'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { HISTORY_KINDS_VERSION, migrate } from '../../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { adminQuery, freshSchema, postgresEngine } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'

// Reverts and restores from the trash have history kinds of their own. Entries written before were
// `updated` and `created`: the migration (SQLite and PostgreSQL 017) makes a restore `restored`
// (a `created` with no changes: a creation always lists its name), also where a restore from a
// backup moved the versions up; a revert cannot be told from an update and stays `updated`.

/** A plant created, changed, reverted, deleted and restored; and one created alone. */
async function writeHistory (store: PlantStore): Promise<{ id: number, other: number }> {
  const app = await buildApp(testConfig({}), { store })
  try {
    const { id } = (await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' } })).json()
    await app.inject({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { name: 'Swiss cheese plant' } })
    assert.equal((await app.inject({ method: 'POST', url: `/v3/plant/${id}/revert`, payload: { version: 1 } })).statusCode, 200)
    await app.inject({ method: 'DELETE', url: `/v3/plant/${id}` })
    assert.equal((await app.inject({ method: 'POST', url: `/v3/trash/${id}/restore` })).statusCode, 200)
    const other = (await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern' } })).json().id
    return { id, other }
  } finally {
    await app.close()
  }
}

async function kindsOf (store: PlantStore, id: number): Promise<Array<[number, string]>> {
  const app = await buildApp(testConfig({}), { store })
  try {
    const res = await app.inject({ method: 'GET', url: `/v3/plant/${id}/history` })
    assert.equal(res.statusCode, 200, res.body)
    return res.json().items.map((e: { version: number, kind: string }) => [e.version, e.kind])
  } finally {
    await app.close()
  }
}

// As the history was written before the kinds: a restore as created (0), a revert as updated (1);
// and then moved up 100 versions, as a restore from a backup does.
const AS_BEFORE = ['UPDATE history SET kind = 0 WHERE kind = 4', 'UPDATE history SET kind = 1 WHERE kind = 3', 'UPDATE history SET version = version + 100', 'UPDATE plants SET version = version + 100']

test('SQLite: history written before reverts and restores had kinds gets them where they can be told', async (t) => {
  const dir = tempDir('plants-history-kinds')
  t.after(dir.remove)
  const first = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  const { id, other } = await writeHistory(first)
  assert.deepEqual(await kindsOf(first, id), [[5, 'restored'], [4, 'deleted'], [3, 'reverted'], [2, 'updated'], [1, 'created']])
  await first.close()

  const db = connect(`${dir.path}/catalogue.db`)
  for (const sql of AS_BEFORE) db.exec(sql)
  // That migration alone runs again: the ones after it are applied already, and stay so.
  const latest = db.pragma('user_version', { simple: true }) as number
  db.pragma(`user_version = ${HISTORY_KINDS_VERSION}`)
  migrate(db, () => {}, HISTORY_KINDS_VERSION + 1)
  db.pragma(`user_version = ${latest}`)
  db.close()
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  t.after(() => store.close())
  assert.deepEqual(await kindsOf(store, id), [[105, 'restored'], [104, 'deleted'], [103, 'updated'], [102, 'updated'], [101, 'created']])
  assert.deepEqual(await kindsOf(store, other), [[101, 'created']])
})

test('PostgreSQL migration 017: history written before reverts and restores had kinds gets them where they can be told', { skip: postgresEngine.skip }, async (t) => {
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const open = async (): Promise<PlantStore> => await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 86_400_000, startWaitMs: 60_000 })
  const first = await open()
  const { id, other } = await writeHistory(first)
  assert.deepEqual(await kindsOf(first, id), [[5, 'restored'], [4, 'deleted'], [3, 'reverted'], [2, 'updated'], [1, 'created']])
  await first.close()

  for (const sql of AS_BEFORE) await adminQuery(sql.replace(/^UPDATE (\w+)/, `UPDATE ${scratch.name}.$1`))
  await adminQuery(`DELETE FROM ${scratch.name}.schema_migrations WHERE version = 17`)
  const store = await open()
  t.after(() => store.close())
  assert.deepEqual(await kindsOf(store, id), [[105, 'restored'], [104, 'deleted'], [103, 'updated'], [102, 'updated'], [101, 'created']])
  assert.deepEqual(await kindsOf(store, other), [[101, 'created']])
})
