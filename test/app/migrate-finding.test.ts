import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { clientConfig } from '../../src/store/postgres/connection.js'
import { loadMigrations, migrate as migratePostgres } from '../../src/store/postgres/migrate.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { migrate as migrateSqlite } from '../../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import { adminQuery, freshDatabase, freshSchema, postgresEngine } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'
import type { PlantStore } from '../../src/store/plant-store.js'

// Finding plants arrives as a migration (SQLite 5, PostgreSQL 002) on catalogues that already hold
// plants: every plant must stay, and the new keys, counts and indexes must cover the old plants too.

const PLANTS = 60_000
const STATUSES = ['available', 'pending', 'sold']
// Names whose lower case JavaScript and SQL disagree on, or that are longer lower-cased.
const nameOf = (i: number): string => `${['İstanbul', 'STRASSE', 'Ǆungla', 'Fern'][i % 4]} ${i}`

async function checkFound (store: PlantStore): Promise<void> {
  const app = await buildApp(testConfig({}), { store })
  try {
    const get = async (url: string): Promise<any> => (await app.inject({ method: 'GET', url })).json()
    let listed = 0
    let cursor = ''
    for (;;) {
      const page = await get(`/v3/plant?limit=500${cursor}`)
      listed += page.items.length
      if (page.nextCursor === null) break
      cursor = `&cursor=${page.nextCursor}`
    }
    assert.equal(listed, PLANTS, 'every plant is still there')
    assert.deepEqual(await get('/v3/store/inventory'), { available: PLANTS / 3, pending: PLANTS / 3, sold: PLANTS / 3, units: { onHand: 0, reserved: 0, available: 0 } })
    // The keys are JavaScript's lower case: "i̇stanbul" (İ lower-cases to i + U+0307).
    assert.deepEqual((await get('/v3/plant?q=i%CC%87stan%20120&limit=2')).items.map((p: { name: string }) => p.name), ['İstanbul 120', 'İstanbul 1120'])
    assert.deepEqual((await get('/v3/plant?q=%C7%86ung%20ungla%2059998')).items.map((p: { name: string }) => p.name), ['Ǆungla 59998'])
    // As people read them (catalogue/name-order.ts): "Ǆ" folds to "dz", so it comes first; numbers by value.
    assert.deepEqual((await get('/v3/plant?sort=name&limit=2')).items.map((p: { name: string }) => p.name), ['Ǆungla 2', 'Ǆungla 6'])
    assert.deepEqual((await get('/v3/plant?sort=-name&limit=1')).items.map((p: { name: string }) => p.name), ['STRASSE 59997'])
  } finally {
    await app.close()
  }
}

describe('migrating a catalogue that holds plants', () => {
  test(`SQLite migration 5 on a file of ${PLANTS} plants: a progress line, no plant lost, keys and counts for all`, async (t) => {
    const dir = tempDir('plants-migrate-5')
    t.after(dir.remove)
    const db = connect(`${dir.path}/catalogue.db`)
    migrateSqlite(db, () => {}, 4)
    const insert = db.prepare("INSERT INTO plants (name, category, tags, status, version, created_at, updated_at) VALUES (?, NULL, '[]', ?, 1, 0, 0)")
    db.transaction(() => { for (let i = 0; i < PLANTS; i++) insert.run(nameOf(i), STATUSES[i % 3]) })()
    db.close()
    const lines: string[] = []
    const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000, progress: (line) => lines.push(line) })
    t.after(() => store.close())
    assert.ok(lines.some((l) => l.startsWith(`migration 5: name keys ${PLANTS} of ${PLANTS}`)), lines.join('\n'))
    await checkFound(store)
  })

  test(`PostgreSQL migration 002 on a schema of ${PLANTS} plants: keys filled at start-up, counts for all`, { skip: postgresEngine.skip }, async (t) => {
    const scratch = await freshSchema()
    t.after(() => scratch.drop())
    const migrations = loadMigrations()
    await migratePostgres(clientConfig(scratch.url, { operationMs: 60_000, connectMs: 5_000 }), migrations.filter((m) => m.version < 2))
    await adminQuery(`INSERT INTO ${scratch.name}.plants (name, category, tags, status, version, created_at, updated_at)
      SELECT (ARRAY['İstanbul', 'STRASSE', 'Ǆungla', 'Fern'])[i % 4 + 1] || ' ' || i, NULL, '{}', (ARRAY['available', 'pending', 'sold'])[i % 3 + 1], 1, 0, 0
      FROM generate_series(0, ${PLANTS - 1}) AS i ORDER BY i`)
    const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 86_400_000, startWaitMs: 60_000 })
    t.after(() => store.close())
    const [{ missing }] = await adminQuery(`SELECT count(*)::int AS missing FROM ${scratch.name}.plants WHERE name_key IS NULL`)
    assert.equal(missing, 0)
    await checkFound(store)
  })

  test('PostgreSQL: a role that may not create pg_trgm stops start-up with one line saying what to install or grant', { skip: postgresEngine.skip }, async (t) => {
    const db = await freshDatabase()
    const role = `r_${db.name}`
    t.after(async () => {
      await db.drop()
      await adminQuery(`DROP ROLE IF EXISTS ${role}`)
    })
    // It may use the schema (migration 001 runs) but not create extensions in the database.
    await adminQuery(`CREATE ROLE ${role} LOGIN`)
    await adminQuery(`GRANT CREATE, USAGE ON SCHEMA public TO ${role}`, [], db.url)
    const url = new URL(db.url)
    url.username = role
    await assert.rejects(openPostgresStore({ connectionString: url.toString(), feedRetentionMs: 86_400_000 }), (err: Error) => {
      assert.match(err.message, /^PostgreSQL refused to create the extension pg_trgm .*CREATE EXTENSION pg_trgm/)
      assert.doesNotMatch(err.message, /\n/)
      return true
    })
  })
})
