import assert from 'node:assert/strict'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { openSqliteStore } from '../src/store/sqlite/sqlite-plant-store.js'
import { connect, MMAP_BYTES } from '../src/store/sqlite/writes.js'
import { tempDir } from './helpers/process.js'

// How the SQLite store reads and writes its file. The names' trigram index (plants_fts): a batch
// applies its index changes in rowid order: FTS5 writes a new segment whenever a rowid comes lower
// than the one before, so updates in the order they came made a segment each.

const DAY = 86_400_000
const plant = (name: string) => ({ name, category: null, tags: [], status: 'available' as const })

test('SQLite: updates of one batch in any order add one search index segment, and every search finds the names as they are', async (t) => {
  const dir = tempDir('plants-search')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  const creates = []
  for (let i = 0; i < 40; i++) creates.push(store.create(plant(`Fern number ${i}`)))
  const ids = (await Promise.all(creates)).map((r) => r.plant.id)
  const db = new Database(`${dir.path}/catalogue.db`, { readonly: true })
  t.after(() => db.close())
  const segments = db.prepare('SELECT count(*) FROM plants_fts_data WHERE id > 10').pluck()
  const before = segments.get() as number

  // Sent together, they commit as one batch: highest id first, and one plant renamed twice.
  const updates = [...ids].reverse().slice(0, 20).map((id) => store.update(id, plant(`Cactus ${id}`)))
  updates.push(store.update(ids[0], plant('Cactus first')), store.update(ids[0], plant('Orchid first')))
  await Promise.all(updates)
  const added = (segments.get() as number) - before
  assert.ok(added <= 2, `the batch added ${added} rows to the index (a segment per update before)`)

  const names = async (q: string) => (await store.list({ terms: [q], afterId: 0, limit: 100 })).map((p) => p.name).sort()
  assert.deepEqual(await names('cactus'), ids.slice(20).map((id) => `Cactus ${id}`).sort())
  assert.deepEqual(await names('orchid'), ['Orchid first'])
  assert.deepEqual(await names('fern'), ids.slice(1, 20).map((id) => `Fern number ${id - ids[0]}`).sort())
  await store.close()
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
