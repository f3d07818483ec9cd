import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { LEDGER_CHAIN_VERSION } from '../../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { tempDir } from '../helpers/process.js'

// SQLite keeps each plant's ledger as a chain (stock-ledger.ts, migration 27): the plant's row (or
// its trash row) names its newest movement, each movement the one before it; no (plant_id, seq)
// index. The ledger pages, the trash (restore, purge), reservation commits and the migration from a
// catalogue of 26 migrations, whose ledger had that index, all read and keep the chains.

const FEED = { feedRetentionMs: 86_400_000 }

async function withApp<T> (store: PlantStore, fn: (app: FastifyInstance) => Promise<T>): Promise<T> {
  const app = await buildApp(testConfig({}), { store })
  try { return await fn(app) } finally { await app.close() }
}

async function move (app: FastifyInstance, id: number, body: object): Promise<number> {
  const res = await app.inject({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload: body })
  assert.equal(res.statusCode, 201, res.body)
  return res.json().movement.seq
}

/** A plant's whole ledger, newest first, read `limit` a page through the cursors; and the first page alone. */
async function ledger (app: FastifyInstance, id: number, limit = 2): Promise<Array<[number, number, string]>> {
  const all: Array<[number, number, string]> = []
  let cursor: string | null = null
  do {
    const res: { statusCode: number, body: string, json: () => any } = await app.inject({ method: 'GET', url: `/v3/plant/${id}/stock/movements?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}` })
    assert.equal(res.statusCode, 200, res.body)
    const page = res.json()
    assert.ok(page.items.length <= limit)
    all.push(...page.items.map((m: { seq: number, delta: number, reason: string }) => [m.seq, m.delta, m.reason] as [number, number, string]))
    cursor = page.nextCursor
  } while (cursor !== null)
  return all
}

/** Two plants' movements interleaved, a third's, a reservation committed across two of them. */
async function writeLedgers (app: FastifyInstance): Promise<{ fern: number, palm: number, ivy: number, seqs: Record<string, number[]> }> {
  const add = async (name: string): Promise<number> => (await app.inject({ method: 'POST', url: '/v3/plant', payload: { name } })).json().id
  const [fern, palm, ivy] = [await add('Fern'), await add('Palm'), await add('Ivy')]
  const seqs: Record<string, number[]> = { fern: [], palm: [], ivy: [] }
  seqs.fern.push(await move(app, fern, { delta: 10, reason: 'received' }))
  seqs.palm.push(await move(app, palm, { delta: 5, reason: 'received' }))
  seqs.fern.push(await move(app, fern, { delta: -1, reason: 'sale' }))
  seqs.ivy.push(await move(app, ivy, { delta: 3, reason: 'received' }))
  seqs.palm.push(await move(app, palm, { delta: -2, reason: 'sale' }))
  const held = await app.inject({ method: 'POST', url: '/v3/reservations', payload: { lines: [{ plant: fern, quantity: 2 }, { plant: palm, quantity: 1 }], ttlSeconds: 900 } })
  assert.equal(held.statusCode, 201, held.body)
  const committed = await app.inject({ method: 'POST', url: `/v3/reservations/${String(held.json().id)}/commit` })
  assert.equal(committed.statusCode, 200, committed.body)
  for (const sale of committed.json().sales as Array<{ plant: number, movement: { seq: number } }>) seqs[sale.plant === fern ? 'fern' : 'palm'].push(sale.movement.seq)
  seqs.fern.push(await move(app, fern, { set: 4, reason: 'count' }))
  seqs.palm.push(await move(app, palm, { delta: 1, reason: 'return' }))
  return { fern, palm, ivy, seqs }
}

const EXPECTED: Record<'fern' | 'palm' | 'ivy', Array<[number, string]>> = {
  fern: [[0, 'count'], [-2, 'sale'], [-1, 'sale'], [10, 'received']],
  palm: [[1, 'return'], [-1, 'sale'], [-2, 'sale'], [5, 'received']],
  ivy: [[3, 'received']]
}
/** The movements at `seqs` (oldest first) as the ledger lists them, newest first, with `expected`'s deltas and reasons. */
const withSeqs = (seqs: number[], expected: Array<[number, string]>): Array<[number, number, string]> =>
  [...seqs].reverse().map((seq, i) => [seq, expected[i][0], expected[i][1]])

test('SQLite: each plant\'s ledger reads newest first through its pages, a reservation\'s sales and a count included, however the plants\' movements interleave', async (t) => {
  const dir = tempDir('plants-ledger-chain')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, ...FEED })
  t.after(() => store.close())
  await withApp(store, async (app) => {
    const { fern, palm, ivy, seqs } = await writeLedgers(app)
    // A count of 4 from 7 is a delta of -3.
    assert.deepEqual(await ledger(app, fern), withSeqs(seqs.fern, [[-3, 'count'], ...EXPECTED.fern.slice(1)]))
    assert.deepEqual(await ledger(app, palm, 3), withSeqs(seqs.palm, EXPECTED.palm))
    assert.deepEqual(await ledger(app, ivy), withSeqs(seqs.ivy, EXPECTED.ivy))
    // A cursor that is another plant's movement still pages this plant's: the movements below it.
    const below = await app.inject({ method: 'GET', url: `/v3/plant/${fern}/stock/movements?cursor=${seqs.ivy[0]}` })
    assert.deepEqual(below.json().items.map((m: { seq: number }) => m.seq), seqs.fern.filter((s) => s < seqs.ivy[0]).reverse())
    const none = await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Untracked' } })
    assert.deepEqual((await app.inject({ method: 'GET', url: `/v3/plant/${String(none.json().id)}/stock/movements` })).json().items, [])
  })
  const db = connect(`${dir.path}/catalogue.db`)
  t.after(() => db.close())
  assert.equal(db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'stock_movements_plant'").get(), undefined, 'the ledger has no (plant_id, seq) index')
})

test('SQLite: a plant in the trash keeps its ledger (read, and carried back by a restore); a purge deletes its movements and no other plant\'s', async (t) => {
  const dir = tempDir('plants-ledger-trash')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, ...FEED })
  t.after(() => store.close())
  await withApp(store, async (app) => {
    const { fern, palm, ivy, seqs } = await writeLedgers(app)
    const fernLedger = await ledger(app, fern)
    assert.equal((await app.inject({ method: 'DELETE', url: `/v3/plant/${fern}` })).statusCode, 204)
    assert.deepEqual(await ledger(app, fern), fernLedger)
    assert.equal((await app.inject({ method: 'POST', url: `/v3/trash/${fern}/restore` })).statusCode, 200)
    const after = await move(app, fern, { delta: -1, reason: 'sale' })
    assert.deepEqual(await ledger(app, fern), [[after, -1, 'sale'], ...fernLedger])

    assert.equal((await app.inject({ method: 'DELETE', url: `/v3/plant/${palm}` })).statusCode, 204)
    assert.equal((await app.inject({ method: 'DELETE', url: `/v3/trash/${palm}` })).statusCode, 204)
    assert.equal((await app.inject({ method: 'GET', url: `/v3/plant/${palm}/stock/movements` })).statusCode, 404)
    const db = connect(`${dir.path}/catalogue.db`)
    try {
      assert.equal(db.prepare('SELECT count(*) FROM stock_movements WHERE plant_id = ?').pluck().get(palm), 0, 'the purged plant\'s movements are gone')
      assert.deepEqual(db.prepare('SELECT plant_id, count(*) AS n FROM stock_movements GROUP BY plant_id ORDER BY plant_id').raw().all(),
        [[fern, seqs.fern.length + 1], [ivy, 1]])
    } finally {
      db.close()
    }
    assert.deepEqual(await ledger(app, ivy), withSeqs(seqs.ivy, EXPECTED.ivy))
  })
})

test('SQLite: migration 27 chains a ledger written with the (plant_id, seq) index (26 migrations), for live plants and one in the trash', async (t) => {
  const dir = tempDir('plants-ledger-migration')
  t.after(dir.remove)
  const first = openSqliteStore({ dataDir: dir.path, ...FEED })
  const written = await withApp(first, async (app) => {
    const plants = await writeLedgers(app)
    const ledgers = { fern: await ledger(app, plants.fern), palm: await ledger(app, plants.palm), ivy: await ledger(app, plants.ivy) }
    assert.equal((await app.inject({ method: 'DELETE', url: `/v3/plant/${plants.ivy}` })).statusCode, 204)
    return { ...plants, ledgers }
  })
  await first.close()

  // The catalogue as 26 migrations left it: no chain columns, the ledger's (plant_id, seq) index and
  // the levels' (location, on_hand) one.
  const db = connect(`${dir.path}/catalogue.db`)
  db.exec(`
    ALTER TABLE stock_movements DROP COLUMN prev;
    ALTER TABLE plants DROP COLUMN ledger_seq;
    ALTER TABLE trash DROP COLUMN ledger_seq;
    CREATE INDEX stock_movements_plant ON stock_movements (plant_id, seq);
    DROP INDEX stock_levels_location;
    CREATE INDEX stock_levels_location ON stock_levels (location, on_hand);
  `)
  db.pragma(`user_version = ${LEDGER_CHAIN_VERSION}`)
  db.close()

  const store = openSqliteStore({ dataDir: dir.path, ...FEED })
  t.after(() => store.close())
  await withApp(store, async (app) => {
    assert.deepEqual(await ledger(app, written.fern), written.ledgers.fern)
    assert.deepEqual(await ledger(app, written.palm, 1), written.ledgers.palm)
    assert.deepEqual(await ledger(app, written.ivy), written.ledgers.ivy, 'the trashed plant\'s ledger')
    // The chains go on from their heads: a restored plant's, and a live one's.
    assert.equal((await app.inject({ method: 'POST', url: `/v3/trash/${written.ivy}/restore` })).statusCode, 200)
    const ivySale = await move(app, written.ivy, { delta: -1, reason: 'sale' })
    const fernSale = await move(app, written.fern, { delta: -1, reason: 'sale' })
    assert.deepEqual(await ledger(app, written.ivy), [[ivySale, -1, 'sale'], ...written.ledgers.ivy])
    assert.deepEqual(await ledger(app, written.fern), [[fernSale, -1, 'sale'], ...written.ledgers.fern])
  })
  const after = connect(`${dir.path}/catalogue.db`)
  t.after(() => after.close())
  assert.ok(Number(after.pragma('user_version', { simple: true })) > LEDGER_CHAIN_VERSION, 'migration 27 ran')
  assert.deepEqual(after.prepare("SELECT name FROM sqlite_master WHERE tbl_name IN ('stock_movements', 'stock_levels') AND type = 'index' AND sql IS NOT NULL ORDER BY name").pluck().all(),
    ['stock_levels_location'])
  assert.equal(after.prepare("SELECT sql FROM sqlite_master WHERE name = 'stock_levels_location'").pluck().get(), 'CREATE INDEX stock_levels_location ON stock_levels (location)')
})
