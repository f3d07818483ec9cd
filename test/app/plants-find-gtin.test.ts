import assert from 'node:assert/strict'
import { SORTS } from '../../src/catalogue/query.js'
import { describe, test } from 'node:test'
import pg from 'pg'
import { gtinKey, isGtin } from '../../src/catalogue/price-sku-barcode.js'
import { clientConfig } from '../../src/store/postgres/connection.js'
import { listQuery } from '../../src/store/postgres/list-query.js'
import { loadMigrations, migrate as migratePostgres } from '../../src/store/postgres/migrate.js'
import { listSql } from '../../src/store/sqlite/list-query.js'
import { GTIN_KEYS_VERSION, migrate as migrateSqlite } from '../../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { adminQuery, freshSchema, postgresEngine } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'

// A barcode is a GTIN: the same product's code written as a GTIN-8, a UPC-A (12 digits), an EAN-13
// with a leading 0 or a GTIN-14 with leading zeros is one GTIN (review finding 7). barcode= finds it
// whichever length is asked; the record keeps the barcode as the client wrote it.

// One product at four lengths, another (a GTIN-8) at four, and a third apart.
const UPC = ['012345678905', '0012345678905', '00012345678905']
const EIGHT = ['96385074', '000096385074', '0000096385074', '00000096385074']
const OTHER = '4006381333931'

const found = async (api: TestApp, query: string): Promise<Array<{ id: number, barcode: string }>> => {
  const res = await api.request({ method: 'GET', url: `/v3/plant?${query}` })
  assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
  return res.json().items.map((p: { id: number, barcode: string }) => ({ id: p.id, barcode: p.barcode }))
}

test('the codes of the tests are GTINs, and each length of one code has one key', () => {
  for (const code of [...UPC, ...EIGHT, OTHER]) assert.ok(isGtin(code), code)
  assert.deepEqual(new Set(UPC.map(gtinKey)), new Set(['00012345678905']))
  assert.deepEqual(new Set(EIGHT.map(gtinKey)), new Set(['00000096385074']))
})

for (const engine of ENGINES) {
  describe(`barcode= across GTIN lengths on ${engine.name}`, { skip: engine.skip }, () => {
    test('a UPC-A, its EAN-13 and its GTIN-14 find each other; each record keeps the barcode as written', async (t) => {
      const api = await build(t, engine)
      for (const [i, barcode] of [...UPC, ...EIGHT, OTHER].entries()) await api.add({ name: `Plant ${i}`, barcode })
      const upc = UPC.map((barcode, i) => ({ id: i + 1, barcode }))
      const eight = EIGHT.map((barcode, i) => ({ id: UPC.length + i + 1, barcode }))
      for (const asked of UPC) assert.deepEqual(await found(api, `barcode=${asked}`), upc, asked)
      for (const asked of EIGHT) assert.deepEqual(await found(api, `barcode=${asked}&sort=-id`), [...eight].reverse(), asked)
      assert.deepEqual(await found(api, `barcode=${OTHER}`), [{ id: 8, barcode: OTHER }])
      assert.deepEqual(await found(api, `barcode=0${OTHER}`), [{ id: 8, barcode: OTHER }])
      assert.deepEqual((await api.request({ method: 'GET', url: '/v3/plant/count?barcode=00000096385074' })).json(), { count: 4, exact: true })
      // One GTIN, one filter: a page asked as a UPC-A continues asked as a GTIN-14.
      const first = (await api.request({ method: 'GET', url: `/v3/plant?barcode=${UPC[0]}&limit=1` })).json()
      assert.deepEqual(await found(api, `barcode=${UPC[2]}&limit=5&cursor=${first.nextCursor}`), upc.slice(1))
      // A SKU and a barcode together: both hold.
      await api.request({ method: 'PATCH', url: '/v3/plant/2', payload: { sku: 'ZZ-1' } })
      assert.deepEqual(await found(api, `sku=zz-1&barcode=${UPC[0]}`), [{ id: 2, barcode: UPC[1] }])
      assert.deepEqual(await found(api, 'sku=zz-1&barcode=96385074'), [])
    })
  })
}

test('SQLite: barcode= seeks the GTIN-14 key index (plants_gtin), alone or beside sku=', async (t) => {
  const dir = tempDir('plants-find-gtin')
  t.after(dir.remove)
  await openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 }).close()
  const db = connect(`${dir.path}/catalogue.db`)
  t.after(() => db.close())
  db.function('query_guard', (_id: unknown) => 1)
  const plan = (sql: { text: string, args: unknown[] }): string =>
    (db.prepare(`EXPLAIN QUERY PLAN ${sql.text}`).all(...sql.args) as Array<{ detail: string }>).map((r) => r.detail).join('\n')
  assert.match(plan(listSql({ barcode: gtinKey(UPC[0]), afterId: 0, limit: 20 }, { kind: 'lookup' })), /USING INDEX plants_gtin/)
  assert.match(plan(listSql({ barcode: gtinKey(UPC[0]), sort: 'price', afterId: 0, limit: 20 }, { kind: 'lookup' })), /USING INDEX plants_gtin/)
  assert.match(plan(listSql({ sku: 'zz-1', barcode: gtinKey(UPC[0]), afterId: 0, limit: 20 }, { kind: 'lookup' })), /USING INDEX plants_sku/)
})

test(`SQLite migration ${GTIN_KEYS_VERSION}: barcodes indexed by their GTIN-14 key on 60,000 plants, saying so`, async (t) => {
  const dir = tempDir('plants-migrate-gtin')
  t.after(dir.remove)
  const db = connect(`${dir.path}/catalogue.db`)
  migrateSqlite(db, () => {}, GTIN_KEYS_VERSION - 1)
  const insert = db.prepare("INSERT INTO plants (name, name_key, tags, status, version, created_at, updated_at, barcode) VALUES (?, ?, '[]', 'available', 1, 1, 1, ?)")
  db.transaction(() => { for (let i = 0; i < 60_000; i++) insert.run(`Fern ${i}`, `fern ${i}`, i === 7 ? UPC[0] : i % 2 === 0 ? OTHER : null) })()
  assert.ok(db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'plants_barcode'").get(), 'the release before indexed barcodes as written')
  db.close()
  const lines: string[] = []
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000, progress: (line) => lines.push(line) })
  t.after(() => store.close())
  assert.ok(lines.some((l) => l.includes('indexing barcodes as GTIN-14') && l.includes('60000 plants')), lines.join('\n'))
  assert.deepEqual((await store.list({ barcode: gtinKey(UPC[2]), afterId: 0, limit: 10 })).map((p) => [p.id, p.barcode]), [[8, UPC[0]]])
  const check = connect(`${dir.path}/catalogue.db`)
  t.after(() => check.close())
  const indexes = check.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'plants_%'").pluck().all() as string[]
  assert.ok(indexes.includes('plants_gtin') && !indexes.includes('plants_barcode'), indexes.join(', '))
})

test('PostgreSQL migration 011 on 60,000 plants: barcodes indexed by their GTIN-14 key, saying when it starts and ends', { skip: postgresEngine.skip }, async (t) => {
  const scratch = await freshSchema()
  t.after(() => scratch.drop())
  const config = clientConfig(scratch.url, { operationMs: 60_000, connectMs: 5_000 })
  const migrations = loadMigrations()
  await migratePostgres(config, migrations.filter((m) => m.version < 11))
  await adminQuery(`INSERT INTO ${scratch.name}.plants (name, name_key, tags, status, version, created_at, updated_at, barcode)
    SELECT 'Fern ' || i, 'fern ' || i, '{}', 'available', 1, 1, 1, CASE WHEN i = 7 THEN '${UPC[0]}' WHEN i % 2 = 0 THEN '${OTHER}' END FROM generate_series(0, 59999) AS i`)
  const lines: string[] = []
  await migratePostgres(config, migrations.filter((m) => m.version === 11), (line) => lines.push(line))
  assert.deepEqual(lines.map((l) => l.replace(/[\d.]+ s$/, 'N s')), ['migration 011_gtin_keys.sql: applying on 60000 plants', 'migration 011_gtin_keys.sql: done in N s'])
  const indexes = (await adminQuery('SELECT indexname FROM pg_indexes WHERE schemaname = $1', [scratch.name])).map((r) => r.indexname as string)
  assert.ok(indexes.includes('plants_gtin') && !indexes.includes('plants_barcode'), indexes.join(', '))
  // The list's query seeks it.
  const client = new pg.Client({ connectionString: scratch.url })
  await client.connect()
  t.after(() => client.end())
  await client.query('ANALYZE plants')
  const { text, values } = listQuery({ barcode: gtinKey(UPC[1]), afterId: 0, limit: 20 }, 'p.id, p.barcode')
  const { rows } = await client.query(text, values)
  assert.deepEqual(rows.map((r) => [Number(r.id), r.barcode]), [[8, UPC[0]]])
  const plan = (await client.query(`EXPLAIN ${text}`, values)).rows.map((r) => r['QUERY PLAN'] as string).join('\n')
  assert.match(plan, /plants_gtin/)
  // A barcode no plant has, with every sort: still the barcode's index, never a walk of the sort's
  // index past every plant (joined to the order, the planner guessed such a barcode common).
  // (Not by name or available: this schema stops at migration 011, before the name's order key and stock.)
  for (const sort of SORTS.filter((s) => !s.endsWith('name') && !s.endsWith('available'))) {
    const none = listQuery({ barcode: gtinKey('4006381333931'), sort, afterId: 0, limit: 1 }, 'p.id')
    const walk = (await client.query(`EXPLAIN ${none.text}`, none.values)).rows.map((r) => r['QUERY PLAN'] as string).join('\n')
    assert.match(walk, /plants_gtin/, `sort=${sort}: ${walk}`)
    assert.doesNotMatch(walk, /plants_(pkey|name|name_order|price|updated)\b/, `sort=${sort}: ${walk}`)
  }
})
