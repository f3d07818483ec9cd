import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import Database from 'better-sqlite3'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'

// The deliverer's writes on SQLite (attempts, cursor, leases) are committed by the writer thread in
// the group commit: never on the event loop's connection, where an fsync, or a wait for the write
// lock in SQLite's busy handler, stopped every request.

const secret = 'whsec_' + Buffer.alloc(32, 3).toString('base64')
const plant = (name: string) => ({ name, category: null, tags: [], status: 'available' as const })

test('a delivery recorded while another connection holds the write lock waits for it off the event loop, then lands', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'plants-webhook-writes-'))
  const store = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  t.after(async () => { await store.close(); await rm(dataDir, { recursive: true, force: true }) })
  const webhook = await store.webhooks.create({ url: 'http://127.0.0.1:9/hook', events: ['created'], secret }, Date.now())
  await store.create(plant('Fern'))
  const other = new Database(join(dataDir, 'catalogue.db'))
  t.after(() => other.close())
  other.exec('BEGIN IMMEDIATE')
  // On the event loop's connection this call blocked in the busy handler until the lock's holder
  // committed: it never could (this test holds it), so it failed SQLITE_BUSY after 5 s.
  const recording = store.webhooks.recordAttempts(webhook.id, [{ seq: 1, attempt: 1, at: Date.now(), statusCode: 204, error: null, durationMs: 1 }],
    { cursor: 1, attempts: 0, nextAttemptAt: null, failingSince: null, lastError: null, failing: false })
  let settled = false
  void recording.finally(() => { settled = true })
  await new Promise((resolve) => setTimeout(resolve, 20))
  assert.equal(settled, false, 'waiting for the lock, in the writer thread')
  other.exec('COMMIT')
  await recording
  assert.equal((await store.webhooks.get(webhook.id))?.cursor, 1)
  assert.deepEqual((await store.webhooks.deliveries(webhook.id, { limit: 10 })).map((d) => d.seq), [1])
})

test('the deliverer\'s own writes do not wake the feed\'s listeners: only a change does', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'plants-webhook-writes-'))
  const store = openSqliteStore({ dataDir, feedRetentionMs: 86_400_000 })
  t.after(async () => { await store.close(); await rm(dataDir, { recursive: true, force: true }) })
  const webhook = await store.webhooks.create({ url: 'http://127.0.0.1:9/hook', events: ['created'], secret }, Date.now())
  let heard = 0
  store.onCommit(() => { heard++ })
  // A lease far longer than the test: under load, a second between two calls must not end it.
  assert.equal(await store.webhooks.lease(webhook.id, 'me', Date.now() + 60_000, Date.now()), true)
  assert.equal(await store.webhooks.lease(webhook.id, 'another', Date.now() + 60_000, Date.now()), false, 'held by me')
  await store.webhooks.recordAttempts(webhook.id, [{ seq: 1, attempt: 1, at: Date.now(), statusCode: 500, error: 'answered 500', durationMs: 1 }],
    { cursor: 0, attempts: 1, nextAttemptAt: Date.now() + 5_000, failingSince: Date.now(), lastError: 'answered 500', failing: false })
  await store.webhooks.release(webhook.id, 'me')
  assert.equal(heard, 0)
  assert.equal((await store.webhooks.get(webhook.id))?.attempts, 1)
  await store.create(plant('Fern'))
  assert.equal(heard, 1)
})
