import assert from 'node:assert/strict'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { nameOrderKey, orderKeyDecides } from '../../src/catalogue/name-order.js'
import { nameKey } from '../../src/catalogue/name-key.js'
import type { PlantInput } from '../../src/catalogue/plant.js'
import { positionOf } from '../../src/catalogue/query.js'
import { foldKey, keyHolds } from '../../src/catalogue/search-key.js'
import type { ListFilter } from '../../src/store/plant-store.js'
import { sqliteReads } from '../../src/store/sqlite/reads.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { tempDir } from '../helpers/process.js'

// Sorted by name, a search's long terms without digits are checked on the name index's entries (the
// name order key), so a walk that meets many names without the term reads none of their rows.

const DAY = 86_400_000
const plant = (name: string): PlantInput => ({ name, category: null, tags: [], status: 'available' })
// 100 plants play 1,000,000: 5 are "many", a walk may read 12 rows.
const LIMITS = { small: 5, walkBudget: 12, sortedShare: 1 / 20 }

const NAMES = ['Monstera 7', 'Monstera 007', 'Monstera 12', 'Mon5tera', 'ＭＯＮＳＴＥＲＡ ５', 'Bégonia Rex', 'Begonia 1e', 'Dahlia Café au Lait',
  'Dahlia Cafe au Lait #12', 'Sterabug 3', 'x stera', 'Monstera deliciosa #0042', 'ZZ plant', 'Zamioculcas 10 000', 'Ficus 1stera']
/** Names with GLOB's and LIKE's signs, each common enough (6 plants) to be walked rather than sorted. */
const SIGNS = ['Odd [*?] name', 'Odd [x] name', 'Oddxyz name', 'Odd *? name', 'Odd*?name', 'Odd%real_name', 'Oddxrealyname']

test('A term without digits (of three characters or more) is in a name\'s folded key exactly where it is in its name order key', () => {
  const terms = ['stera', 'ste', 'ego', 'onia', 'fé', 'cafe', 'au la', 'ficus', 'mon5', 'a 1', '12', '#12', 'st', 'ra ', ' re', 'x s']
  for (const name of NAMES) {
    const folded = foldKey(nameKey(name))
    for (const term of terms.map((t) => foldKey(t))) {
      if (orderKeyDecides(term)) assert.equal(nameOrderKey(name).includes(term), keyHolds(folded, term), `${term} in ${name}`)
    }
  }
  // Terms the key cannot decide: short ones (word starts), those with digits (their runs are rewritten in the key).
  assert.deepEqual(['stera', 'fé', 'au la', 'mon5', '12', 'st', ' re', '\u0001ab'].map(orderKeyDecides), [true, false, true, false, false, false, true, false])
})

test('SQLite: a common term sorted by name walks the name index past the names without it reading none of their rows: the first walk fills the page, and every page is the names that hold the terms, in name order, before and after writes', async (t) => {
  const dir = tempDir('plants-name-key-terms')
  t.after(dir.remove)
  const filling = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  // First in name order and none of them asked for: 100 Aloes, then the names above, each three times.
  for (let i = 0; i < 100; i++) await filling.create(plant(`Aloe ${i}`))
  for (let i = 0; i < 3; i++) for (const name of NAMES) await filling.create(plant(name))
  for (let i = 0; i < 6; i++) for (const name of SIGNS) await filling.create(plant(name))
  // Closed cleanly, the search index holds every name: each term is counted as common there.
  await filling.close()
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  t.after(() => store.close())
  const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
  t.after(() => db.close())
  const plans: string[] = []
  const reads = sqliteReads(db, { queryTimeoutMs: 1000, plan: LIMITS, onPlan: (driver) => plans.push(driver.kind) })
  // What the pages must be, from the rows and the model's own match (catalogue/search-key.ts).
  const rows = db.prepare<[], { id: number, name: string, key: string }>('SELECT id, name, name_order_key AS key FROM plants')
  const truth = (terms: string[], desc: boolean): string[] => rows.all()
    .filter((row) => terms.every((term) => keyHolds(foldKey(nameKey(row.name)), term)))
    .sort((a, b) => (Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)) || a.id - b.id) * (desc ? -1 : 1))
    .map((row) => row.name)
  const pages = (terms: string[], sort: 'name' | '-name'): string[] => {
    let after: Pick<ListFilter, 'afterId' | 'afterKey'> = { afterId: 0 }
    const names: string[] = []
    for (;;) {
      const page = reads.list({ terms, sort, ...after, limit: 4 })
      names.push(...page.map((p) => p.name))
      if (page.length < 4) return names
      const { id, key } = positionOf(page[page.length - 1], sort)
      after = { afterId: id, afterKey: key }
    }
  }

  plans.length = 0
  assert.deepEqual(reads.list({ terms: ['stera'], sort: 'name', afterId: 0, limit: 4 }).map((p) => p.name), truth(['stera'], false).slice(0, 4))
  // The 100 Aloes cost no row each: the walk's 12 rows were enough, never given up for a member walk.
  assert.deepEqual(plans, ['order'])

  const check = (): void => {
    plans.length = 0
    // GLOB's (and LIKE's) signs in a term are the characters themselves.
    for (const terms of [['stera'], ['ego'], ['cafe'], ['au', 'lait'], ['stera', '12'], ['stera', '5'], ['mon5'], ['lia', 'cafe', 'ait'], ['[*?]'], ['d*?n'], ['[x]'], ['d%real_'], ['odd']]) {
      for (const sort of ['name', '-name'] as const) assert.deepEqual(pages(terms, sort), truth(terms, sort === '-name'), `${terms.join(' ')} by ${sort}`)
    }
    assert.ok(plans.filter((kind) => kind === 'order').length >= 40, plans.join(' '))
  }
  check()
  // A name written after the reader opened, into the term and out of it (the search index's backlog
  // holds these; the walk reads each entry's key as it is now).
  const [begonia] = await store.list({ terms: ['ego'], sort: 'name', afterId: 0, limit: 1 })
  await store.patch(begonia.id, { name: 'Monstera Bégonia' })
  const [monstera] = await store.list({ terms: ['stera'], sort: 'name', afterId: 0, limit: 1 })
  await store.patch(monstera.id, { name: 'Ficus' })
  const [aloe] = await store.list({ sort: 'name', afterId: 0, limit: 1 })
  await store.patch(aloe.id, { name: 'Aloe stera' })
  check()
  assert.equal(pages(['stera'], 'name')[0], 'Aloe stera')
})
