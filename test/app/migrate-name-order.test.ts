import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { searchText } from '../../src/catalogue/search-key.js'
import { clientConfig } from '../../src/store/postgres/connection.js'
import { loadMigrations, migrate as migratePostgres } from '../../src/store/postgres/migrate.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { migrate as migrateSqlite, NAME_ORDER_VERSION } from '../../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { adminQuery, freshSchema, postgresEngine } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'

// sort=name's new order (accents and case folded, numbers by value) arrives as a migration on
// catalogues that already hold plants: each gets its order key (SQLite: in the migration; PostgreSQL
// 014: filled at start-up), so the plants written before order as new ones do, and q still finds them.

const NAMES = ['Pot 14 cm', 'Bégonia rex', 'Pot 6 cm', 'begonia maculata', 'Éucalyptus', 'Calathea', 'Pot 007 cm', 'Pot 7 cm']
const ORDERED = ['begonia maculata', 'Bégonia rex', 'Calathea', 'Éucalyptus', 'Pot 6 cm', 'Pot 7 cm', 'Pot 007 cm', 'Pot 14 cm']
const nameOf = (i: number): string => NAMES[i % NAMES.length]

async function checkOrdered (store: PlantStore): Promise<void> {
  const app = await buildApp(testConfig({}), { store })
  try {
    const get = async (url: string): Promise<{ names: string[], next: string | null }> => {
      const res = await app.inject({ method: 'GET', url })
      assert.equal(res.statusCode, 200, res.body)
      return { names: res.json().items.map((p: { name: string }) => p.name), next: res.json().nextCursor }
    }
    const first = await get('/v3/plant?sort=name&limit=5')
    assert.deepEqual(first.names, ORDERED.slice(0, 5))
    assert.deepEqual((await get(`/v3/plant?sort=name&limit=3&cursor=${first.next!}`)).names, ORDERED.slice(5))
    assert.deepEqual((await get('/v3/plant?sort=-name&limit=2')).names, ['Pot 14 cm', 'Pot 007 cm'])
    assert.deepEqual((await get('/v3/plant?sort=name&q=begonia')).names, ['begonia maculata', 'Bégonia rex'])
    // A plant written after the migration takes its place among them.
    const res = await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Pot 10 cm' } })
    assert.equal(res.statusCode, 200)
    assert.deepEqual((await get('/v3/plant?sort=name&q=pot')).names, ['Pot 6 cm', 'Pot 7 cm', 'Pot 007 cm', 'Pot 10 cm', 'Pot 14 cm'])
  } finally {
    await app.close()
  }
}

describe('migrating a catalogue to the name order (accents and case folded, numbers by value)', () => {
  test(`SQLite migration ${NAME_ORDER_VERSION + 1}: every plant gets its order key, the name index follows it`, async (t) => {
    const dir = tempDir('plants-migrate-name-order')
    t.after(dir.remove)
    const db = connect(`${dir.path}/catalogue.db`)
    migrateSqlite(db, () => {}, NAME_ORDER_VERSION)
    const insert = db.prepare("INSERT INTO plants (name, name_key, tags, status, version, created_at, updated_at) VALUES (?, ?, '[]', 'available', 1, 0, 0)")
    const indexed = db.prepare('INSERT INTO plants_fts (rowid, search) VALUES (?, ?)')
    db.transaction(() => {
      for (let i = 0; i < NAMES.length; i++) indexed.run(insert.run(nameOf(i), nameOf(i).toLowerCase()).lastInsertRowid, searchText(nameOf(i).toLowerCase()))
    })()
    db.close()
    const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
    t.after(() => store.close())
    const check = connect(`${dir.path}/catalogue.db`)
    t.after(() => check.close())
    const columns = check.prepare("SELECT name FROM pragma_index_info('plants_name')").pluck().all()
    assert.deepEqual(columns, ['name_order_key', 'id'])
    await checkOrdered(store)
  })

  test(`SQLite migration ${NAME_ORDER_VERSION + 1} on 50,001 plants says how far it got`, async (t) => {
    const dir = tempDir('plants-migrate-name-order-large')
    t.after(dir.remove)
    const db = connect(`${dir.path}/catalogue.db`)
    migrateSqlite(db, () => {}, NAME_ORDER_VERSION)
    const insert = db.prepare("INSERT INTO plants (name, name_key, tags, status, version, created_at, updated_at) VALUES (?, ?, '[]', 'available', 1, 0, 0)")
    db.transaction(() => { for (let i = 0; i < 50_001; i++) insert.run(`Pot ${i}`, `pot ${i}`) })()
    const lines: string[] = []
    migrateSqlite(db, (line) => lines.push(line))
    assert.ok(lines.includes(`migration ${NAME_ORDER_VERSION + 1}: name order keys 50001 of 50001 plants`), lines.join('\n'))
    assert.ok(lines.includes(`migration ${NAME_ORDER_VERSION + 1}: indexing names for sort=name`), lines.join('\n'))
    assert.equal(db.prepare("SELECT count(*) FROM plants WHERE name_order_key = ''").pluck().get(), 0)
    assert.deepEqual(db.prepare('SELECT name FROM plants INDEXED BY plants_name ORDER BY name_order_key DESC, id DESC LIMIT 2').pluck().all(), ['Pot 50000', 'Pot 49999'])
    db.close()
  })

  test('PostgreSQL migration 014: plants written before it order by the new key once the store has filled it', { skip: postgresEngine.skip }, async (t) => {
    const scratch = await freshSchema()
    t.after(() => scratch.drop())
    await migratePostgres(clientConfig(scratch.url, { operationMs: 60_000, connectMs: 5_000 }), loadMigrations().filter((m) => m.version < 14))
    await adminQuery(`INSERT INTO ${scratch.name}.plants (id, name, name_key, tags, status, version, created_at, updated_at) OVERRIDING SYSTEM VALUE
      SELECT i, n, lower(n), '{}', 'available', 1, 0, 0 FROM unnest($1::text[]) WITH ORDINALITY AS v (n, i)`, [NAMES])
    await adminQuery(`SELECT setval(pg_get_serial_sequence('${scratch.name}.plants', 'id'), $1)`, [NAMES.length])
    const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 86_400_000, startWaitMs: 60_000 })
    t.after(() => store.close())
    const [{ n }] = await adminQuery(`SELECT count(*)::int AS n FROM ${scratch.name}.plants WHERE name_order_key IS NULL`)
    assert.equal(n, 0)
    await checkOrdered(store)
  })
})
