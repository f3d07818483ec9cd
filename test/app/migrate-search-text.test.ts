import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { clientConfig } from '../../src/store/postgres/connection.js'
import { loadMigrations, migrate as migratePostgres } from '../../src/store/postgres/migrate.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { migrate as migrateSqlite, SEARCH_TEXT_VERSION } from '../../src/store/sqlite/migrations.js'
import { INDEXED_UP_TO } from '../../src/store/sqlite/search-backlog.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { adminQuery, freshSchema, postgresEngine } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'

// q's second round (accents ignored, short terms at word starts) arrives as a migration (SQLite: the
// search index rebuilt from the name keys; PostgreSQL 007: search columns filled at start-up) on
// catalogues that already hold plants: every plant is found by the new rules, none lost. The
// migration after it (category and tag filters ignoring case: indexes by key) runs on them too.

const nameOf = (i: number): string => `${['Café', 'ZZ plant', 'Ficus, 21 cm pot', 'Fern'][i % 4]} ${i}`
const PLANTS = 60_000

async function checkFound (store: PlantStore, plants: number): Promise<void> {
  const app = await buildApp(testConfig({}), { store })
  try {
    const get = async (url: string): Promise<string[]> => (await app.inject({ method: 'GET', url })).json().items.map((p: { name: string }) => p.name)
    assert.deepEqual(await get('/v3/plant?q=cafe&limit=2'), ['Café 0', 'Café 4'])
    assert.deepEqual(await get('/v3/plant?q=CAF%C3%89&sort=-id&limit=1'), [nameOf(plants - 4)])
    assert.deepEqual(await get('/v3/plant?q=zz&limit=2'), ['ZZ plant 1', 'ZZ plant 5'])
    assert.deepEqual(await get('/v3/plant?q=21%20cm&limit=1'), ['Ficus, 21 cm pot 2'])
    assert.deepEqual(await get('/v3/plant?q=pl&sort=-id&limit=1'), [nameOf(plants - 3)])
    assert.deepEqual(await get('/v3/plant?q=ern%203&limit=2'), ['Fern 3', 'Fern 31'])
    assert.deepEqual(await get('/v3/plant?category=INDOOR&limit=2'), ['Café 0', 'Café 4'])
    assert.deepEqual(await get('/v3/plant?tag=big&limit=2'), ['ZZ plant 1', 'ZZ plant 5'])
  } finally {
    await app.close()
  }
}

describe('migrating a catalogue to the search texts (accents, word starts)', () => {
  test(`SQLite migration ${SEARCH_TEXT_VERSION + 1} on ${PLANTS} plants, some still in the index's backlog: a progress line, every plant found by the new rules`, async (t) => {
    const dir = tempDir('plants-migrate-search-text')
    t.after(dir.remove)
    const db = connect(`${dir.path}/catalogue.db`)
    migrateSqlite(db, () => {}, SEARCH_TEXT_VERSION)
    const insert = db.prepare("INSERT INTO plants (name, name_key, category, tags, status, version, created_at, updated_at) VALUES (?, ?, ?, ?, 'available', 1, 0, 0)")
    const tag = db.prepare("INSERT INTO plant_tags (tag, plant_id) VALUES ('Big', ?)")
    const add = (i: number): number => {
      const id = Number(insert.run(nameOf(i), nameOf(i).toLowerCase(), i % 4 === 0 ? 'Indoor' : null, i % 4 === 1 ? '["Big"]' : '[]').lastInsertRowid)
      if (i % 4 === 1) tag.run(id)
      return id
    }
    db.transaction(() => { for (let i = 0; i < PLANTS - 10; i++) add(i) })()
    db.exec("INSERT INTO plants_fts (plants_fts) VALUES ('rebuild')")
    db.exec('UPDATE meta SET value = 0 WHERE key = \'search_indexed\'')
    // The last ten wait in the backlog: their change rows name what enters the index.
    const change = db.prepare("INSERT INTO changes (kind, plant_id, version, plant, at, index_add) VALUES ('created', ?, 1, '{}', 0, ?)")
    db.transaction(() => {
      for (let i = PLANTS - 10; i < PLANTS; i++) change.run(add(i), nameOf(i).toLowerCase())
    })()
    db.close()
    const lines: string[] = []
    const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000, progress: (line) => lines.push(line) })
    t.after(() => store.close())
    assert.ok(lines.some((l) => l.includes(`search index ${PLANTS} of ${PLANTS} plants`)), lines.join('\n'))
    assert.ok(lines.includes(`migration: indexing categories and tags ignoring case (${PLANTS} plants)`), lines.join('\n'))
    const check = connect(`${dir.path}/catalogue.db`)
    t.after(() => check.close())
    assert.equal(check.prepare(`SELECT count(*) FROM changes WHERE seq > ${INDEXED_UP_TO}`).pluck().get(), 0, 'the backlog went into the new index')
    check.exec("INSERT INTO plants_fts (plants_fts, rank) VALUES ('integrity-check', 1)")
    await checkFound(store, PLANTS)
  })

  test('PostgreSQL migration 007: plants written before it are found by the new rules once the store has filled their search columns', { skip: postgresEngine.skip }, async (t) => {
    const scratch = await freshSchema()
    t.after(() => scratch.drop())
    const migrations = loadMigrations()
    await migratePostgres(clientConfig(scratch.url, { operationMs: 60_000, connectMs: 5_000 }), migrations.filter((m) => m.version < 7))
    await adminQuery(`INSERT INTO ${scratch.name}.plants (id, name, name_key, category, tags, status, version, created_at, updated_at) OVERRIDING SYSTEM VALUE
      SELECT i, n, lower(n), CASE WHEN i % 4 = 1 THEN 'Indoor' END, CASE WHEN i % 4 = 2 THEN '{Big}'::text[] ELSE '{}' END, 'available', 1, 0, 0
      FROM unnest($1::text[]) WITH ORDINALITY AS v (n, i)`, [Array.from({ length: 40 }, (_, i) => nameOf(i))])
    await adminQuery(`INSERT INTO ${scratch.name}.plant_tags (tag, plant_id) SELECT 'Big', id FROM ${scratch.name}.plants WHERE tags = '{Big}'`)
    const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 86_400_000, startWaitMs: 60_000 })
    t.after(() => store.close())
    const [{ n }] = await adminQuery(`SELECT count(*)::int AS n FROM ${scratch.name}.plants WHERE search_key IS NULL OR search_starts IS NULL`)
    assert.equal(n, 0)
    await checkFound(store, 40)
  })
})
