import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type Database from 'better-sqlite3'
import { buildApp } from '../../src/app.js'
import { filterKey } from '../../src/catalogue/query.js'
import { searchText } from '../../src/catalogue/search-key.js'
import { testConfig } from '../../src/config.js'
import { migrate as migrateSqlite, TAG_KEYS_VERSION } from '../../src/store/sqlite/migrations.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import { tempDir } from '../helpers/process.js'

// SQLite's tag rows become one table keyed by the tag's key (the cheaper layout) on a
// catalogue made by the release before: every tag row is kept under its key, tag filters find the
// plants they found before (a plant holding two tags of one key once), and writes keep the rows in
// step with the plants' tags.

const STEP = TAG_KEYS_VERSION + 1
// Basil holds "big" and "Big": written before two tags of one key were refused.
const PLANTS: Array<[string, string[]]> = [
  ['Aloe', ['Big', 'green']], ['Basil', ['big', 'Big']], ['Cactus', ['BIG']], ['Daisy', ['green']], ['Elm', ['É']], ['Fern', []]
]

/** A catalogue at the release before this migration, holding `plants` (tags as given, a tag row each). */
function olderCatalogue (path: string, plants: Array<[string, string[]]>): void {
  const db = connect(path)
  migrateSqlite(db, () => {}, TAG_KEYS_VERSION)
  const insert = db.prepare("INSERT INTO plants (name, name_key, tags, status, version, created_at, updated_at) VALUES (?, ?, ?, 'available', 1, 0, 0)")
  const tag = db.prepare('INSERT INTO plant_tags (tag, plant_id) VALUES (?, ?)')
  // The name search index holds them, as the store's writes leave it (search-backlog.ts).
  const search = db.prepare('INSERT INTO plants_fts (rowid, search) VALUES (?, ?)')
  db.transaction(() => {
    for (const [name, tags] of plants) {
      const id = Number(insert.run(name, name.toLowerCase(), JSON.stringify(tags)).lastInsertRowid)
      search.run(id, searchText(name.toLowerCase()))
      for (const t of tags) tag.run(t, id)
    }
    db.prepare("UPDATE sqlite_sequence SET seq = ? WHERE name = 'status:available'").run(plants.length)
  })()
  db.close()
}

/** The tag rows, and the rows the plants' tags call for (each keyed by filterKey). */
function tagRows (db: Database.Database): { rows: unknown[], expected: unknown[] } {
  const rows = db.prepare('SELECT tag_key, plant_id, tag FROM plant_tags ORDER BY plant_id, tag').all()
  const expected = (db.prepare('SELECT id, tags FROM plants ORDER BY id').all() as Array<{ id: number, tags: string }>)
    .flatMap(({ id, tags }) => (JSON.parse(tags) as string[]).sort().map((tag) => ({ tag_key: filterKey(tag), plant_id: id, tag })))
  return { rows, expected }
}

describe('migrating SQLite tag rows to one table keyed by the tag\'s key', () => {
  test(`SQLite migration ${STEP}: every tag row kept under its key; tag filters find the same plants, a plant with two tags of one key once`, async (t) => {
    const dir = tempDir('plants-migrate-tag-keys')
    t.after(dir.remove)
    const file = `${dir.path}/catalogue.db`
    olderCatalogue(file, PLANTS)
    const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 })
    t.after(() => store.close())
    assert.ok(await store.schemaVersion() >= STEP, 'the tag keys step and any after it applied')
    const db = connect(file)
    t.after(() => db.close())
    const { rows, expected } = tagRows(db)
    assert.equal(rows.length, 7)
    assert.deepEqual(rows, expected)
    const schema = db.prepare("SELECT name FROM sqlite_master WHERE tbl_name LIKE 'plant_tags%' ORDER BY name").pluck().all()
    assert.deepEqual(schema, ['plant_tags'], 'the old table, its key index and the copy\'s name are gone')

    const app = await buildApp(testConfig({}), { store })
    t.after(() => app.close())
    const get = async (url: string): Promise<any> => {
      const res = await app.inject({ method: 'GET', url })
      assert.equal(res.statusCode, 200, `${url}: ${res.body}`)
      return res.json()
    }
    const names = async (query: string): Promise<string[]> => (await get(`/v3/plant?${query}`)).items.map((p: { name: string }) => p.name)
    assert.deepEqual(await names('tag=big'), ['Aloe', 'Basil', 'Cactus'])
    assert.deepEqual(await names('tag=BIG&sort=-id'), ['Cactus', 'Basil', 'Aloe'])
    assert.deepEqual(await names('tag=bIg&sort=-name'), ['Cactus', 'Basil', 'Aloe'])
    assert.deepEqual(await names('tag=big&tag=GREEN'), ['Aloe'])
    assert.deepEqual(await names('tag=green&tag=Big&sort=name'), ['Aloe'])
    assert.deepEqual(await names('tag=%C3%89'), ['Elm'])
    assert.deepEqual(await names('tag=%C3%A9'), [])
    assert.deepEqual(await get('/v3/plant/count?tag=Big'), { count: 3, exact: true })
    // A page at a time across the plant with two rows of the key: each plant once.
    const seen: string[] = []
    let cursor = ''
    for (let page = 0; page < 5; page++) {
      const body = await get(`/v3/plant?tag=big&limit=1${cursor}`)
      seen.push(...body.items.map((p: { name: string }) => p.name))
      if (body.nextCursor === null) break
      cursor = `&cursor=${body.nextCursor}`
    }
    assert.deepEqual(seen, ['Aloe', 'Basil', 'Cactus'])

    // Writes on migrated plants keep the rows the plants' tags call for.
    await store.patch(2, { tags: ['big'] })
    await store.update(1, { name: 'Aloe', category: null, tags: ['Green'], status: 'available' })
    await store.remove(3)
    await store.create({ name: 'Gorse', category: null, tags: ['BIG', 'Spiny'], status: 'available' })
    const after = tagRows(db)
    assert.deepEqual(after.rows, after.expected)
    assert.deepEqual(await names('tag=big'), ['Basil', 'Gorse'])
    assert.deepEqual(await names('tag=GREEN'), ['Aloe', 'Daisy'])
  })

  test(`SQLite migration ${STEP} on 60,000 plants says how far it got and keeps every tag row`, async (t) => {
    const dir = tempDir('plants-migrate-tag-keys-large')
    t.after(dir.remove)
    const plants = Array.from({ length: 60_000 }, (_, i): [string, string[]] => [`Fern ${i}`, i % 3 === 0 ? ['Big', 'shade'] : ['shade']])
    olderCatalogue(`${dir.path}/catalogue.db`, plants)
    const lines: string[] = []
    const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000, progress: (line) => lines.push(line) })
    t.after(() => store.close())
    assert.deepEqual(lines.filter((l) => l.startsWith(`migration ${STEP}:`)), [
      `migration ${STEP}: keying the tag rows by the tag ignoring case (60000 plants)`,
      `migration ${STEP}: dropping the tag rows by tag and their key index (60000 plants)`,
      `migration ${STEP}: tags keyed (60000 plants)`
    ])
    assert.equal(await store.count({ tags: ['big'] }, 100_000), 20_000)
    assert.equal(await store.count({ tags: ['shade'] }, 100_000), 60_000)
  })
})
