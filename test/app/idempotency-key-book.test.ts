import assert from 'node:assert/strict'
import { test } from 'node:test'
import { keyBook } from '../../src/store/sqlite/key-book.js'
import { migrate, SALE_WRITES_VERSION } from '../../src/store/sqlite/migrations.js'
import { SqliteSnapshot } from '../../src/store/sqlite/snapshot.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { tempDir } from '../helpers/process.js'

// SQLite's Idempotency-Keys (key-book.ts, migration 29): a new key is appended to recent_keys and
// found through the writer's map; once enough wait they move into idempotency_keys together. A key
// answers the same wherever it is kept: waiting, moved, after a restart, after a rollback, in a copy.

const FEED = { feedRetentionMs: 86_400_000 }
const DAY = 86_400_000

function book (settleAt: number): { db: ReturnType<typeof connect>, keys: ReturnType<typeof keyBook>, where: (key: string) => string[] } {
  const db = connect(':memory:')
  migrate(db)
  const where = (key: string): string[] => [
    ...(db.prepare('SELECT 1 FROM recent_keys WHERE key = ?').all(key).length > 0 ? ['recent'] : []),
    ...(db.prepare('SELECT 1 FROM idempotency_keys WHERE key = ?').all(key).length > 0 ? ['indexed'] : [])]
  return { db, keys: keyBook(db, settleAt), where }
}

test('a key waits in recent_keys until enough wait, then moves to idempotency_keys; it is found the same in both', () => {
  const { keys, where } = book(3)
  keys.put('a', 'ha', 1, '{"n":1}', 1000)
  keys.put('b', 'hb', 2, '{"n":2}', 1001)
  keys.settle()
  assert.deepEqual(where('a'), ['recent'], 'two keys wait: fewer than three')
  assert.equal(keys.find('a', 0)?.response, '{"n":1}')
  keys.put('c', 'hc', 3, '{"n":3}', 1002)
  keys.settle()
  for (const key of ['a', 'b', 'c']) assert.deepEqual(where(key), ['indexed'], key)
  assert.deepEqual(keys.find('b', 0), { request_hash: 'hb', response: '{"n":2}', created_at: 1001 })
  assert.equal(keys.find('b', 1001), undefined, 'used at the cutoff: expired')
  assert.equal(keys.find('d', 0), undefined)
})

test('a key used again after it expired answers its newest use, waiting or moved', () => {
  const { keys, where } = book(2)
  keys.put('a', 'old', 1, '{"n":1}', 1000)
  keys.put('x', 'hx', 1, '{}', 1000)
  keys.settle()
  assert.deepEqual(where('a'), ['indexed'])
  // Expired (the cutoff is after its use), so the writer keeps the new use.
  assert.equal(keys.find('a', 1000), undefined)
  keys.put('a', 'new', 1, '{"n":2}', 2000)
  assert.equal(keys.find('a', 1500)?.request_hash, 'new', 'the waiting row, before the moved one')
  // Used twice while waiting (the first expired in between): the newest moves.
  keys.put('a', 'newest', 1, '{"n":3}', 3000)
  keys.settle()
  assert.deepEqual(where('a'), ['indexed'])
  assert.equal(keys.find('a', 2500)?.request_hash, 'newest')
})

test('after a rollback the map follows the table: rolled-back keys are gone, a rolled-back move leaves the keys waiting', () => {
  const { db, keys, where } = book(2)
  keys.put('kept', 'h', 1, '{}', 1000)
  db.exec('BEGIN')
  keys.put('gone', 'h', 1, '{}', 1000)
  keys.settle()
  assert.deepEqual(where('kept'), ['indexed'])
  db.exec('ROLLBACK')
  keys.reload()
  assert.deepEqual(where('kept'), ['recent'])
  assert.equal(keys.find('kept', 0)?.request_hash, 'h')
  assert.equal(keys.find('gone', 0), undefined)
  // The rowid the rolled-back key had is handed out again, to another key: each is found as itself.
  keys.put('other', 'h2', 1, '{}', 1000)
  assert.equal(keys.find('other', 0)?.request_hash, 'h2')
  assert.equal(keys.find('gone', 0), undefined)
})

async function sell (store: PlantStore, id: number, key: string): Promise<{ seq: number, replayed: boolean }> {
  const result = await store.stock.move(id, { delta: -1, reason: 'sale' }, { key, requestHash: `sale-${id}` })
  return { seq: result.movement.seq, replayed: result.replayed }
}

test('SQLite: a sale\'s key still waiting in recent_keys replays after a restart, is purged when it expires, and is in a copy\'s snapshot', async (t) => {
  const dir = tempDir('plants-key-book')
  t.after(dir.remove)
  let now = Date.now()
  const first = openSqliteStore({ dataDir: dir.path, ...FEED, now: () => now })
  const { id } = (await first.create({ name: 'Fern', category: null, tags: [], status: 'available', description: null, price: null, sku: null, barcode: null, lowStockAt: null })).plant
  await first.stock.move(id, { delta: 10, reason: 'received' })
  const sale = await sell(first, id, 'till-1')
  assert.equal(sale.replayed, false)
  await first.close()

  const db = connect(`${dir.path}/catalogue.db`)
  assert.equal(db.prepare("SELECT count(*) FROM recent_keys WHERE key = 'till-1'").pluck().get(), 1, 'the key waits')
  db.close()
  const snapshot = new SqliteSnapshot(`${dir.path}/catalogue.db`)
  const copied: Array<{ key: string }> = []
  for await (const page of snapshot.rows('idempotencyKeys', 100)) copied.push(...page)
  assert.deepEqual(copied.map((r) => r.key), ['till-1'])
  assert.equal((await snapshot.tallies()).idempotencyKeys, 1)
  await snapshot.close()

  const second = openSqliteStore({ dataDir: dir.path, ...FEED, now: () => now })
  t.after(() => second.close())
  assert.deepEqual(await sell(second, id, 'till-1'), { seq: sale.seq, replayed: true }, 'the retry is answered, not sold again')
  assert.equal((await second.get(id))?.stock?.onHand, 9)
  now += DAY + 1
  ;(second as unknown as { purge (): void }).purge()
  const later = await sell(second, id, 'till-1')
  assert.equal(later.replayed, false, 'the key expired: a new sale')
  assert.equal((await second.get(id))?.stock?.onHand, 8)
})

test('SQLite: migration 29 from a catalogue of 28 keeps its keys answering, and new keys wait beside them', async (t) => {
  const dir = tempDir('plants-key-migration')
  t.after(dir.remove)
  const first = openSqliteStore({ dataDir: dir.path, ...FEED })
  const { id } = (await first.create({ name: 'Fern', category: null, tags: [], status: 'available', description: null, price: null, sku: null, barcode: null, lowStockAt: null })).plant
  await first.stock.move(id, { delta: 10, reason: 'received' })
  const sale = await sell(first, id, 'till-1')
  await first.close()

  // The catalogue as 28 migrations left it: every key in idempotency_keys, no recent_keys.
  const db = connect(`${dir.path}/catalogue.db`)
  db.exec(`INSERT INTO idempotency_keys (key, request_hash, plant_id, response, created_at) SELECT key, request_hash, plant_id, response, created_at FROM recent_keys;
    DROP TABLE recent_keys;`)
  db.pragma(`user_version = ${SALE_WRITES_VERSION}`)
  db.close()

  const second = openSqliteStore({ dataDir: dir.path, ...FEED })
  t.after(() => second.close())
  assert.deepEqual(await sell(second, id, 'till-1'), { seq: sale.seq, replayed: true })
  const next = await sell(second, id, 'till-2')
  assert.equal(next.replayed, false)
  assert.deepEqual(await sell(second, id, 'till-2'), { seq: next.seq, replayed: true })
  assert.equal((await second.get(id))?.stock?.onHand, 8)
  const after = connect(`${dir.path}/catalogue.db`)
  t.after(() => after.close())
  assert.ok(Number(after.pragma('user_version', { simple: true })) > SALE_WRITES_VERSION, 'migration 29 ran')
  assert.deepEqual(after.prepare('SELECT key FROM recent_keys').pluck().all(), ['till-2'])
})

test('inside a group\'s transaction the rows other processes appended are read once, at its first lookup; the next group reads them again', () => {
  const { db, keys } = book(100)
  // Another process's key, appended before the group began (its transaction holds the write lock after).
  const append = db.prepare("INSERT INTO recent_keys (key, request_hash, plant_id, response, created_at) VALUES (?, 'h', 1, '{}', 1000)")
  append.run('before')
  keys.begin()
  assert.equal(keys.find('before', 0)?.request_hash, 'h', 'read at the group\'s first lookup')
  keys.put('own', 'h', 1, '{}', 1000)
  assert.equal(keys.find('own', 0)?.request_hash, 'h', 'its own keys are found')
  // A row no other process could append inside the group: not read again until the group ends.
  append.run('inside')
  assert.equal(keys.find('inside', 0), undefined, 'the group read the appended rows once')
  keys.settle()
  keys.begin()
  assert.equal(keys.find('inside', 0)?.request_hash, 'h', 'the next group reads them')
  keys.settle()
  // Outside a group (no begin), every lookup reads what was appended since.
  append.run('outside')
  assert.equal(keys.find('outside', 0)?.request_hash, 'h')
})

test('a book moves the waiting keys only when enough wait, not when another process\'s book moved the ones it counted', () => {
  const { db, keys: first, where } = book(3)
  // Another process's book on the same file (a book per writer; WORKERS > 1).
  const second = keyBook(db, 3)
  first.put('a', 'h', 1, '{}', 1000)
  first.put('b', 'h', 1, '{}', 1000)
  second.begin()
  assert.equal(second.find('a', 0)?.request_hash, 'h', 'the second book has read the first one\'s keys')
  second.settle()
  first.put('c', 'h', 1, '{}', 1000)
  first.settle()
  assert.deepEqual(where('a'), ['indexed'], 'three waited: the first book moved them')
  second.begin()
  second.put('d', 'h', 1, '{}', 1000)
  second.settle()
  assert.deepEqual(where('d'), ['recent'], 'one key waits: not moved on its own')
  for (const key of ['a', 'b', 'c', 'd']) assert.equal(second.find(key, 0)?.request_hash, 'h', key)
  second.put('e', 'h', 1, '{}', 1000)
  second.put('f', 'h', 1, '{}', 1000)
  second.settle()
  for (const key of ['d', 'e', 'f']) assert.deepEqual(where(key), ['indexed'], `${key}: three waited`)
})
