import assert from 'node:assert/strict'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { filterKey } from '../../src/catalogue/query.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { tempDir } from '../helpers/process.js'

// The SQLite store keeps one plant_tags row per tag of a plant, keyed by the tag's key (filterKey),
// for the tag filter's walk along the primary key.

const DAY = 86_400_000
const plant = (name: string, tags: string[]) => ({ name, category: null, tags, status: 'available' as const })

test('SQLite: the tag rows are exactly the plants\' tags, each under its key, after creates, updates and deletes', async (t) => {
  const dir = tempDir('plants-tags')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  const ids: number[] = []
  for (let i = 0; i < 30; i++) ids.push((await store.create(plant(`p${i}`, [`t${i % 4}`, `T${(i + 1) % 4}`]))).plant.id)
  // A tag whose case changes ("T1" to "t1") is a row of its own, under the same key.
  for (const id of ids.slice(0, 10)) await store.update(id, plant('changed', [`t${id % 3}`, 'New']))
  for (const id of ids.slice(5, 15)) await store.remove(id)
  await store.close()

  const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
  t.after(() => db.close())
  const rows = db.prepare('SELECT tag_key, tag, plant_id FROM plant_tags ORDER BY plant_id, tag').all()
  const expected = (db.prepare('SELECT id, tags FROM plants ORDER BY id').all() as Array<{ id: number, tags: string }>)
    .flatMap(({ id, tags }) => (JSON.parse(tags) as string[]).sort().map((tag) => ({ tag_key: filterKey(tag), tag, plant_id: id })))
  assert.equal(rows.length, 20 * 2)
  assert.deepEqual(rows, expected)
})

test('SQLite: an update or delete finds a plant\'s tag rows through the primary key, never by a scan', async (t) => {
  const dir = tempDir('plants-tags')
  t.after(dir.remove)
  await openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY }).close()
  const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
  t.after(() => db.close())
  // The statement writes.ts deletes a tag row with.
  const plan = db.prepare('EXPLAIN QUERY PLAN DELETE FROM plant_tags WHERE tag_key = ? AND tag = ? AND plant_id = ?').all('a', 'A', 1) as Array<{ detail: string }>
  assert.match(plan.map((p) => p.detail).join('; '), /^SEARCH plant_tags USING PRIMARY KEY \(tag_key=\? AND plant_id=\? AND tag=\?\)$/)
})
