import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import Database from 'better-sqlite3'
import pg from 'pg'
import type { ListFilter, PlantStore } from '../../src/store/plant-store.js'
import { listQuery, rarestFirst } from '../../src/store/postgres/list-query.js'
import { migrate } from '../../src/store/postgres/migrate.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { listSql, type Driver } from '../../src/store/sqlite/list-query.js'
import { sqliteReads } from '../../src/store/sqlite/reads.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { ENGINES } from '../helpers/engines.js'
import { freshSchema } from '../helpers/postgres-engine.js'
import { tempDir } from '../helpers/process.js'

// A list query's cost must not depend on the order or number of the tags given, and no query may
// hold the service: the worst tag query is bounded, and one that cannot be is stopped and answered 503.

// Fewer on PostgreSQL, where filling through the API takes longer; enough that walking the first tag shows.
const PLANTS = (engine: string): number => Number(process.env.BOUNDS_PLANTS ?? (engine === 'sqlite' ? 30_000 : 8_000))
const COMMON = Array.from({ length: 10 }, (_, i) => `common-${i}`)

/** Fills a store fast: writes sent together share group commits. */
async function fill (store: PlantStore, count: number, tagsOf: (i: number) => string[]): Promise<void> {
  // PostgreSQL commits a group in one round trip per write: smaller groups stay within the deadline.
  const group = store.engine === 'sqlite' ? 2_000 : 100
  for (let i = 0; i < count; i += group) {
    await Promise.all(Array.from({ length: Math.min(group, count - i) }, (_, j) =>
      store.create({ name: `Plant ${i + j}`, category: null, tags: tagsOf(i + j), status: 'available' })))
  }
}

/** The median time of `runs` calls of `fn`, in ms. */
async function median (runs: number, fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < runs; i++) {
    const start = performance.now()
    await fn()
    times.push(performance.now() - start)
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)]
}

/** A store on the engine, and a look at how it plans a list: what the test asserts instead of a clock. */
interface Inspected { store: PlantStore, close: () => Promise<void>, worstRowsRead?: (filter: ListFilter) => Promise<number>, driverOf?: (filter: ListFilter) => Driver }

async function inspectedStore (engine: 'sqlite' | 'postgres'): Promise<Inspected> {
  if (engine === 'sqlite') {
    // On a file, so a reader of its own sees what the store wrote and says which driver it chose.
    const dir = tempDir('plants-bounds')
    const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
    const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
    let driver: Driver | undefined
    const reads = sqliteReads(db, { queryTimeoutMs: 60_000, onPlan: (d) => { driver = d } })
    return {
      store,
      close: async () => { db.close(); await store.close(); dir.remove() },
      driverOf: (filter) => {
        reads.list(filter)
        return driver!
      }
    }
  }
  const scratch = await freshSchema()
  await migrate({ connectionString: scratch.url }, undefined, () => {})
  const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 86_400_000 })
  const client = new pg.Client({ connectionString: scratch.url })
  await client.connect()
  return {
    store,
    close: async () => { await client.end(); await store.close(); await scratch.drop() },
    // The rows every scan of the list query read (EXPLAIN ANALYZE), its tags ordered as the store orders them.
    worstRowsRead: async (filter) => {
      await client.query('ANALYZE plants; ANALYZE plant_tags')
      const tags = await rarestFirst(client as unknown as pg.PoolClient, filter.tags ?? [])
      const { text, values } = listQuery({ ...filter, tags }, 'p.id')
      const { rows: [row] } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values)
      const scanned = (node: PlanNode): number => (/Scan/.test(node['Node Type']) ? node['Actual Rows'] * node['Actual Loops'] : 0) +
        (node.Plans ?? []).reduce((n, child) => n + scanned(child), 0)
      return scanned((row['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan)
    }
  }
}

interface PlanNode { 'Node Type': string, 'Actual Rows': number, 'Actual Loops': number, Plans?: PlanNode[] }

for (const engine of ENGINES) {
  describe(`bounded list queries on ${engine.name}`, { skip: engine.skip }, () => {
    test(`tag= 11 times, the common tags first and one no plant has last, never walks the common tags' rows (${PLANTS(engine.name)} plants)`, async (t) => {
      const inspected = await inspectedStore(engine.name)
      const { store } = inspected
      const app = await buildApp(testConfig({}), { store })
      t.after(async () => { await app.close(); await inspected.close() })
      await fill(store, PLANTS(engine.name), () => COMMON)
      const worstTags = [...COMMON, 'nobody-has-it']
      const worst = `/v3/plant?${worstTags.map((tag) => `tag=${tag}`).join('&')}`
      const res = await app.inject({ method: 'GET', url: worst })
      assert.equal(res.statusCode, 200)
      assert.deepEqual(res.json().items, [])
      // And the rarest tag leads whatever the order: a tag only the last plant has, given last.
      const rareTags = [...COMMON.slice(0, 5), 'rare']
      await store.create({ name: 'rare one', category: null, tags: rareTags, status: 'available' })
      const rare = await app.inject({ method: 'GET', url: `/v3/plant?${rareTags.map((tag) => `tag=${tag}`).join('&')}` })
      assert.deepEqual(rare.json().items.map((p: { name: string }) => p.name), ['rare one'])
      // What the bound stands for, without a clock: the query starts from the rare tag, so it reads
      // a handful of rows (PostgreSQL's plan may read a few more, by its statistics of the moment),
      // never the common tags' (every plant has them).
      const page = { afterId: 0, limit: 51 }
      if (inspected.worstRowsRead) {
        for (const tags of [worstTags, rareTags]) {
          const read = await inspected.worstRowsRead({ ...page, tags })
          assert.ok(read <= 50, `tags ${tags.join(',')}: the scans read ${read} rows of ${PLANTS(engine.name)} plants`)
        }
      }
      if (inspected.driverOf) {
        assert.deepEqual(inspected.driverOf({ ...page, tags: worstTags }), { kind: 'tag', tag: 'nobody-has-it' })
        assert.deepEqual(inspected.driverOf({ ...page, tags: rareTags }), { kind: 'tag', tag: 'rare' })
      }
      // The time as a diagnostic only: the house keeps clocks out of assertions.
      const byId = await median(15, () => app.inject({ method: 'GET', url: '/v3/plant/1' }))
      const tagged = await median(15, () => app.inject({ method: 'GET', url: worst }))
      t.diagnostic(`GET by id ${byId.toFixed(2)} ms, worst tag query ${tagged.toFixed(2)} ms (${(tagged / byId).toFixed(1)}x)`)
    })
  })
}

describe('a list query past its time limit (SQLite, synchronous)', () => {
  test('is stopped and answered 503 query-too-slow with Retry-After, and the service goes on answering', async (t) => {
    // Half the plants have tags a, half b: tag=a&tag=b must look at every candidate to find none.
    const store = openSqliteStore({ dataDir: ':memory:', feedRetentionMs: 86_400_000, queryTimeoutMs: 5 })
    const app = await buildApp(testConfig({}), { store })
    t.after(async () => { await app.close(); await store.close() })
    await fill(store, PLANTS('sqlite'), (i) => [i % 2 === 0 ? 'a' : 'b'])
    const res = await app.inject({ method: 'GET', url: '/v3/plant?tag=a&tag=b&q=plant' })
    assert.equal(res.statusCode, 503, res.body)
    assert.match(res.json().type, /query-too-slow$/)
    assert.equal(res.headers['retry-after'], '1')
    assert.match(res.json().detail, /time limit/)
    // The connection is left usable: the next queries answer.
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant?tag=a&limit=3' })).json().items.length, 3)
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/1' })).statusCode, 200)
    assert.equal((await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'after' } })).statusCode, 200)
  })
})

describe('the time guard of a SQLite list query', () => {
  test('is called per candidate only when a filter can reject candidates; a walk that rejects none stops at the limit', () => {
    const guarded = (filter: Parameters<typeof listSql>[0], driver: Parameters<typeof listSql>[1] = { kind: 'order' }): boolean =>
      listSql(filter, driver).text.includes('query_guard(')
    // Every candidate is answered: the walk reads `limit` rows at most.
    assert.equal(guarded({ afterId: 0, limit: 21 }), false)
    assert.equal(guarded({ afterId: 500, limit: 21 }), false)
    assert.equal(guarded({ afterId: 0, afterKey: 'm', sort: '-name', limit: 21 }), false)
    assert.equal(guarded({ tags: ['rare'], afterId: 9, limit: 21 }, { kind: 'tag', tag: 'rare' }), false)
    // A candidate can be turned down: the walk may read the whole catalogue, so the guard watches it.
    assert.equal(guarded({ statuses: ['sold'], afterId: 0, limit: 21 }), true)
    assert.equal(guarded({ category: 'fern', afterId: 0, limit: 21 }), true)
    assert.equal(guarded({ tags: ['a', 'b'], afterId: 0, limit: 21 }, { kind: 'tag', tag: 'a' }), true)
    assert.equal(guarded({ terms: ['ste'], afterId: 0, limit: 21 }, { kind: 'fts' }), true)
    assert.equal(guarded({ terms: ['ste'], sort: 'name', afterId: 0, limit: 21 }), true)
  })
})
