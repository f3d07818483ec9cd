import assert from 'node:assert/strict'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import type { Driver } from '../../src/store/sqlite/list-query.js'
import { sqliteReads } from '../../src/store/sqlite/reads.js'
import { SORTED_SHARE } from '../../src/store/sqlite/list-plan.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { tempDir } from '../helpers/process.js'

// A count of inStock or lowStock on SQLite walks the filter's partial index, where a list of the
// same filter (when it matches many) walks the id order: to count up to the cap the id walk reads
// every plant between the matches (bench/stock.ts: at 1,000,000 plants, 1 in 12 low, lowStock's p99
// was 44× its p99 at 1,000). PostgreSQL's planner picks its partial indexes by itself.

test('SQLite: a count of inStock or lowStock that matches many walks the filter\'s partial index, and counts what the list finds', async (t) => {
  const dir = tempDir('stock-count-plan')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
  // 40 plants: 30 track stock, one in three of those at or under its threshold of 2.
  for (let i = 0; i < 40; i++) {
    const { plant } = await store.create({ name: `Plant ${i}`, category: null, tags: [], status: 'available', lowStockAt: 2 })
    if (i % 4 !== 0) await store.stock.move(plant.id, { set: i % 3 === 0 ? 1 : 10, reason: 'count' })
  }
  await store.close()
  const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
  t.after(() => db.close())
  const plans: Driver[] = []
  // 5 rows are "many" here, as 2,000 are in a catalogue of millions: neither filter's set is small.
  const reads = sqliteReads(db, { queryTimeoutMs: 1000, plan: { small: 5, walkBudget: 1000, sortedShare: SORTED_SHARE }, onPlan: (driver) => plans.push(driver) })
  const all = (filter: { inStock?: boolean, lowStock?: boolean }): number => reads.list({ ...filter, afterId: 0, limit: 100 }).length
  for (const [filter, column] of [[{ inStock: true }, 'inStock'], [{ lowStock: true }, 'lowStock']] as const) {
    plans.length = 0
    const listed = all(filter)
    assert.deepEqual(plans, [{ kind: 'order' }], `a list of ${JSON.stringify(filter)} walks the id order`)
    plans.length = 0
    assert.equal(reads.count(filter, 10_001), listed, `the count of ${JSON.stringify(filter)} is the list's length`)
    assert.deepEqual(plans, [{ kind: 'column', column }], `the count of ${JSON.stringify(filter)} walks its partial index`)
    // Capped as the route caps it.
    assert.equal(reads.count(filter, 3), 3)
  }
  assert.equal(all({ inStock: true }), 30)
  assert.equal(all({ lowStock: true }), 10)
})
