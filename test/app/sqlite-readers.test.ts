import assert from 'node:assert/strict'
import { test } from 'node:test'
import { readdirSync, readFileSync } from 'node:fs'
import Database from 'better-sqlite3'
import { FeedGone, QueryTooSlow } from '../../src/catalogue/errors.js'
import type { PlantInput } from '../../src/catalogue/plant.js'
import { positionOf, SORTS, type Sort } from '../../src/catalogue/query.js'
import type { ListFilter, PlantStore } from '../../src/store/plant-store.js'
import { chooseDriver, SORTED_SHARE } from '../../src/store/sqlite/list-plan.js'
import { listSql } from '../../src/store/sqlite/list-query.js'
import { sqliteReads } from '../../src/store/sqlite/reads.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { tempDir } from '../helpers/process.js'

// On a file, SQLite's expensive reads (lists, counts, feed, history and trash pages) run in reader
// threads, each on a read-only connection of its own: the event loop keeps turning while they run.

const DAY = 86_400_000
const plant = (i: number, over: Partial<PlantInput> = {}): PlantInput =>
  ({ name: `Plant ${i}`, category: i % 2 === 0 ? 'Succulents' : 'Ferns', tags: ['green'], status: 'available', price: `${i}.50`, ...over })

const T0 = Date.UTC(2026, 0, 1)

function fileStore (t: { after: (fn: () => unknown) => void }, options: { readers?: number, searchRejectBudget?: number, now?: () => number } = {}): PlantStore {
  const dir = tempDir('plants-readers')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY, ...options })
  t.after(() => store.close())
  return store
}

/** The store's reader threads: what they are doing now. */
const readersOf = (store: PlantStore): { load: { waiting: number, running: number } } => (store as unknown as { readers: { load: { waiting: number, running: number } } }).readers

const page = { afterId: 0, limit: 50 }
const READS: Array<[string, (store: PlantStore) => Promise<unknown>]> = [
  ['a list', (s) => s.list({ ...page, category: 'ferns', sort: '-name' })],
  ['a search', (s) => s.list({ ...page, terms: ['plant'] })],
  ['a count', (s) => s.count({ tags: ['green'] }, 10_000)],
  ['a page of the feed', (s) => s.changes(0, 1000)],
  ['a page of history', (s) => s.history(1, undefined, 50)],
  ['a page of the trash', (s) => s.trash(undefined, 50)]
]

test('SQLite file: lists, counts, searches, feed, history and trash pages run off the event loop, and answer as on it', async (t) => {
  // One clock for both, so that the two catalogues are the same to the millisecond.
  const onFile = fileStore(t, { now: () => T0 })
  const inMemory = openSqliteStore({ dataDir: ':memory:', feedRetentionMs: DAY, now: () => T0 })
  t.after(() => inMemory.close())
  for (const store of [onFile, inMemory]) {
    for (let i = 0; i < 40; i++) await store.create(plant(i))
    await store.remove(3)
  }
  const readers = readersOf(onFile)
  for (const [what, read] of READS) {
    const threaded = read(onFile)
    // Asked, and not yet done: the read is with a thread while this one goes on.
    const { waiting, running } = readers.load
    assert.equal(waiting + running, 1, `${what} on a file is with a reader thread`)
    assert.deepEqual(await threaded, await read(inMemory), `${what} answers the same in a reader thread`)
    assert.deepEqual(readers.load, { waiting: 0, running: 0 })
  }
})

test('SQLite file: a page with no filter (only a sort and a cursor) is read on the event loop, every sort, and is the page a thread reads', async (t) => {
  const store = fileStore(t)
  for (let i = 0; i < 30; i++) await store.create(plant(i, { price: i % 4 === 0 ? null : `${(i * 7) % 30}.50` }))
  const readers = readersOf(store)
  const threaded = fileStore(t)
  for (let i = 0; i < 30; i++) await threaded.create(plant(i, { price: i % 4 === 0 ? null : `${(i * 7) % 30}.50` }))
  for (const sort of SORTS) {
    const first = store.list({ afterId: 0, limit: 10, sort })
    // Answered before the call returned to this turn: no thread was asked.
    assert.deepEqual(readers.load, { waiting: 0, running: 0 }, `sort=${sort}: no reader thread asked`)
    const mine = (await first).map((p) => p.id)
    // A filter that matches every plant sends the same page through a thread.
    const other = threaded.list({ afterId: 0, limit: 10, sort, tags: ['green'] })
    assert.equal(readersOf(threaded).load.running + readersOf(threaded).load.waiting, 1)
    assert.deepEqual(mine, (await other).map((p) => p.id), `sort=${sort}: the same page`)
    assert.equal(mine.length, 10)
  }
  // A filter of any kind goes to a thread.
  const filtered = store.list({ afterId: 0, limit: 10, priceMin: 100 })
  assert.equal(readers.load.running + readers.load.waiting, 1)
  await filtered
})

test('SQLite file: a read in a reader thread sees every write acknowledged before it was asked', async (t) => {
  const store = fileStore(t)
  for (let i = 0; i < 30; i++) {
    const { plant: created } = await store.create(plant(i, { tags: ['fresh'] }))
    const listed = await store.list({ ...page, tags: ['fresh'], sort: '-id' })
    assert.equal(listed[0]?.id, created.id, `write ${i} is in the next list`)
    assert.equal(await store.count({ tags: ['fresh'] }, 1000), i + 1)
    const feed = await store.changes(0, 1000)
    assert.equal(feed.items.at(-1)?.id, created.id)
  }
})

test('SQLite file: refusals cross the thread as the store\'s own errors', async (t) => {
  const store = fileStore(t, { searchRejectBudget: 1 })
  for (let i = 0; i < 5; i++) await store.create(plant(i, { name: `Plant aaa ${i}` }))
  const head = await store.head()
  await assert.rejects(store.changes(head + 10, 10), (err: unknown) => err instanceof FeedGone && err.reason === 'ahead')
  // "aaaa" is looked up by its trigram "aaa", which every name holds: each is a rejected candidate.
  await assert.rejects(store.list({ ...page, terms: ['aaaa'] }), QueryTooSlow)
})

test('SQLite file: reads in flight when the store closes are answered; a reader thread that stopped is replaced', async (t) => {
  const dir = tempDir('plants-readers')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY, readers: 2 })
  for (let i = 0; i < 20; i++) await store.create(plant(i))
  const pool = (store as unknown as { readers: { readers: Array<{ worker: { terminate (): Promise<number> } }> } }).readers
  // Filtered (by a tag every plant has): a page with no filter at all is read on the event loop.
  await store.list({ ...page, tags: ['green'] })
  await pool.readers[0].worker.terminate()
  assert.equal((await store.list({ ...page, tags: ['green'], sort: 'name' })).length, 20, 'the next read has a thread')
  const inFlight = Promise.all([store.list({ ...page, tags: ['green'], sort: '-price' }), store.count({}, 100), store.changes(0, 100), store.list({ ...page, category: 'ferns' })])
  await store.close()
  const [listed, counted, feed, ferns] = await inFlight
  assert.equal(listed.length, 20)
  assert.equal(counted, 20)
  assert.equal(feed.items.length, 20)
  assert.equal(ferns.length, 10)
})

// Plans: a filter that matches few plants leads the walk through its own index and sorts what it
// found, whatever the sort; only a filter matching many walks the sort's index (where it meets a
// match soon). Seen in SQLite's own plan: no walk of the plants table along an index that the filter
// does not bound (a SCAN), which on 1,000,000 plants reads them all when the filter matches none.
const RARE: Array<[string, Omit<ListFilter, 'afterId' | 'limit'>]> = [
  ['category', { category: 'cacti' }],
  ['status', { statuses: ['sold'] }],
  ['statuses', { statuses: ['sold', 'pending'] }],
  ['tag', { tags: ['rare'] }],
  ['q', { terms: ['zebra'] }],
  ['price range', { priceMin: 99_000, priceMax: 99_100 }],
  ['updatedSince', { updatedSince: Date.now() + 365 * DAY }],
  ['sku', { sku: 'ZZ-1' }],
  ['barcode', { barcode: '4006381333931' }]
]

test('SQLite: every filter that matches few plants, with every sort, is read through its own index, never a walk of the catalogue', async (t) => {
  const dir = tempDir('plants-plans')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  for (let i = 0; i < 60; i++) await store.create(plant(i, i === 7 ? { category: 'Cacti', status: 'sold', tags: ['rare'], name: 'Zebra haworthia', sku: 'ZZ-1', barcode: '4006381333931', price: '990.00' } : {}))
  await store.close()
  const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
  t.after(() => db.close())
  sqliteReads(db, { queryTimeoutMs: 1000 }) // its SQL functions, which the statements name
  const probe = (text: string, args: unknown[]): number => db.prepare(text).pluck().get(...args) as number
  for (const [what, filter] of RARE) {
    for (const sort of SORTS as readonly Sort[]) {
      const full: ListFilter = { ...filter, sort, afterId: 0, limit: 50 }
      const { text, args } = listSql(full, chooseDriver(full, probe))
      const plan = (db.prepare(`EXPLAIN QUERY PLAN ${text}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail)
      const walks = plan.filter((step) => /^SCAN p\b/.test(step))
      assert.deepEqual(walks, [], `${what} sorted by ${sort}: ${plan.join('; ')}`)
    }
  }
})

test('SQLite: a filter that matches many plants walks the sort\'s own index', () => {
  const filter: ListFilter = { category: 'ferns', priceMin: 0, sort: 'name', afterId: 0, limit: 50 }
  assert.deepEqual(chooseDriver(filter, () => 2_000), { kind: 'order' })
  assert.deepEqual(chooseDriver(filter, (text) => text.includes('plants_price') ? 12 : 2_000), { kind: 'column', column: 'price' })
})

test('SQLite: filters each common but never together, sorted by name: the walk of the name index gives up after its row budget and the rarest filter\'s rows are sorted instead', async (t) => {
  const dir = tempDir('plants-plans')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  // Tag a on the even plants, b on the odd ones, c on one in three: a and b never meet, a and c do.
  for (let i = 0; i < 60; i++) await store.create(plant(i, { tags: [i % 2 === 0 ? 'a' : 'b', ...(i % 3 === 0 ? ['c'] : [])] }))
  await store.close()
  const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
  t.after(() => db.close())
  const plans: string[] = []
  // A catalogue of 60 plays one of millions: 5 rows are "many", and a walk may read 12.
  const reads = sqliteReads(db, { queryTimeoutMs: 1000, plan: { small: 5, walkBudget: 12, sortedShare: 1 }, onPlan: (driver) => plans.push(driver.kind) })
  assert.deepEqual(reads.list({ tags: ['a', 'b'], sort: 'name', afterId: 0, limit: 10 }), [])
  assert.deepEqual(plans, ['tag'], 'the walk gave up and a tag\'s rows were read')
  // Together often enough, the walk fills its page within its budget.
  const both = reads.list({ tags: ['a', 'c'], sort: '-name', afterId: 0, limit: 2 })
  assert.deepEqual(both.map((p) => p.name), ['Plant 54', 'Plant 48'])
  assert.deepEqual(plans, ['tag', 'order'])
})

test('SQLite file: a reader thread runs at a lower priority than the event loop (Linux nice +10), so the loop and the writer are scheduled first', { skip: process.platform !== 'linux' && 'Linux only' }, async (t) => {
  const store = fileStore(t)
  await store.create(plant(1))
  await store.list({ ...page, tags: ['green'] })
  // /proc/self/task/TID/stat: the 19th field is the thread's nice value (after the name in parentheses).
  const niceOf = (tid: string): number => Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1].split(' ')[16])
  const own = niceOf(String(process.pid))
  const nicer = readdirSync('/proc/self/task').filter((tid) => niceOf(tid) === Math.min(19, own + 10))
  assert.ok(nicer.length >= 1, 'the reader thread runs 10 lower')
})

test('SQLite: a common term sorted by price walks the price index past the names it never suggested (the unpriced, first in -price) without counting them as the search\'s false matches', async (t) => {
  const dir = tempDir('plants-plans')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  for (let i = 0; i < 10; i++) await store.create(plant(i, { name: `Philodendron ${i}`, price: null }))
  for (let i = 0; i < 10; i++) await store.create(plant(i, { name: `Monstera ${i}`, price: `${10 + i}.00` }))
  await store.close()
  const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
  t.after(() => db.close())
  const plans: string[] = []
  // 3 false matches allowed; "monstera" in 10 names of 20 is "many" here, so the price index is walked.
  const reads = sqliteReads(db, { queryTimeoutMs: 1000, searchRejectBudget: 3, plan: { small: 5, walkBudget: 1000, sortedShare: SORTED_SHARE }, onPlan: (driver) => plans.push(driver.kind) })
  const page = reads.list({ terms: ['monstera'], sort: '-price', afterId: 0, limit: 3 })
  assert.deepEqual(page.map((p) => p.name), ['Monstera 9', 'Monstera 8', 'Monstera 7'])
  assert.deepEqual(plans, ['order'])
})

test('SQLite: a large set whose plants sit together far along the sort\'s order (a common term, a common category) is met by a member walk of the sort\'s index: the same pages, cursor after cursor, as sorting the set whole', async (t) => {
  const dir = tempDir('plants-plans')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  // First in name order and in -price order (unpriced), none of them asked for: 100 Aloes.
  for (let i = 0; i < 100; i++) await store.create(plant(i, { name: `Aloe ${i}`, category: null, tags: ['a'], price: null }))
  // Then Monsteras (Ferns, a price shared by three) and Zamias (last in name order), some names twice.
  for (let i = 0; i < 100; i++) {
    const monstera = i % 5 < 2
    await store.create(plant(i, { name: monstera ? `Monstera ${i % 17}` : `Zamia ${i}`, category: monstera ? 'Ferns' : 'Cycads', tags: [i % 2 === 0 ? 'a' : 'b'], price: `${10 + (i % 13)}.00`, status: monstera ? 'sold' : 'available' }))
  }
  await store.close()
  const open = (plan: { small: number, walkBudget: number, sortedShare: number }, plans: string[]): ReturnType<typeof sqliteReads> => {
    const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
    t.after(() => db.close())
    return sqliteReads(db, { queryTimeoutMs: 1000, plan, onPlan: (driver) => plans.push(driver.kind) })
  }
  // 200 plants play 1,000,000: 5 are "many", a walk may read 12, and a set of more than 10 is walked as members.
  const walked: string[] = []
  const members = open({ small: 5, walkBudget: 12, sortedShare: 1 / 20 }, walked)
  const sortedWhole = open({ small: 5, walkBudget: 12, sortedShare: 1 }, [])
  const filters: Array<Omit<ListFilter, 'afterId' | 'limit'>> = [
    { terms: ['stera'] }, { category: 'ferns' }, { category: 'ferns', terms: ['monstera 1'] }, { tags: ['a'], terms: ['stera'] }, { tags: ['b'], category: 'ferns' }, { tags: ['a', 'b'] },
    { statuses: ['sold'] }, { statuses: ['sold', 'pending'], tags: ['a'] }, { priceMin: 1000, priceMax: 1500 }, { priceMin: 1000, tags: ['b'], terms: ['zamia'] }
  ]
  for (const filter of filters) {
    for (const sort of SORTS as readonly Sort[]) {
      let after: Pick<ListFilter, 'afterId' | 'afterKey' | 'afterValue'> = { afterId: 0 }
      for (let pages = 0; ; pages++) {
        const query: ListFilter = { ...filter, sort, ...after, limit: 7 }
        const page = members.list(query)
        assert.deepEqual(page, sortedWhole.list(query), `${JSON.stringify(filter)} sorted by ${sort}, page ${pages + 1}`)
        if (page.length < 7) break
        const { id, key, value } = positionOf(page[page.length - 1], sort)
        after = { afterId: id, afterKey: key, afterValue: value }
      }
    }
  }
  // The path was taken: by name, -name and -price the first pages of the term and the category.
  assert.ok(walked.filter((kind) => kind === 'member').length >= 6, walked.join(' '))
  // A set gathered from a tag is not asked again, plant by plant, whether the plant has that tag.
  const { text } = listSql({ tags: ['a'], sort: 'name', afterId: 0, limit: 7 }, { kind: 'member', of: { kind: 'tag', tag: 'a' } })
  assert.doesNotMatch(text, /EXISTS/)
  // Another tag asked is a set gathered once too (SQLite: a LIST SUBQUERY, not one seek of plant_tags per entry met).
  const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
  t.after(() => db.close())
  const two = listSql({ tags: ['a', 'b'], sort: '-name', afterId: 0, limit: 7 }, { kind: 'member', of: { kind: 'tag', tag: 'a' } })
  const plan = db.prepare(`EXPLAIN QUERY PLAN ${two.text}`).all(...two.args).map((row) => (row as { detail: string }).detail)
  assert.ok(!plan.some((detail) => /CORRELATED/.test(detail)), plan.join('\n'))
  assert.equal(plan.filter((detail) => /LIST SUBQUERY/.test(detail)).length, 2, plan.join('\n'))
})
