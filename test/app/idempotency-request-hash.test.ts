import assert from 'node:assert/strict'
import { test } from 'node:test'
import { hash } from 'node:crypto'
import { requestHash, sameRequest } from '../../src/store/idempotency.js'
import { migrate } from '../../src/store/postgres/migrate.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import { ENGINES } from '../helpers/engines.js'
import { adminQuery, freshSchema, TEST_DATABASE_URL } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'

// A stored Idempotency-Key keeps what its request was, compared when the key is sent again: a short
// request (a till's sale) as its JSON text, a longer one as the SHA-256 of it. A retry that spans an
// upgrade must still match what an earlier release stored: these are the digests the routes wrote
// before (plants, a batch, a stock movement, a reservation's two claims), each of its route's parts.

const BEFORE: Array<[parts: unknown, digest: string]> = [
  [{ name: 'Monstera', category: null }, 'mB0LG0JNLXTFeFpIde8nx2lEL0NFGDy21yvmeLG8Sok'],
  [['batch', ['create', { name: 'Fern' }], ['delete', 7, null]], 'yrAG-dRf_iYQv4t5zHm_vmhV363YALMYSJh96WpxfRg'],
  [['stock', '12', { kind: 'sale', quantity: 2, location: 'main' }, '"3"'], '1s4sOXUiOZTplPoHaxdlFYK5pgoJ32gkeS9gM1Sop5s'],
  [['reserve', { items: [{ plantId: '12', quantity: 1 }] }], 'PTr_6fPM6byN-RPNDPyQC40_sR0xwjOFTrM7_NjkPa0'],
  [['commit', '0b7e4c2a-5f0e-4d0a-9a57-2f1d7a0c9b11'], 't-gD9p5PG2-kVuYdeMUWJfc-9z4wCmtSNzBiGv49_m8']
]

test('a short request is kept as its text, a long one as the digest stored before; either matches what an earlier release stored', () => {
  for (const [parts, digest] of BEFORE) {
    const text = JSON.stringify(parts)
    assert.equal(requestHash(parts), text.length <= 64 ? text : digest, text)
    assert.ok(sameRequest(digest, requestHash(parts)), `the digest stored before still matches ${text}`)
    assert.ok(sameRequest(requestHash(parts), requestHash(parts)))
  }
  // Another request under the key: neither its text nor its digest matches.
  const sale = requestHash(['stock', 12, { delta: -1, reason: 'sale' }, null])
  const other = ['stock', 12, { delta: -2, reason: 'sale' }, null]
  assert.equal(sale, '["stock",12,{"delta":-1,"reason":"sale"},null]')
  assert.ok(!sameRequest(requestHash(other), sale))
  assert.ok(!sameRequest(BEFORE[4][1], sale))
  assert.ok(!sameRequest(sale, BEFORE[4][1]), 'a digest claimed (never now) is compared as it is')
})

for (const engine of ENGINES) {
  test(`${engine.name}: a sale retried with the key an earlier release stored under its request's digest replays; another sale under it is refused`, async (t) => {
    const store = await engine.open()
    t.after(() => store.close())
    const { id } = (await store.create({ name: 'Fern', category: null, tags: [], status: 'available' })).plant
    await store.stock.move(id, { set: 5, reason: 'count' })
    const parts = ['stock', id, { delta: -1, reason: 'sale' }, null]
    // As the release before kept it: the key's row holds the digest of the request's text.
    const before = { key: 'till-7', requestHash: hash('sha256', JSON.stringify(parts), 'base64url') }
    const first = await store.stock.move(id, { delta: -1, reason: 'sale' }, before)
    assert.equal(first.replayed, false)
    const retry = await store.stock.move(id, { delta: -1, reason: 'sale' }, { key: 'till-7', requestHash: requestHash(parts) })
    assert.equal(retry.replayed, true)
    assert.equal(retry.stock.onHand, 4)
    await assert.rejects(store.stock.move(id, { delta: -2, reason: 'sale' }, { key: 'till-7', requestHash: requestHash(['stock', id, { delta: -2, reason: 'sale' }, null]) }), { message: /Idempotency-Key used for another request/ })
    assert.equal((await store.get(id))?.stock?.onHand, 4, 'sold once')
  })
}

const SALE = ['stock', 1, { delta: -1, reason: 'sale' }, null]
const FERN = { name: 'Fern', category: null, tags: [], status: 'available' as const }

test('SQLite: a short request is kept as its text (one service: no instance of an older release reads it)', async (t) => {
  const dir = tempDir('plants-request-text')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  const { id } = (await store.create(FERN)).plant
  await store.stock.move(id, { set: 5, reason: 'count' })
  await store.stock.move(id, { delta: -1, reason: 'sale' }, { key: 'till-1', requestHash: requestHash(SALE) })
  await store.close()
  const db = connect(`${dir.path}/catalogue.db`)
  t.after(() => db.close())
  assert.equal(db.prepare("SELECT request_hash FROM recent_keys WHERE key = 'till-1'").pluck().get(), JSON.stringify(SALE))
})

test('PostgreSQL: a short request is kept as its digest, which an instance of the release before compares during a rolling upgrade', { skip: TEST_DATABASE_URL === undefined ? 'TEST_DATABASE_URL is not set' : false }, async (t) => {
  const scratch = await freshSchema()
  t.after(scratch.drop)
  await migrate({ connectionString: scratch.url }, undefined, () => {})
  const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 86_400_000, operationTimeoutMs: 10_000 })
  t.after(() => store.close())
  const { id } = (await store.create(FERN)).plant
  await store.stock.move(id, { set: 5, reason: 'count' })
  const sale = ['stock', id, { delta: -1, reason: 'sale' }, null]
  await store.stock.move(id, { delta: -1, reason: 'sale' }, { key: 'till-1', requestHash: requestHash(sale) })
  await store.stock.reserve({ id: 'r-1', lines: [{ plant: id, quantity: 1 }], ttlSeconds: 900 }, { key: 'web-1', requestHash: requestHash(['reserve', 1]) })
  await store.stock.commitReservation('r-1', { key: 'web-2', requestHash: requestHash(['commit', 'r-1']) })
  await store.create(FERN, { key: 'shop-1', requestHash: requestHash({ name: 'Fern' }) })
  const kept = await adminQuery<{ key: string, request_hash: string }>(`SELECT key, request_hash FROM ${scratch.name}.idempotency_keys ORDER BY key`)
  const digest = (parts: unknown): string => hash('sha256', JSON.stringify(parts), 'base64url')
  assert.deepEqual(kept.map((r) => [r.key, r.request_hash]), [
    ['shop-1', digest({ name: 'Fern' })], ['till-1', digest(sale)], ['web-1', digest(['reserve', 1])], ['web-2', digest(['commit', 'r-1'])]])
  // And the retry, with this release's claim, replays.
  assert.equal((await store.stock.move(id, { delta: -1, reason: 'sale' }, { key: 'till-1', requestHash: requestHash(sale) })).replayed, true)
})
