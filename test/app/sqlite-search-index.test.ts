import assert from 'node:assert/strict'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { BACKLOG, INDEXED_UP_TO } from '../../src/store/sqlite/search-backlog.js'
import { connect, MMAP_BYTES } from '../../src/store/sqlite/writes.js'
import { tempDir } from '../helpers/process.js'

// How the SQLite store reads and writes its file. The names' trigram index (plants_fts) is written
// behind: a write names its index change in its change row; they are applied in bulk (search-backlog.ts).

const DAY = 86_400_000
const plant = (name: string) => ({ name, category: null, tags: [], status: 'available' as const })

test('SQLite: the search index is written behind; every search finds the names as they are, before and after the backlog is applied', async (t) => {
  const dir = tempDir('plants-search')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
  t.after(() => db.close())
  const segments = db.prepare('SELECT count(*) FROM plants_fts_data WHERE id > 10').pluck()
  const pending = db.prepare(`SELECT count(*) FROM changes WHERE seq > ${INDEXED_UP_TO}`).pluck()
  const names = async (q: string, sort: 'id' | '-name' = 'id') => (await store.list({ terms: [q], afterId: 0, limit: 100, sort })).map((p) => p.name)

  // A few writes stay in the backlog: no index segment is written, yet searches find them.
  const ids = []
  for (let i = 0; i < 10; i++) ids.push((await store.create(plant(`Fern number ${i}`))).plant.id)
  await store.update(ids[0], plant('Cactus first'))
  await store.update(ids[0], plant('Orchid first'))
  await store.remove(ids[9])
  assert.equal(segments.get(), 0)
  assert.equal(pending.get(), 10 + 2 + 1)
  assert.deepEqual(await names('orchid'), ['Orchid first'])
  assert.deepEqual(await names('cactus'), [])
  assert.deepEqual(await names('fern'), ids.slice(1, 9).map((_id, i) => `Fern number ${i + 1}`))
  assert.deepEqual(await names('fern', '-name'), ids.slice(1, 9).map((_id, i) => `Fern number ${i + 1}`).reverse())

  // Once BACKLOG changes have gathered, the write that tips it applies them all, in one segment.
  const more = []
  for (let i = 0; i < BACKLOG; i++) more.push(store.create(plant(`Palm ${i}`)))
  const palms = (await Promise.all(more)).map((r) => r.plant.id)
  assert.equal(pending.get(), 0)
  assert.ok((segments.get() as number) >= 1)
  assert.deepEqual(await names('orchid'), ['Orchid first'])
  assert.deepEqual(await names('cactus'), [])
  assert.equal((await names('palm')).length, 100)
  assert.deepEqual((await store.list({ terms: ['palm'], afterId: palms[99], limit: 100 })).length, BACKLOG - 100)
  // A plant in the index and in the backlog (renamed after the index took it) is one row of a page.
  await store.update(ids[1], plant('Fern number one renamed'))
  const ferns = ids.slice(1, 9).map((_id, i) => i === 0 ? 'Fern number one renamed' : `Fern number ${i + 1}`)
  assert.deepEqual(await names('fern'), ferns)
  assert.deepEqual(await names('fern', '-name'), [...ferns].sort().reverse())
  await store.create(plant('Fern number 0 ÿ'))
  assert.deepEqual((await store.list({ terms: ['fern'], afterId: 0, limit: 3, sort: 'name' })).map((p) => p.name), ['Fern number 0 ÿ', 'Fern number 2', 'Fern number 3'])
  await store.close()
})

test('SQLite: a clean stop applies the backlog, leaving the index holding exactly every plant\'s current name (FTS5 integrity-check)', async (t) => {
  const dir = tempDir('plants-search-check')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  const ids = []
  for (let i = 0; i < 30; i++) ids.push((await store.create(plant(`Aloe ${i}`))).plant.id)
  // Created and deleted, renamed back and forth, renamed to the same key: each reduces to its last state.
  await store.remove(ids[0])
  await store.update(ids[1], plant('Yucca 1'))
  await store.update(ids[1], plant('Aloe 1'))
  await store.update(ids[2], plant('ALOE 2'))
  for (let i = 3; i < 30; i += 2) await store.update(ids[i], plant(`Yucca ${i}`))
  const db = new Database(`${dir.path}/catalogue.db`)
  t.after(() => db.close())
  const pending = db.prepare(`SELECT count(*) FROM changes WHERE seq > ${INDEXED_UP_TO}`).pluck()
  assert.ok((pending.get() as number) > 0)
  await store.close()
  assert.equal(pending.get(), 0)
  db.exec("INSERT INTO plants_fts (plants_fts, rank) VALUES ('integrity-check', 1)") // throws when the index and the names differ
  const found = (q: string) => db.prepare('SELECT p.name FROM plants_fts f JOIN plants p ON p.id = f.rowid WHERE plants_fts MATCH ? ORDER BY p.id').pluck().all(`"${q}"`)
  assert.deepEqual(found('yuc'), Array.from({ length: 14 }, (_, k) => `Yucca ${3 + 2 * k}`))
  assert.equal(found('alo').length, 29 - 14)
})

test('SQLite: every connection to a catalogue file reads it through a memory map (file pages, not the process\'s own memory)', async (t) => {
  const dir = tempDir('plants-mmap')
  t.after(dir.remove)
  await openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY }).close()
  const db = connect(`${dir.path}/catalogue.db`)
  t.after(() => db.close())
  assert.equal(db.pragma('mmap_size', { simple: true }), MMAP_BYTES)
  assert.equal(db.pragma('synchronous', { simple: true }), 2) // FULL: the map is for reads only
})
