import assert from 'node:assert/strict'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { nameOrderKey } from '../../src/catalogue/name-order.js'
import type { PlantInput } from '../../src/catalogue/plant.js'
import { positionOf } from '../../src/catalogue/query.js'
import type { ListFilter } from '../../src/store/plant-store.js'
import { CATEGORY_NAME_BOUNDS_VERSION, migrate } from '../../src/store/sqlite/migrations.js'
import { sqliteReads } from '../../src/store/sqlite/reads.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import { tempDir } from '../helpers/process.js'

// A category sorted by name walks plants_name from the category's name bounds (category-name-bounds.ts):
// every write that can put a plant of the category beyond them widens them, or the walk misses it.

const DAY = 86_400_000
const plant = (name: string, category: string | null): PlantInput => ({ name, category, tags: [], status: 'available' })
// 110 plants play 1,000,000: a walk may read 12 rows, and a set of more than 5 is walked as members.
const LIMITS = { small: 5, walkBudget: 12, sortedShare: 1 / 20 }

test('SQLite: ferns first in name order, sorted by -name, are walked from their greatest name: the first walk fills the page, and each write that puts a fern beyond the bounds (create, rename, move in, restore) is on the next first page', async (t) => {
  const dir = tempDir('plants-name-bounds')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  t.after(() => store.close())
  // The ferns come first in name order: by -name a walk meets every Zamia before one of them.
  for (let i = 0; i < 10; i++) await store.create(plant(`Alocasia ${i}`, 'Ferns'))
  const zamias: number[] = []
  for (let i = 0; i < 100; i++) zamias.push((await store.create(plant(`Zamia ${i}`, i % 2 === 0 ? 'Cycads' : null))).plant.id)
  const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
  t.after(() => db.close())
  const plans: string[] = []
  const reads = sqliteReads(db, { queryTimeoutMs: 1000, plan: LIMITS, onPlan: (driver) => plans.push(driver.kind) })
  // What the page must be, from the rows themselves.
  const truth = db.prepare<[number], string>("SELECT name FROM plants WHERE lower(category) = 'ferns' ORDER BY name_order_key DESC, id DESC LIMIT ?").pluck()
  const firstPage = (limit = 4): string[] => {
    plans.length = 0
    return reads.list({ category: 'ferns', sort: '-name', afterId: 0, limit }).map((p) => p.name)
  }

  assert.deepEqual(firstPage(), ['Alocasia 9', 'Alocasia 8', 'Alocasia 7', 'Alocasia 6'])
  // The walk started at the ferns' greatest name: within its 12 rows, never given up for a member walk.
  assert.deepEqual(plans, ['order'])
  // Every page after a cursor, by name and -name, as the rows say.
  for (const sort of ['name', '-name'] as const) {
    let after: Pick<ListFilter, 'afterId' | 'afterKey'> = { afterId: 0 }
    const names: string[] = []
    for (;;) {
      const page = reads.list({ category: 'ferns', sort, ...after, limit: 3 })
      names.push(...page.map((p) => p.name))
      if (page.length < 3) break
      const { id, key } = positionOf(page[page.length - 1], sort)
      after = { afterId: id, afterKey: key }
    }
    const all = truth.all(100)
    assert.deepEqual(names, sort === '-name' ? all : [...all].reverse())
  }

  // Created beyond the bounds.
  await store.create(plant('Begonia', 'Ferns'))
  assert.deepEqual(firstPage(2), ['Begonia', 'Alocasia 9'])
  // Renamed beyond them.
  const alocasia = (await store.list({ category: 'ferns', sort: 'name', afterId: 0, limit: 1 }))[0]
  await store.patch(alocasia.id, { name: 'Calathea' })
  assert.deepEqual(firstPage(2), ['Calathea', 'Begonia'])
  // Moved into the category from beyond them (FERNS: the same key).
  await store.patch(zamias[7], { category: 'FERNS' })
  assert.deepEqual(firstPage(2), ['Zamia 7', 'Calathea'])
  assert.deepEqual(firstPage(20), truth.all(20))

  // Restored from the trash beyond them: as a catalogue migrated while the plant was in the trash.
  await store.remove(zamias[7])
  const writer = connect(`${dir.path}/catalogue.db`)
  t.after(() => writer.close())
  writer.prepare("UPDATE category_name_bounds SET greatest = ? WHERE category_key = 'ferns'").run(nameOrderKey('Calathea'))
  assert.deepEqual(firstPage(2), ['Calathea', 'Begonia'])
  await store.restoreTrashed(zamias[7])
  assert.deepEqual(firstPage(2), ['Zamia 7', 'Calathea'])
  assert.deepEqual(firstPage(20), truth.all(20))
})

test(`SQLite migration ${CATEGORY_NAME_BOUNDS_VERSION + 1}: each category key's least and greatest name order key, from the plants already there`, async (t) => {
  const dir = tempDir('plants-migrate-name-bounds')
  t.after(dir.remove)
  const db = connect(`${dir.path}/catalogue.db`)
  migrate(db, () => {}, CATEGORY_NAME_BOUNDS_VERSION)
  const insert = db.prepare("INSERT INTO plants (name, name_key, name_order_key, category, tags, status, version, created_at, updated_at) VALUES (?, ?, ?, ?, '[]', 'available', 1, 0, 0)")
  const plants: Array<[string, string | null]> = [['Pot 10 cm', 'Pots'], ['Pot 9 cm', 'pots'], ['Éucalyptus', 'Trees'], ['Zamia', null], ['Bégonia', 'Ferns'], ['Alocasia', 'FERNS']]
  db.transaction(() => { for (const [name, category] of plants) insert.run(name, name.toLowerCase(), nameOrderKey(name), category) })()
  migrate(db)
  const bounds = db.prepare('SELECT category_key, least, greatest FROM category_name_bounds ORDER BY category_key').all()
  assert.deepEqual(bounds, [
    { category_key: 'ferns', least: nameOrderKey('Alocasia'), greatest: nameOrderKey('Bégonia') },
    { category_key: 'pots', least: nameOrderKey('Pot 9 cm'), greatest: nameOrderKey('Pot 10 cm') },
    { category_key: 'trees', least: nameOrderKey('Éucalyptus'), greatest: nameOrderKey('Éucalyptus') }
  ])
  // Run again (a catalogue written meanwhile by a release that widens nothing): built anew from the plants.
  insert.run('Zamia', 'zamia', nameOrderKey('Zamia'), 'Ferns')
  db.pragma(`user_version = ${CATEGORY_NAME_BOUNDS_VERSION}`)
  migrate(db)
  assert.deepEqual(db.prepare("SELECT greatest FROM category_name_bounds WHERE category_key = 'ferns'").pluck().get(), nameOrderKey('Zamia'))
  db.close()
  // The store opens on it, and the walk from the bounds answers.
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  t.after(() => store.close())
  assert.deepEqual((await store.list({ category: 'ferns', sort: '-name', afterId: 0, limit: 5 })).map((p) => p.name), ['Zamia', 'Bégonia', 'Alocasia'])
})
