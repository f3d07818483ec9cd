import assert from 'node:assert/strict'
import { performance } from 'node:perf_hooks'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { listSql } from '../../src/store/sqlite/list-query.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { ENGINES } from '../helpers/engines.js'

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

for (const engine of ENGINES) {
  describe(`bounded list queries on ${engine.name}`, { skip: engine.skip }, () => {
    test(`tag= 11 times, the common tags first and one no plant has last, costs about a GET by id (${PLANTS(engine.name)} plants)`, async (t) => {
      const store = await engine.open()
      const app = await buildApp(testConfig({}), { store })
      t.after(async () => { await app.close(); await store.close() })
      await fill(store, PLANTS(engine.name), () => COMMON)
      const worst = `/v3/plant?${[...COMMON, 'nobody-has-it'].map((tag) => `tag=${tag}`).join('&')}`
      const res = await app.inject({ method: 'GET', url: worst })
      assert.equal(res.statusCode, 200)
      assert.deepEqual(res.json().items, [])
      // And the rarest tag leads whatever the order: a tag only the last plant has, given last.
      await store.create({ name: 'rare one', category: null, tags: [...COMMON.slice(0, 5), 'rare'], status: 'available' })
      const rare = await app.inject({ method: 'GET', url: `/v3/plant?${[...COMMON.slice(0, 5), 'rare'].map((tag) => `tag=${tag}`).join('&')}` })
      assert.deepEqual(rare.json().items.map((p: { name: string }) => p.name), ['rare one'])
      const byId = await median(15, () => app.inject({ method: 'GET', url: '/v3/plant/1' }))
      const tagged = await median(15, () => app.inject({ method: 'GET', url: worst }))
      t.diagnostic(`GET by id ${byId.toFixed(2)} ms, worst tag query ${tagged.toFixed(2)} ms (${(tagged / byId).toFixed(1)}x)`)
      // Generous: walking the first tag's rows, as before, costs hundreds of times a GET by id.
      assert.ok(tagged < 60 * byId, `the worst tag query took ${(tagged / byId).toFixed(1)}x a GET by id`)
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
