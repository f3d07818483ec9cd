import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { NO_INSERT_TRIGGER_VERSION, SALE_WRITES_VERSION } from '../../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { build } from '../helpers/app.js'
import { sqliteEngine } from '../helpers/engines.js'
import { tempDir } from '../helpers/process.js'

// SQLite's stock filters walk partial indexes over the plant's stock_state (stock-migration.ts,
// migration 29), which triggers set only when the plant crosses into or out of stock or low stock,
// so a sale that crosses nothing leaves those indexes alone. The filters must still follow every
// write that moves the count or the threshold: sales that cross and do not, a PATCH of lowStockAt,
// a reservation, stopping tracking, the trash, and a catalogue migrated from 28.

type Inject = (options: { method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object }) => Promise<{ statusCode: number, body: string, json: () => any }>

async function filters (request: Inject): Promise<{ inStock: number[], outOfStock: number[], low: number[], counts: number[] }> {
  const ids = async (query: string): Promise<number[]> => (await request({ method: 'GET', url: `/v3/plant?${query}` })).json().items.map((p: { id: number }) => p.id)
  const count = async (query: string): Promise<number> => (await request({ method: 'GET', url: `/v3/plant/count?${query}` })).json().count
  return {
    inStock: await ids('inStock=true'),
    outOfStock: await ids('inStock=false'),
    low: await ids('lowStock=true'),
    counts: [await count('inStock=true'), await count('inStock=false'), await count('lowStock=true')]
  }
}

const expect = (inStock: number[], outOfStock: number[], low: number[]): object => ({ inStock, outOfStock, low, counts: [inStock.length, outOfStock.length, low.length] })

async function move (request: Inject, id: number, payload: object): Promise<void> {
  const res = await request({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload })
  assert.equal(res.statusCode, 201, res.body)
}

test('SQLite: the stock filters follow sales that cross a threshold and sales that do not, lowStockAt patched, a reservation, untracking and the trash', async (t) => {
  const api = await build(t, sqliteEngine)
  const request: Inject = async (o) => await api.request(o)
  const a = (await api.add({ name: 'A', lowStockAt: 2 })).id as number
  const b = (await api.add({ name: 'B', lowStockAt: null })).id as number
  const c = (await api.add({ name: 'C', lowStockAt: 0 })).id as number
  await move(request, a, { set: 5, reason: 'count' })
  await move(request, b, { set: 1, reason: 'count' })
  assert.deepEqual(await filters(request), expect([a, b], [], []))
  // Sales that cross nothing, then into low stock, then out of stock (and so low, at or below 2).
  await move(request, a, { delta: -1, reason: 'sale' })
  assert.deepEqual(await filters(request), expect([a, b], [], []))
  await move(request, a, { delta: -2, reason: 'sale' })
  assert.deepEqual(await filters(request), expect([a, b], [], [a]))
  await move(request, a, { delta: -2, reason: 'sale' })
  assert.deepEqual(await filters(request), expect([b], [a], [a]))
  // A plant with no threshold is never low; with 0 it is low at 0.
  await move(request, b, { delta: -1, reason: 'sale' })
  await move(request, c, { set: 0, reason: 'count' })
  assert.deepEqual(await filters(request), expect([], [a, b, c], [a, c]))
  // The threshold moved by a PATCH: the plant crosses without a movement.
  assert.equal((await api.request({ method: 'PATCH', url: `/v3/plant/${b}`, payload: { lowStockAt: 0 } })).statusCode, 200)
  assert.deepEqual(await filters(request), expect([], [a, b, c], [a, b, c]))
  assert.equal((await api.request({ method: 'PATCH', url: `/v3/plant/${a}`, payload: { lowStockAt: null } })).statusCode, 200)
  assert.deepEqual(await filters(request), expect([], [a, b, c], [b, c]))
  // Received, then held by a reservation: available follows the hold.
  await move(request, c, { delta: 3, reason: 'received' })
  assert.deepEqual(await filters(request), expect([c], [a, b], [b]))
  const held = await api.request({ method: 'POST', url: '/v3/reservations', payload: { lines: [{ plant: c, quantity: 3 }], ttlSeconds: 900 } })
  assert.equal(held.statusCode, 201, held.body)
  assert.deepEqual(await filters(request), expect([], [a, b, c], [b, c]))
  assert.equal((await api.request({ method: 'DELETE', url: `/v3/reservations/${String(held.json().id)}` })).statusCode, 204)
  assert.deepEqual(await filters(request), expect([c], [a, b], [b]))
  // Untracked: in neither filter. Deleted and restored: back where it was.
  assert.equal((await api.request({ method: 'DELETE', url: `/v3/plant/${a}/stock` })).statusCode, 200)
  assert.deepEqual(await filters(request), expect([c], [b], [b]))
  assert.equal((await api.request({ method: 'DELETE', url: `/v3/plant/${c}` })).statusCode, 204)
  assert.deepEqual(await filters(request), expect([], [b], [b]))
  assert.equal((await api.request({ method: 'POST', url: `/v3/trash/${c}/restore` })).statusCode, 200)
  assert.deepEqual(await filters(request), expect([c], [b], [b]))
})

async function withApp<T> (store: PlantStore, fn: (request: Inject) => Promise<T>): Promise<T> {
  const app: FastifyInstance = await buildApp(testConfig({}), { store })
  try { return await fn(async (o) => await app.inject(o)) } finally { await app.close() }
}

test('SQLite: migration 29 from a catalogue of 28 (filters over the count) sets each tracked plant\'s state; the filters and later sales agree', async (t) => {
  const dir = tempDir('plants-stock-state')
  t.after(dir.remove)
  const first = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  const ids = await withApp(first, async (request) => {
    const add = async (name: string, lowStockAt: number | null): Promise<number> => (await request({ method: 'POST', url: '/v3/plant', payload: { name, lowStockAt } })).json().id
    const [a, b, c, d] = [await add('A', 2), await add('B', null), await add('C', 5), await add('Untracked', 1)]
    await move(request, a, { set: 4, reason: 'count' })
    await move(request, b, { set: 0, reason: 'count' })
    await move(request, c, { set: 3, reason: 'count' })
    return { a, b, c, d }
  })
  await first.close()

  // The catalogue as 28 migrations left it: the partial indexes over available, no state, no triggers.
  const db = connect(`${dir.path}/catalogue.db`)
  db.exec(`
    DROP TRIGGER plants_stock_state;
    DROP TRIGGER IF EXISTS plants_stock_state_insert;
    DROP INDEX plants_in_stock;
    DROP INDEX plants_out_of_stock;
    DROP INDEX plants_low_stock;
    ALTER TABLE plants DROP COLUMN stock_state;
    CREATE INDEX plants_in_stock ON plants (id) WHERE available > 0;
    CREATE INDEX plants_out_of_stock ON plants (id) WHERE available = 0;
    CREATE INDEX plants_low_stock ON plants (id) WHERE available <= low_stock_at;
  `)
  db.pragma(`user_version = ${SALE_WRITES_VERSION}`)
  db.close()

  const second = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  t.after(() => second.close())
  const { a, b, c } = ids
  await withApp(second, async (request) => {
    assert.deepEqual(await filters(request), expect([a, c], [b], [c]), 'B has no threshold: never low')
    await move(request, a, { delta: -2, reason: 'sale' })
    await move(request, c, { delta: -3, reason: 'sale' })
    assert.deepEqual(await filters(request), expect([a], [b, c], [a, c]))
  })
  const after = connect(`${dir.path}/catalogue.db`)
  t.after(() => after.close())
  assert.deepEqual(after.prepare('SELECT stock_state FROM plants ORDER BY id').pluck().all(), [5, 2, 6, null])
})

test('SQLite: no trigger runs on a plant\'s INSERT (migration 30 takes 29\'s off); a new plant has no state, a tracked plant restored from the trash has its own', async (t) => {
  const dir = tempDir('plants-insert-trigger')
  t.after(dir.remove)
  const insertTriggers = (): string[] => {
    const db = connect(`${dir.path}/catalogue.db`)
    try {
      return db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'plants' AND sql LIKE '%AFTER INSERT%'").pluck().all() as string[]
    } finally { db.close() }
  }
  const first = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  const [low, full] = await withApp(first, async (request) => {
    const add = async (name: string, lowStockAt: number | null): Promise<number> => (await request({ method: 'POST', url: '/v3/plant', payload: { name, lowStockAt } })).json().id
    const ids = [await add('Low', 2), await add('Full', 1)]
    await move(request, ids[0], { set: 1, reason: 'count' })
    await move(request, ids[1], { set: 4, reason: 'count' })
    for (const id of ids) assert.equal((await request({ method: 'DELETE', url: `/v3/plant/${id}` })).statusCode, 204)
    return ids
  })
  await first.close()
  assert.deepEqual(insertTriggers(), [])

  // A catalogue as migration 29 left it, with its trigger on INSERT: migration 30 takes it off.
  const db = connect(`${dir.path}/catalogue.db`)
  db.exec(`CREATE TRIGGER plants_stock_state_insert AFTER INSERT ON plants WHEN new.available IS NOT NULL
    BEGIN UPDATE plants SET stock_state = 7 WHERE id = new.id; END;`)
  db.pragma(`user_version = ${NO_INSERT_TRIGGER_VERSION}`)
  db.close()
  const second = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  await withApp(second, async (request) => {
    await request({ method: 'POST', url: '/v3/plant', payload: { name: 'New', lowStockAt: 3 } })
    for (const id of [low, full]) assert.equal((await request({ method: 'POST', url: `/v3/trash/${id}/restore` })).statusCode, 200)
    assert.deepEqual(await filters(request), expect([low, full], [], [low]))
  })
  await second.close()
  assert.deepEqual(insertTriggers(), [])
  const after = connect(`${dir.path}/catalogue.db`)
  t.after(() => after.close())
  assert.deepEqual(after.prepare('SELECT name, stock_state FROM plants ORDER BY id').raw().all(), [['Low', 5], ['Full', 1], ['New', null]])
})
