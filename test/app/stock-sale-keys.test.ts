import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import pg from 'pg'
import type { MovementResult } from '../../src/catalogue/stock.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { freshSchema, postgresEngine } from '../helpers/postgres-engine.js'

// How a PostgreSQL sale group writes its Idempotency-Keys (src/store/postgres/move-group.ts): a
// first run inserts them plainly, a run again (a key found in the table) upserts them, taking over
// an expired key's row.

const DAY = 86_400_000

async function open (t: TestContext, now: () => number): Promise<PlantStore> {
  const scratch = await freshSchema()
  const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: DAY, pollIntervalMs: 60_000, idempotencyTtlMs: DAY, now })
  t.after(async () => { await store.close(); await scratch.drop() })
  return store
}

/** The texts of the group writes `run` sends, in order. */
async function writesOf (run: () => Promise<unknown>): Promise<string[]> {
  const query = pg.Client.prototype.query
  const texts: string[] = []
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const config = args[0] as { name?: string, text?: string }
    if (typeof config === 'object' && config.name?.startsWith('stock-move-write') === true) texts.push(config.text!)
    return (query as (...a: unknown[]) => unknown).apply(this, args)
  } as typeof query
  try {
    await run()
  } finally {
    pg.Client.prototype.query = query
  }
  return texts
}

const sale = { delta: -1, reason: 'sale' } as const

describe('a PostgreSQL sale group\'s keys', { skip: postgresEngine.skip }, () => {
  test('a first run inserts its keys without ON CONFLICT (a check and a confirmation a row); a retry runs again with the upsert', async (t) => {
    const store = await open(t, Date.now)
    const id = (await store.create({ name: 'Monstera', category: null, tags: [], status: 'available' })).plant.id
    await store.stock.move(id, { delta: 5, reason: 'received' })
    let first: MovementResult | undefined
    const fresh = await writesOf(async () => { first = await store.stock.move(id, sale, { key: 'till:1', requestHash: 'h' }) })
    assert.equal(fresh.length, 1)
    assert.doesNotMatch(fresh[0], /ON CONFLICT \(key\)/)
    const retried = await writesOf(async () => {
      assert.deepEqual(await Promise.all([
        store.stock.move(id, sale, { key: 'till:1', requestHash: 'h' }),
        store.stock.move(id, sale, { key: 'till:2', requestHash: 'h' })
      ]).then(([again]) => again), { ...first, replayed: true })
    })
    assert.equal(retried.length, 2, 'the first run finds till:1 in use and applies nothing; the run again writes till:2')
    assert.match(retried[1], /ON CONFLICT \(key\)/)
    assert.equal((await store.get(id))?.stock?.onHand, 3)
  })

  test('a key used again after it expired: the sale is applied anew, its row taken over, the ledger without gaps', async (t) => {
    let now = Date.parse('2026-11-30T09:00:00Z')
    const store = await open(t, () => now)
    const id = (await store.create({ name: 'Monstera', category: null, tags: [], status: 'available' })).plant.id
    await store.stock.move(id, { delta: 5, reason: 'received' })
    const first = await store.stock.move(id, sale, { key: 'till:1', requestHash: 'h' })
    now += DAY + 1 // the key's row stays until a purge
    const second = await store.stock.move(id, sale, { key: 'till:1', requestHash: 'another body' })
    assert.equal(second.replayed, false)
    assert.equal(second.movement.seq, first.movement.seq + 1)
    assert.equal(second.stock.onHand, 3)
    // The key answers the second sale now.
    assert.deepEqual(await store.stock.move(id, sale, { key: 'till:1', requestHash: 'another body' }), { ...second, replayed: true })
    const seqs = (await store.stock.movements(id, undefined, 10))!.map((m) => m.seq).reverse()
    assert.deepEqual(seqs, [seqs[0], seqs[0] + 1, seqs[0] + 2])
  })
})
