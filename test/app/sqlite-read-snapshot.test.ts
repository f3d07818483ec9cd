import assert from 'node:assert/strict'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { tempDir } from '../helpers/process.js'
import { seedView } from '../helpers/records.js'

// The SQLite store's reads in one turn of the event loop share one read transaction (a snapshot).

const DAY = 86_400_000
const fields = (name: string) => ({ name, category: null, tags: ['a'], status: 'available' as const })
/** The seed's view with the version: which version a read saw is the point here. */
const versioned = (plant: { version: number }) => ({ ...seedView(plant), version: plant.version })
const nextTurn = () => new Promise((resolve) => setImmediate(resolve))

test('SQLite in memory: a write queued before a read in the same turn commits, and the next read sees it', async (t) => {
  const store = openSqliteStore({ dataDir: ':memory:', feedRetentionMs: DAY })
  t.after(() => store.close())
  // The write's commit runs on the connection that holds the read's snapshot: it must close it first.
  const created = store.create(fields('Monstera'))
  const before = await store.get(1)
  const { plant } = await created
  assert.equal(before, undefined)
  assert.deepEqual(versioned((await store.get(plant.id))!), { ...fields('Monstera'), id: plant.id, photos: [], version: 1 })
})

test('SQLite file: a snapshot lasts one turn, so a commit by another connection is seen by the next turn\'s read', async (t) => {
  const dir = tempDir('plants-snapshot')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  t.after(() => store.close())
  const { plant } = await store.create(fields('Ficus'))
  const other = new Database(`${dir.path}/catalogue.db`)
  t.after(() => other.close())

  assert.equal((await store.get(plant.id))?.name, 'Ficus')
  other.prepare('UPDATE plants SET name = ?, version = version + 1 WHERE id = ?').run('Ficus lyrata', plant.id)
  // Same turn: the snapshot taken by the first read.
  assert.equal((await store.get(plant.id))?.name, 'Ficus')
  await nextTurn()
  assert.deepEqual(versioned((await store.get(plant.id))!), { ...fields('Ficus lyrata'), id: plant.id, photos: [], version: 2 })
})

test('SQLite file: a read in the same turn as a write\'s acknowledgement does not hide that write from the commit listener', async (t) => {
  const dir = tempDir('plants-snapshot')
  t.after(dir.remove)
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY })
  t.after(() => store.close())
  const seen: Array<number | undefined> = []
  store.onCommit(() => { void store.changes(0, 1000).then((page) => seen.push(page.items.at(-1)?.id)) })
  for (let i = 0; i < 10; i++) {
    const created = store.create(fields(`p${i}`))
    await nextTurn() // the batch is with the writer thread now, its commit not yet flushed
    // A read that takes its snapshot before the commit ends; called in the check phase, the
    // snapshot lasts until the next one, past the poll in which the acknowledgement arrives.
    await store.get(1)
    const until = Date.now() + 20
    while (Date.now() < until); // the commit finishes while the event loop is held
    const { plant } = await created
    // The listener's page is read in a reader thread: it arrives a few turns later.
    for (let turns = 0; seen.at(-1) !== plant.id && turns < 1000; turns++) await new Promise((resolve) => setTimeout(resolve, 5))
    assert.equal(seen.at(-1), plant.id, `the listener saw write ${i}`)
  }
})

test('SQLite file: a purge in the same turn as a read, after another connection\'s commit, runs and commits on its own', async (t) => {
  const dir = tempDir('plants-snapshot')
  t.after(dir.remove)
  let now = Date.now()
  const store = openSqliteStore({ dataDir: dir.path, feedRetentionMs: DAY, now: () => now })
  t.after(() => store.close())
  await store.create(fields('Pilea'))
  const other = new Database(`${dir.path}/catalogue.db`)
  t.after(() => other.close())
  await store.get(1)
  other.prepare('UPDATE plants SET name = ? WHERE id = 1').run('Pilea peperomioides')
  // The purge writes: in the read's stale snapshot it could not (SQLITE_BUSY_SNAPSHOT), so it closes it first.
  now += 2 * DAY
  ;(store as unknown as { purge (): void }).purge()
  assert.equal(other.prepare('SELECT count(*) FROM changes').pluck().get(), 0, 'the purge is committed at once')
})
