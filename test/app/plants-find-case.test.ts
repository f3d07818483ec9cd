import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { listSql } from '../../src/store/sqlite/list-query.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { connect } from '../../src/store/sqlite/writes.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { tempDir } from '../helpers/process.js'

// category and tag filters ignore the case of A–Z (catalogue/query.ts filterKey), on both engines.

const names = async (api: TestApp, query: string): Promise<string[]> => {
  const res = await api.request({ method: 'GET', url: `/v3/plant?${query}` })
  assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
  return res.json().items.map((p: { name: string }) => p.name)
}

for (const engine of ENGINES) {
  describe(`category and tag filters ignoring case on ${engine.name}`, { skip: engine.skip }, () => {
    test('category=Indoor finds "indoor" and "INDOOR"; tag=BIG finds "Big"; "É" is not "é"', async (t) => {
      const api = await build(t, engine)
      await api.add({ name: 'A', category: 'indoor', tags: ['Big'] })
      await api.add({ name: 'B', category: 'INDOOR', tags: ['big', 'green'] }) // "Big" beside it is refused (plants-write-answers)
      await api.add({ name: 'C', category: 'outdoor', tags: ['BIG'] })
      await api.add({ name: 'D', category: 'Été', tags: ['É'] })
      assert.deepEqual(await names(api, 'category=Indoor'), ['A', 'B'])
      assert.deepEqual(await names(api, 'category=indoor&sort=-name'), ['B', 'A'])
      assert.deepEqual(await names(api, 'tag=BIG'), ['A', 'B', 'C'])
      assert.deepEqual(await names(api, 'tag=big&sort=-id'), ['C', 'B', 'A'])
      assert.deepEqual(await names(api, 'tag=bIg&tag=GREEN'), ['B'])
      assert.deepEqual(await names(api, 'tag=Green&tag=BIG&category=indoor'), ['B'])
      assert.deepEqual(await names(api, 'category=%C3%89t%C3%A9'), ['D'])
      assert.deepEqual(await names(api, 'category=%C3%A9t%C3%A9'), [])
      assert.deepEqual(await names(api, 'tag=%C3%A9'), [])
      const counted = await api.request({ method: 'GET', url: '/v3/plant/count?tag=big' })
      assert.deepEqual(counted.json(), { count: 3, exact: true })
      // One filter, one cursor: a page of category=Indoor continues with category=indoor.
      const first = (await api.request({ method: 'GET', url: '/v3/plant?category=Indoor&limit=1' })).json()
      assert.deepEqual(await names(api, `category=indoor&limit=1&cursor=${first.nextCursor}`), ['B'])
    })
  })
}

test('SQLite: category and tag filters walk their keys (plants_category_key, plant_tags\' primary key), not the catalogue', async (t) => {
  const dir = tempDir('plants-find-case')
  t.after(dir.remove)
  await openSqliteStore({ dataDir: dir.path, feedRetentionMs: 86_400_000 }).close()
  const db = connect(`${dir.path}/catalogue.db`)
  t.after(() => db.close())
  db.function('query_guard', (_id: unknown) => 1)
  db.function('q_match', (_key: unknown, _term: unknown) => 1)
  const plan = (sql: { text: string, args: unknown[] }): string =>
    (db.prepare(`EXPLAIN QUERY PLAN ${sql.text}`).all(...sql.args) as Array<{ detail: string }>).map((r) => r.detail).join('\n')
  const byCategory = plan(listSql({ category: 'indoor', afterId: 0, limit: 20 }, { kind: 'order' }))
  assert.match(byCategory, /USING INDEX plants_category_key/)
  const byTag = plan(listSql({ tags: ['big', 'green'], afterId: 0, limit: 20 }, { kind: 'tag', tag: 'big' }))
  // The walk, the guard against a second tag of the key and the other tag: each a seek of the primary key.
  assert.match(byTag, /SEARCH t0 USING PRIMARY KEY \(tag_key=\?\)/)
  assert.match(byTag, /SEARCH d USING PRIMARY KEY \(tag_key=\? AND plant_id=\? AND tag<\?\)/)
  assert.match(byTag, /SEARCH t EXISTS USING PRIMARY KEY \(tag_key=\? AND plant_id=\?\)/)
  assert.doesNotMatch(byTag, /SCAN p\b|SCAN plants/)
  assert.doesNotMatch(byTag, /TEMP B-TREE/, 'the key\'s rows come in plant_id order: no sort')
})
