import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import pg from 'pg'
import { IdempotencyKeyReused, PlantNotFound, VersionMismatch } from '../../src/catalogue/errors.js'
import { InsufficientStock, LocationNotFound, MovementInvalid, StockChanged, type MovementInput, type MovementResult } from '../../src/catalogue/stock.js'
import { commitSizes } from '../../src/store/commit-sizes.js'
import type { IdempotencyClaim } from '../../src/store/idempotency.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { ENGINES } from '../helpers/engines.js'
import { adminQuery, freshSchema, inOneGroup, postgresEngine } from '../helpers/postgres-engine.js'

// Movements that share one group commit (PostgreSQL writes a group's movements set-based:
// src/store/postgres/move-group.ts): each is checked in arrival order against what the ones before
// it left, a refused one is refused alone, and the ledger's positions have no gaps, refusals or not.

const plantOf = async (store: PlantStore, name: string): Promise<number> =>
  (await store.create({ name, category: null, tags: [], status: 'available' })).plant.id

/** Every movement of `ids`' plants, in ledger order. */
async function ledgerOf (store: PlantStore, ids: number[]): Promise<Array<{ seq: number, plant: number, onHandAfter: number, delta: number }>> {
  const all: Array<{ seq: number, plant: number, onHandAfter: number, delta: number }> = []
  for (const id of ids) for (const m of (await store.stock.movements(id, undefined, 100))!) all.push({ seq: m.seq, plant: id, onHandAfter: m.onHandAfter, delta: m.delta })
  return all.sort((a, b) => a.seq - b.seq)
}

for (const engine of ENGINES) {
  describe(`movements in one group on ${engine.name}`, { skip: engine.skip }, () => {
    test('several movements of one plant in one group: applied in arrival order, each refusal alone, a key used twice answered once', async (t) => {
      const store = await engine.open()
      t.after(async () => { await store.close() })
      const id = await plantOf(store, 'Monstera')
      const other = await plantOf(store, 'Fern')
      await store.stock.move(id, { delta: 2, reason: 'received' })
      const key = (k: string, hash = k): IdempotencyClaim => ({ key: k, requestHash: hash })
      const sizes = commitSizes[engine.name]
      const [commits, writes] = [sizes.count, sizes.sum]
      const asked: Array<[number, MovementInput, IdempotencyClaim?, number[]?]> = [
        [id, { delta: -1, reason: 'sale', reference: 'a' }, key('a')], // 2 → 1
        [id, { delta: -1, reason: 'sale', reference: 'b' }, key('b')], // 1 → 0: the last unit
        [id, { delta: -1, reason: 'sale', reference: 'c' }, key('c')], // none left: refused
        [id, { delta: -1, reason: 'sale', reference: 'a' }, key('a')], // the first again: its answer
        [id, { delta: -1, reason: 'sale', reference: 'x' }, key('b', 'another body')], // b's key, another body: refused
        [id, { delta: 5, reason: 'received' }, key('c')], // c's key, its sale refused: free, so used here: 0 → 5
        [id, { set: 9, expected: 4, reason: 'count' }], // expected 4, is 5: refused
        [id, { set: 3, expected: 5, reason: 'count' }], // 5 → 3
        [id, { delta: 1, reason: 'sale' }], // a sale that adds: refused
        [id, { delta: -1, reason: 'sale', location: 'shed' }], // no such location: refused
        [id, { delta: -3, reason: 'sale' }, undefined, [5]], // If-Match of a version passed: refused
        [other, { delta: 4, reason: 'received' }], // another plant between: 0 → 4
        [999_999, { delta: 1, reason: 'received' }], // no such plant
        [id, { delta: -3, reason: 'sale' }, undefined, [6]] // 3 → 0, at the version the count left
      ]
      const outcomes = await Promise.allSettled(asked.map(([plant, input, claim, versions]) => store.stock.move(plant, input, claim, versions)))
      // They were all one group's (one commit).
      assert.equal(sizes.count - commits, 1)
      assert.equal(sizes.sum - writes, asked.length)
      const value = (i: number): MovementResult => {
        const o = outcomes[i]
        assert.equal(o.status, 'fulfilled', o.status === 'rejected' ? String(o.reason) : '')
        return (o as PromiseFulfilledResult<MovementResult>).value
      }
      const refusal = (i: number): unknown => {
        const o = outcomes[i]
        assert.equal(o.status, 'rejected', `movement ${i} applied`)
        return (o as PromiseRejectedResult).reason
      }
      assert.deepEqual([0, 1, 5, 7, 11, 13].map((i) => [value(i).movement.onHandAfter, value(i).version, value(i).replayed]),
        [[1, 3, false], [0, 4, false], [5, 5, false], [3, 6, false], [4, 2, false], [0, 7, false]])
      assert.ok(refusal(2) instanceof InsufficientStock)
      assert.deepEqual(value(3), { ...value(0), replayed: true })
      assert.ok(refusal(4) instanceof IdempotencyKeyReused)
      assert.ok(refusal(6) instanceof StockChanged)
      assert.equal((refusal(6) as StockChanged).onHand, 5)
      assert.ok(refusal(8) instanceof MovementInvalid)
      assert.ok(refusal(9) instanceof LocationNotFound)
      assert.ok(refusal(10) instanceof VersionMismatch)
      assert.ok(refusal(12) instanceof PlantNotFound)
      // Status followed the stock through the group: sold at 0, available at 5, sold again at 0.
      assert.deepEqual([1, 5, 13].map((i) => value(i).stock.available), [0, 5, 0])
      const after = await store.get(id)
      assert.deepEqual(after?.stock, { onHand: 0, reserved: 0, available: 0 })
      assert.equal(after?.status, 'sold')
      assert.equal(after?.version, 7)
      // The ledger holds the applied movements in the order they were applied, each with the answer's position.
      const ledger = await ledgerOf(store, [id, other])
      assert.deepEqual(ledger.slice(1).map((m) => [m.plant, m.delta, m.onHandAfter]),
        [[id, -1, 1], [id, -1, 0], [id, 5, 5], [id, -2, 3], [other, 4, 4], [id, -3, 0]])
      assert.deepEqual(ledger.slice(1).map((m) => m.seq), [0, 1, 5, 7, 11, 13].map((i) => value(i).movement.seq))
      // Replayed afterwards, alone, the keys answer what the group answered.
      assert.deepEqual(await store.stock.move(id, asked[5][1], key('c')), { ...value(5), replayed: true })
      await assert.rejects(store.stock.move(id, { delta: -1, reason: 'sale', reference: 'b' }, key('b', 'a third body')), IdempotencyKeyReused)
    })

    test('the ledger\'s positions have no gaps: a refused movement takes none, in a group of its own or among others', async (t) => {
      const store = await engine.open()
      t.after(async () => { await store.close() })
      const ids = [await plantOf(store, 'Monstera'), await plantOf(store, 'Fern')]
      const refused = async (p: Promise<unknown>): Promise<void> => { await assert.rejects(p) }
      await store.stock.move(ids[0], { delta: 1, reason: 'received' })
      // Alone, each in a group of its own.
      await refused(store.stock.move(ids[0], { delta: -2, reason: 'sale' }))
      await refused(store.stock.move(ids[0], { set: 5, expected: 3, reason: 'count' }))
      await refused(store.stock.move(ids[0], { delta: 1, reason: 'received', location: 'shed' }))
      await refused(store.stock.move(ids[0], { delta: 1, reason: 'received' }, undefined, [1]))
      await store.stock.move(ids[1], { delta: 3, reason: 'received' })
      await refused(store.stock.move(ids[1], { delta: -4, reason: 'sale' }, { key: 'k', requestHash: 'h' }))
      await store.stock.move(ids[1], { delta: -1, reason: 'sale' }, { key: 'k', requestHash: 'h' })
      // Among others in one group.
      await Promise.allSettled([
        store.stock.move(ids[0], { delta: -1, reason: 'sale' }),
        store.stock.move(ids[0], { delta: -1, reason: 'sale' }),
        store.stock.move(ids[1], { delta: -5, reason: 'sale' }),
        store.stock.move(ids[1], { delta: -1, reason: 'sale' }),
        store.stock.move(ids[0], { delta: 2, reason: 'received' })
      ])
      await refused(store.stock.move(ids[1], { delta: -9, reason: 'damaged' }))
      await store.stock.move(ids[1], { delta: 1, reason: 'return' })
      const seqs = (await ledgerOf(store, ids)).map((m) => m.seq)
      assert.equal(seqs.length, 7)
      assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => seqs[0] + i))
    })
  })
}

describe('PostgreSQL movements set-based', { skip: postgresEngine.skip }, () => {
  async function open (t: { after (fn: () => Promise<void>): void }, poolMax?: number): Promise<{ store: PlantStore, url: string }> {
    const scratch = await freshSchema()
    const url = new URL(scratch.url)
    if (poolMax !== undefined) url.searchParams.set('pool_max', String(poolMax))
    // A slow poll: the head poll's statements stay out of the count below.
    const store = await openPostgresStore({ connectionString: url.toString(), feedRetentionMs: 86_400_000, pollIntervalMs: 60_000, operationTimeoutMs: 60_000 })
    t.after(async () => { await store.close(); await scratch.drop() })
    return { store, url: scratch.url }
  }

  test('a group of sales costs three round trips whatever its size, as a PATCH group (BEGIN with lock and read, write, COMMIT); four with another location', async (t) => {
    // One connection: its statement for the lock is prepared by the first group (below, the stock put on), once.
    const { store } = await open(t, 1)
    const ids: number[] = []
    for (let i = 0; i < 8; i++) ids.push(await plantOf(store, `Plant ${i}`))
    await Promise.all(ids.map((id) => store.stock.move(id, { delta: 10, reason: 'received' })))
    for (const size of [1, 24]) {
      const { settled, commits, statements } = await inOneGroup(() => Array.from({ length: size }, (_, i) =>
        store.stock.move(ids[i % ids.length], { delta: -1, reason: 'sale' }, { key: `s${size}-${i}`, requestHash: 'h' })))
      assert.deepEqual(settled.map((r) => r.status), Array(size).fill('fulfilled'))
      assert.equal(commits, 1)
      assert.equal(statements, 3, `${size} movement(s)`)
    }
    // A location named by the request: its name goes as a parameter, in a statement of its own after BEGIN.
    await store.stock.addLocation('shed')
    const { settled, statements } = await inOneGroup(() => [
      store.stock.move(ids[0], { delta: 2, reason: 'received', location: 'shed' }),
      store.stock.move(ids[1], { delta: -1, reason: 'sale' }, { key: 'main-1', requestHash: 'h' })
    ])
    assert.deepEqual(settled.map((r) => r.status), ['fulfilled', 'fulfilled'])
    assert.equal(statements, 4)
  })

  test('a sale retried in a group of new ones: answered as first, the others applied, the ledger without gaps', async (t) => {
    const { store } = await open(t)
    const ids: number[] = []
    for (let i = 0; i < 3; i++) ids.push(await plantOf(store, `Plant ${i}`))
    await Promise.all(ids.map((id) => store.stock.move(id, { delta: 10, reason: 'received' })))
    const first = await store.stock.move(ids[0], { delta: -1, reason: 'sale' }, { key: 'till:1', requestHash: 'h' })
    const { settled } = await inOneGroup(() => [
      store.stock.move(ids[1], { delta: -1, reason: 'sale' }, { key: 'till:2', requestHash: 'h' }),
      store.stock.move(ids[0], { delta: -1, reason: 'sale' }, { key: 'till:1', requestHash: 'h' }), // the retry
      store.stock.move(ids[2], { delta: -1, reason: 'sale' }, { key: 'till:3', requestHash: 'h' })
    ])
    assert.deepEqual(settled.map((r) => r.status), ['fulfilled', 'fulfilled', 'fulfilled'])
    assert.deepEqual((settled[1] as PromiseFulfilledResult<MovementResult>).value, { ...first, replayed: true })
    await assert.rejects(store.stock.move(ids[2], { delta: -1, reason: 'sale' }, { key: 'till:1', requestHash: 'another body' }), IdempotencyKeyReused)
    assert.deepEqual((await Promise.all(ids.map((id) => store.get(id)))).map((p) => p?.stock?.onHand), [9, 9, 9])
    const seqs = (await ledgerOf(store, ids)).map((m) => m.seq)
    assert.equal(seqs.length, 6)
    assert.deepEqual(seqs, Array.from({ length: seqs.length }, (_, i) => seqs[0] + i))
  })

  test('a sale retried after the plant sold out is answered as first, not refused', async (t) => {
    const { store } = await open(t)
    const id = await plantOf(store, 'Monstera')
    await store.stock.move(id, { delta: 1, reason: 'received' })
    const first = await store.stock.move(id, { delta: -1, reason: 'sale' }, { key: 'till:1', requestHash: 'h' })
    const { settled } = await inOneGroup(() => [
      store.stock.move(id, { delta: -1, reason: 'sale' }, { key: 'till:1', requestHash: 'h' }),
      store.stock.move(id, { delta: -1, reason: 'sale' }, { key: 'till:2', requestHash: 'h' })
    ])
    assert.deepEqual((settled[0] as PromiseFulfilledResult<MovementResult>).value, { ...first, replayed: true })
    assert.ok((settled[1] as PromiseRejectedResult).reason instanceof InsufficientStock)
    assert.equal((await store.stock.movements(id, undefined, 10))?.length, 2)
  })

  test('a movement updates its level in place (HOT): no index of the levels holds a column a movement writes', async (t) => {
    const scratch = await freshSchema()
    t.after(() => scratch.drop())
    const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 86_400_000, pollIntervalMs: 60_000 })
    let open = true
    t.after(async () => { if (open) await store.close() })
    const indexed = await adminQuery<{ index: string, column: string }>(`SELECT i.indexrelid::regclass::text AS index, a.attname AS column
      FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
      WHERE i.indrelid = '${scratch.name}.stock_levels'::regclass`)
    assert.deepEqual([...new Set(indexed.map((c) => c.column))].sort(), ['location', 'plant_id'])
    const id = await plantOf(store, 'Monstera')
    await store.stock.move(id, { delta: 20, reason: 'received' }) // the level's row, inserted
    for (let i = 0; i < 6; i++) await store.stock.move(id, { delta: -1, reason: 'sale' }, { key: `till:${i}`, requestHash: 'h' })
    await store.stock.move(id, { set: 10, reason: 'count' })
    // A backend reports its table statistics when it ends: the store's, once closed.
    await store.close()
    open = false
    let levels = { upd: 0, hot: 0 }
    for (let tries = 0; levels.upd < 7 && tries < 100; tries++) {
      if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 100))
      const [row] = await adminQuery<{ upd: string, hot: string }>('SELECT n_tup_upd AS upd, n_tup_hot_upd AS hot FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2',
        [scratch.name, 'stock_levels'])
      levels = { upd: Number(row.upd), hot: Number(row.hot) }
    }
    assert.deepEqual(levels, { upd: 7, hot: 7 }, 'every update of the level a HOT one')
  })

  test('a sale group looks its keys up by their index, however few keys the table held when its statement was planned', async (t) => {
    const scratch = await freshSchema()
    t.after(() => scratch.drop())
    const url = new URL(scratch.url)
    url.searchParams.set('pool_max', '1') // one connection, whose statements keep their plans
    const store = await openPostgresStore({ connectionString: url.toString(), feedRetentionMs: 86_400_000, pollIntervalMs: 60_000 })
    let open = true
    t.after(async () => { if (open) await store.close() })
    await adminQuery(`ANALYZE ${scratch.name}.idempotency_keys`) // as a new service finds it: empty
    const id = await plantOf(store, 'Monstera')
    await store.stock.move(id, { delta: 100, reason: 'received' })
    // More runs than PostgreSQL plans one by one before it keeps a plan for the statement.
    for (let i = 0; i < 8; i++) await store.stock.move(id, { delta: -1, reason: 'sale' }, { key: `till:${i}`, requestHash: 'h' })
    const others = 5_000 // a busy day's keys since
    await adminQuery(`INSERT INTO ${scratch.name}.idempotency_keys (key, request_hash, plant_id, response, created_at)
      SELECT 'other:' || n, 'h', $1, '{}', $2 FROM generate_series(1, $3) AS n`, [id, Date.now(), others])
    for (let i = 8; i < 12; i++) await store.stock.move(id, { delta: -1, reason: 'sale' }, { key: `till:${i}`, requestHash: 'h' })
    assert.equal((await store.get(id))?.stock?.onHand, 88)
    // A backend reports its table statistics when it ends: the store's, once closed.
    await store.close()
    open = false
    let keys = { inserted: 0, read: 0 }
    for (let tries = 0; keys.inserted < others + 12 && tries < 100; tries++) {
      if (tries > 0) await new Promise((resolve) => setTimeout(resolve, 100))
      const [row] = await adminQuery<{ inserted: string, read: string }>(`SELECT n_tup_ins AS inserted, coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0) AS read
        FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'idempotency_keys'`, [scratch.name])
      keys = { inserted: Number(row.inserted), read: Number(row.read) }
    }
    assert.equal(keys.inserted, others + 12)
    assert.ok(keys.read < others, `${keys.read} key rows read by 4 sales among ${others} other keys: not by the key's index`)
  })

  test('a sale group finds its plants and their levels by their indexes, not by reading every plant (a small catalogue, its statements planned once)', async (t) => {
    const scratch = await freshSchema()
    t.after(() => scratch.drop())
    const plants = 400
    const first = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 86_400_000, pollIntervalMs: 60_000 })
    const ids = await Promise.all(Array.from({ length: plants }, (_, i) => plantOf(first, `Plant ${i}`)))
    await Promise.all(ids.map((id) => first.stock.move(id, { set: 100, reason: 'count' })))
    await first.close()
    // A backend reports its table statistics when it ends: the stores' once closed.
    const read = async (movements: number): Promise<Record<string, number>> => {
      for (let tries = 0; ; tries++) {
        const rows = await adminQuery<{ table: string, read: string, inserted: string }>(`SELECT relname AS table, coalesce(seq_tup_read, 0) AS read, n_tup_ins AS inserted
          FROM pg_stat_user_tables WHERE schemaname = $1 AND relname IN ('plants', 'stock_levels', 'stock_movements')`, [scratch.name])
        const ledger = Number(rows.find((r) => r.table === 'stock_movements')?.inserted ?? 0)
        if (ledger >= movements || tries >= 100) return Object.fromEntries(rows.map((r) => [r.table, Number(r.read)]))
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
    const before = await read(plants)
    const url = new URL(scratch.url)
    url.searchParams.set('pool_max', '1') // one connection, whose statements keep their plans
    const store = await openPostgresStore({ connectionString: url.toString(), feedRetentionMs: 86_400_000, pollIntervalMs: 60_000 })
    let open = true
    t.after(async () => { if (open) await store.close() })
    // More groups than PostgreSQL plans one by one before it keeps a plan for a statement.
    const groups = 10
    for (let g = 0; g < groups; g++) {
      await Promise.all([0, 1, 2].map((k) => store.stock.move(ids[(g * 37 + k * 101) % plants], { delta: -1, reason: 'sale' }, { key: `till:${g}:${k}`, requestHash: 'h' })))
    }
    await store.close()
    open = false
    const after = await read(plants + 3 * groups)
    // The store's start-up reads the plants once; a group planned with scans reads every plant (its write) and every level twice (its lock, its write).
    for (const table of ['plants', 'stock_levels']) {
      const rows = after[table] - before[table]
      assert.ok(rows <= plants, `${rows} rows of ${table} read one after another by ${groups} groups of 3 sales among ${plants} plants`)
    }
  })

  test('a key taken by another instance\'s request after the group looked (committed while it wrote): the group runs again and answers that request\'s result', async (t) => {
    const { store, url } = await open(t)
    const id = await plantOf(store, 'Monstera')
    const first = await store.stock.move(id, { delta: 3, reason: 'received' })
    // The other instance's sale, in flight: its key inserted, not yet committed.
    const other = new pg.Client({ connectionString: url })
    await other.connect()
    t.after(async () => { await other.end() })
    const answer = { ...first, movement: { ...first.movement, seq: 1234, delta: -1, reason: 'sale' }, replayed: false }
    await other.query('BEGIN')
    await other.query('INSERT INTO idempotency_keys (key, request_hash, plant_id, response, created_at) VALUES ($1, $2, $3, $4, $5)',
      ['till-1:sale-9', 'same', id, JSON.stringify(answer), Date.now()])
    const sale = store.stock.move(id, { delta: -1, reason: 'sale' }, { key: 'till-1:sale-9', requestHash: 'same' })
    // The store's group waits on the key's row until the other commits.
    await new Promise((resolve) => setTimeout(resolve, 300))
    await other.query('COMMIT')
    assert.deepEqual(await sale, { ...answer, replayed: true })
    // Nothing sold twice, and the ledger holds only what was applied.
    assert.deepEqual((await store.get(id))?.stock, { onHand: 3, reserved: 0, available: 3 })
    assert.equal((await store.stock.movements(id, undefined, 10))?.length, 1)
  })
})
