import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { clientConfig } from '../../src/store/postgres/connection.js'
import { loadMigrations, migrate as migratePostgres } from '../../src/store/postgres/migrate.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { migrate as migrateSqlite, STORE_FIELDS_VERSION } from '../../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { wholeFile } from '../helpers/photo-files.js'
import { adminQuery, freshSchema, postgresEngine } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'

// The store fields arrive as a migration (SQLite STORE_FIELDS_VERSION, PostgreSQL 004) on catalogues
// made by the release before: every plant and photo stays, the new members are null, the times are
// the ones the rows held, and records already in the feed or kept for an Idempotency-Key gain the members.

const CREATED = Date.parse('2025-03-04T05:06:07.089Z')
const UPDATED = Date.parse('2025-06-07T08:09:10.011Z')
const FILE = randomBytes(3000)
const FILE_NAME = `${createHash('sha256').update(FILE).digest('base64url')}.png`
const PHOTO = { id: 'AAAAAAAAAAAAAAAA', width: 1, height: 1, urls: { thumb: `/v3/photos/${FILE_NAME}`, display: `/v3/photos/${FILE_NAME}`, full: `/v3/photos/${FILE_NAME}` } }
const KEY = 'migrated-key'
const SEED_RECORD = { id: 1, name: 'Monstera', category: 'indoor', tags: ['large'], status: 'available', photos: [PHOTO] }
// What POST /v3/plant hashed for an Idempotency-Key before (the seed's four fields).
const REQUEST_HASH = createHash('sha256').update(JSON.stringify(['Monstera', 'indoor', ['large'], 'available'])).digest('base64url')

async function checkMigrated (store: PlantStore): Promise<void> {
  const app = await buildApp(testConfig({}), { store })
  try {
    const get = async (url: string): Promise<any> => (await app.inject({ method: 'GET', url })).json()
    const expected = {
      ...SEED_RECORD, description: null, price: null, sku: null, barcode: null, stock: null, lowStockAt: null, createdAt: new Date(CREATED).toISOString(), updatedAt: new Date(UPDATED).toISOString(), version: 2
    }
    assert.deepEqual(await get('/v3/plant/1'), expected)
    assert.deepEqual((await get('/v3/plant')).items, [expected])
    assert.deepEqual(await wholeFile(store, FILE_NAME), FILE, 'the photo file is served as before')
    const { items } = await store.changes(0, 10)
    assert.deepEqual(items.map((c) => c.plant), [{ ...expected, updatedAt: new Date(CREATED).toISOString(), version: 1 }], 'the feed\'s record gained the members')
    const replay = await app.inject({ method: 'POST', url: '/v3/plant', headers: { 'idempotency-key': KEY }, payload: { name: 'Monstera', category: 'indoor', tags: ['large'] } })
    assert.equal(replay.statusCode, 200, replay.body)
    assert.deepEqual(replay.json(), expected, 'a replay answers the record in its new shape')
    // The new columns and indexes work on the migrated plant.
    const patched = await app.inject({ method: 'PATCH', url: '/v3/plant/1', payload: { price: '19.9', sku: 'MON-1', barcode: '96385074' } })
    assert.equal(patched.statusCode, 200, patched.body)
    assert.deepEqual(patched.json().photos, [PHOTO])
    assert.deepEqual((await get('/v3/plant?sku=mon-1')).items.map((p: { id: number }) => p.id), [1])
    assert.deepEqual((await get('/v3/plant?sort=-price&priceMin=19.90')).items.map((p: { id: number }) => p.id), [1])
  } finally {
    await app.close()
  }
}

describe('migrating a catalogue to the store fields', () => {
  test(`SQLite migration ${STORE_FIELDS_VERSION}: plants and photos kept, times kept, feed and keys in the new shape`, async (t) => {
    const dir = tempDir('plants-migrate-store-fields')
    t.after(dir.remove)
    const db = connect(`${dir.path}/catalogue.db`)
    migrateSqlite(db, () => {}, STORE_FIELDS_VERSION - 1)
    db.prepare("INSERT INTO plants (name, name_key, category, tags, status, version, created_at, updated_at, photos) VALUES ('Monstera', 'monstera', 'indoor', '[\"large\"]', 'available', 2, ?, ?, ?)")
      .run(CREATED, UPDATED, JSON.stringify([PHOTO]))
    db.prepare("INSERT INTO plant_tags (tag, plant_id) VALUES ('large', 1)").run()
    db.prepare('INSERT INTO photo_files (name, refs, size) VALUES (?, 3, ?)').run(FILE_NAME, FILE.length)
    db.prepare('INSERT INTO photo_file_chunks (name, n, bytes) VALUES (?, 0, ?)').run(FILE_NAME, FILE)
    db.prepare("INSERT INTO changes (kind, plant_id, version, plant, at) VALUES ('created', 1, 1, ?, ?)").run(JSON.stringify(SEED_RECORD), CREATED)
    db.prepare('INSERT INTO idempotency_keys (key, request_hash, plant_id, response, created_at) VALUES (?, ?, 1, ?, ?)')
      .run(KEY, REQUEST_HASH, JSON.stringify({ ...SEED_RECORD, version: 2 }), Date.now())
    db.prepare("UPDATE sqlite_sequence SET seq = 1 WHERE name = 'status:available'").run()
    db.close()

    const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 1000 * 86_400_000 })
    t.after(() => store.close())
    assert.ok(await store.schemaVersion() >= STORE_FIELDS_VERSION)
    await checkMigrated(store)
  })

  test(`SQLite migration ${STORE_FIELDS_VERSION} on 60,000 plants says how far it got`, async (t) => {
    const dir = tempDir('plants-migrate-store-fields-large')
    t.after(dir.remove)
    const db = connect(`${dir.path}/catalogue.db`)
    migrateSqlite(db, () => {}, STORE_FIELDS_VERSION - 1)
    const insert = db.prepare("INSERT INTO plants (name, name_key, tags, status, version, created_at, updated_at) VALUES (?, ?, '[]', 'available', 1, ?, ?)")
    db.transaction(() => { for (let i = 0; i < 60_000; i++) insert.run(`Fern ${i}`, `fern ${i}`, CREATED + i, CREATED + i) })()
    db.close()
    const lines: string[] = []
    const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000, progress: (line) => lines.push(line) })
    t.after(() => store.close())
    assert.ok(lines.some((l) => l.startsWith(`migration ${STORE_FIELDS_VERSION}: indexing`) && l.includes('60000 plants')), lines.join('\n'))
    assert.equal((await store.list({ afterId: 0, limit: 100_000 })).length, 60_000)
    const newest = await store.list({ afterId: 0, limit: 1, sort: '-updated' })
    assert.equal(newest[0].updatedAt, new Date(CREATED + 59_999).toISOString())
  })

  test('PostgreSQL migration 004 on 60,000 plants says when it starts and ends', { skip: postgresEngine.skip }, async (t) => {
    const scratch = await freshSchema()
    t.after(() => scratch.drop())
    const config = clientConfig(scratch.url, { operationMs: 60_000, connectMs: 5_000 })
    const migrations = loadMigrations()
    await migratePostgres(config, migrations.filter((m) => m.version < 4))
    await adminQuery(`INSERT INTO ${scratch.name}.plants (name, name_key, tags, status, version, created_at, updated_at)
      SELECT 'Fern ' || i, 'fern ' || i, '{}', 'available', 1, ${CREATED} + i, ${CREATED} + i FROM generate_series(0, 59999) AS i`)
    const lines: string[] = []
    await migratePostgres(config, migrations.filter((m) => m.version === 4), (line) => lines.push(line))
    assert.deepEqual(lines.map((l) => l.replace(/[\d.]+ s$/, 'N s')), ['migration 004_store_fields.sql: applying on 60000 plants', 'migration 004_store_fields.sql: done in N s'])
    const [{ n }] = await adminQuery(`SELECT count(*)::int AS n FROM ${scratch.name}.plants WHERE price IS NULL AND sku IS NULL`)
    assert.equal(n, 60_000)
  })

  test('PostgreSQL migration 004: plants and photos kept, times kept, feed and keys in the new shape', { skip: postgresEngine.skip }, async (t) => {
    const scratch = await freshSchema()
    t.after(() => scratch.drop())
    const before = loadMigrations().filter((m) => m.version < 4)
    await migratePostgres(clientConfig(scratch.url, { operationMs: 60_000, connectMs: 5_000 }), before)
    const s = scratch.name
    await adminQuery(`INSERT INTO ${s}.plants (name, name_key, category, tags, status, version, created_at, updated_at, photos)
      VALUES ('Monstera', 'monstera', 'indoor', '{large}', 'available', 2, $1, $2, $3)`, [CREATED, UPDATED, JSON.stringify([PHOTO])])
    await adminQuery(`INSERT INTO ${s}.plant_tags (tag, plant_id) VALUES ('large', 1)`)
    const columns = (await adminQuery('SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = \'photo_files\'', [s])).map((r) => r.column_name)
    // The photo files as the release before stored them (whole, or in chunks if a later photo migration came first).
    if (columns.includes('bytes')) await adminQuery(`INSERT INTO ${s}.photo_files (name, refs, bytes) VALUES ($1, 3, $2)`, [FILE_NAME, FILE])
    else throw new Error(`photo_files has columns ${columns.join(', ')}: teach this test the new layout`)
    await adminQuery(`INSERT INTO ${s}.changes (seq, kind, plant_id, version, plant, at) VALUES (1, 'created', 1, 1, $1, $2)`, [JSON.stringify(SEED_RECORD), CREATED])
    await adminQuery(`UPDATE ${s}.meta SET value = 1 WHERE key IN ('feed_head', 'count_available')`)
    await adminQuery(`INSERT INTO ${s}.idempotency_keys (key, request_hash, plant_id, response, created_at) VALUES ($1, $2, 1, $3, $4)`,
      [KEY, REQUEST_HASH, JSON.stringify({ ...SEED_RECORD, version: 2 }), Date.now()])
    const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 1000 * 86_400_000, startWaitMs: 60_000 })
    t.after(() => store.close())
    assert.ok(await store.schemaVersion() >= 4)
    await checkMigrated(store)
  })
})
