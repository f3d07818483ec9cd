import assert from 'node:assert/strict'
import { test } from 'node:test'
import { SqliteSnapshot } from '../../src/store/sqlite/snapshot.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import type { MovementResult } from '../../src/catalogue/stock.js'
import { tempDir } from '../helpers/process.js'

// A movement's answer as SQLite keeps it under its Idempotency-Key (movement-answer.ts): packed, its
// values without their names. A retry answers exactly what the movement answered, whether the answer
// was kept packed or as JSON (an older file, a copy from PostgreSQL); a copy of the catalogue gets JSON.

const FEED = { feedRetentionMs: 86_400_000 }
const FERN = { name: 'Fern', category: null, tags: [], status: 'available' as const, description: null, price: null, sku: null, barcode: null, lowStockAt: 3 }

test('SQLite: a movement\'s key keeps its answer packed, a third of the JSON or less; the retry answers the movement as it was, after a restart', async (t) => {
  const dir = tempDir('plants-movement-answer')
  t.after(dir.remove)
  let now = Date.UTC(2026, 10, 29, 12)
  const first = openSqliteStore({ dataDir: dir.path, ...FEED, now: () => now })
  const { id } = (await first.create(FERN)).plant
  await first.stock.addLocation('greenhouse')
  await first.stock.move(id, { delta: 10, reason: 'received', location: 'greenhouse' })
  const sale = await first.stock.move(id, { delta: -2, reason: 'sale', location: 'greenhouse', reference: 'till "7" — ñ' }, { key: 'till-1', requestHash: 'h1' }, undefined, { actor: 'key:till' })
  assert.equal(sale.replayed, false)
  now += 5000
  // The plant moves on: the retry answers the sale's counts, not the plant's new ones.
  await first.stock.move(id, { delta: -1, reason: 'sale', location: 'greenhouse' })
  await first.close()

  const db = connect(`${dir.path}/catalogue.db`)
  const kept = db.prepare("SELECT response FROM recent_keys WHERE key = 'till-1'").pluck().get() as string
  assert.ok(kept.length * 3 <= JSON.stringify(sale).length, `kept ${kept.length} bytes, the JSON ${JSON.stringify(sale).length}`)
  assert.throws(() => JSON.parse(kept), 'not JSON: never read as another write\'s answer')
  assert.equal(kept.slice(1), JSON.stringify(JSON.parse(kept.slice(1))), 'the packed values are the text JSON.stringify writes of them')
  db.close()

  const second = openSqliteStore({ dataDir: dir.path, ...FEED, now: () => now })
  t.after(() => second.close())
  const retry = await second.stock.move(id, { delta: -2, reason: 'sale', location: 'greenhouse', reference: 'till "7" — ñ' }, { key: 'till-1', requestHash: 'h1' })
  assert.deepEqual(retry, { ...sale, replayed: true })
  assert.equal((await second.get(id))?.stock?.onHand, 7, 'sold once, and once without a key')
})

test('SQLite: an answer kept as JSON (an older file, a copy from PostgreSQL) still replays; a copy of the catalogue gets every answer as JSON', async (t) => {
  const dir = tempDir('plants-movement-answer-json')
  t.after(dir.remove)
  const first = openSqliteStore({ dataDir: dir.path, ...FEED })
  const { id } = (await first.create(FERN)).plant
  await first.stock.move(id, { delta: 10, reason: 'received' })
  const packed = await first.stock.move(id, { delta: -1, reason: 'sale' }, { key: 'till-packed', requestHash: 'hp' })
  await first.close()

  // A sale whose answer an older release kept as JSON, beside the packed one.
  const db = connect(`${dir.path}/catalogue.db`)
  const older: MovementResult = { ...packed, movement: { ...packed.movement, seq: packed.movement.seq + 100, reference: 'older' }, replayed: false }
  db.prepare('INSERT INTO idempotency_keys (key, request_hash, plant_id, response, created_at) VALUES (?, ?, ?, ?, ?)')
    .run('till-json', 'hj', id, JSON.stringify(older), Date.now())
  db.close()

  const snapshot = new SqliteSnapshot(`${dir.path}/catalogue.db`)
  const copied = new Map<string, string>()
  for await (const page of snapshot.rows('idempotencyKeys', 100)) for (const row of page) copied.set(row.key, row.response)
  await snapshot.close()
  assert.deepEqual(JSON.parse(copied.get('till-packed')!), { ...packed, replayed: false })
  assert.deepEqual(JSON.parse(copied.get('till-json')!), older)

  const second = openSqliteStore({ dataDir: dir.path, ...FEED })
  t.after(() => second.close())
  assert.deepEqual(await second.stock.move(id, { delta: -1, reason: 'sale' }, { key: 'till-json', requestHash: 'hj' }), { ...older, replayed: true })
  assert.deepEqual(await second.stock.move(id, { delta: -1, reason: 'sale' }, { key: 'till-packed', requestHash: 'hp' }), { ...packed, replayed: true })
  assert.equal((await second.get(id))?.stock?.onHand, 9)
})
