import assert from 'node:assert/strict'
import { test } from 'node:test'
import type { Change, ChangePage } from '../../src/catalogue/changes.js'
import { DeliveredLog } from '../../src/webhooks/delivered-log.js'
import { FeedWindow, pageEntries } from '../../src/webhooks/feed-window.js'

// The webhooks' shared view of the feed's newest changes: loops at the head share one read of the
// store and one serialisation of each change; a loop behind the window reads its own pages.

function feed (): { store: { changes (after: number, limit: number): Promise<ChangePage> }, reads: number[], add (n: number): void } {
  const changes: Change[] = []
  const reads: number[] = []
  return {
    reads,
    add: (n) => {
      for (let i = 0; i < n; i++) {
        const seq = changes.length + 1
        changes.push({ seq, kind: 'created', id: seq, version: 1, actor: 'anonymous', at: '2026-01-01T00:00:00.000Z', plant: null })
      }
    },
    store: {
      changes: async (after, limit) => {
        reads.push(after)
        await new Promise((resolve) => setImmediate(resolve))
        const items = changes.filter((c) => c.seq > after).slice(0, limit)
        return { items, next: items.at(-1)?.seq ?? after }
      }
    }
  }
}

test('loops at the head share one read of the store, and get each change serialised as the feed shows it', async () => {
  const f = feed()
  const window = new FeedWindow(f.store)
  f.add(3)
  // Ten loops woken by one commit: the first reads; the nine arriving while it runs share one more
  // (it starts after they asked, so none can miss a commit made just before its request).
  const pages = await Promise.all(Array.from({ length: 10 }, async () => pageEntries(await window.read(0, 100))))
  assert.ok(f.reads.length <= 2, `reads: ${f.reads.join(', ')}`)
  for (const page of pages) assert.deepEqual(page.map((e) => e.seq), [1, 2, 3])
  assert.ok(pages.every((page) => page[0].body === pages[0][0].body))
  assert.deepEqual(JSON.parse(pages[0][2].body.toString()), { seq: 3, kind: 'created', id: 3, version: 1, actor: 'anonymous', at: '2026-01-01T00:00:00.000Z', plant: null })
  // A commit: every loop at 3 asks again; those arriving during the read share the next one.
  f.add(2)
  const next = await Promise.all(Array.from({ length: 10 }, async () => pageEntries(await window.read(3, 100))))
  assert.ok(f.reads.length <= 4, `reads: ${f.reads.join(', ')}`)
  for (const page of next) assert.deepEqual(page.map((e) => e.seq), [4, 5])
  // One that is further along is served from the window, without a read.
  const before = f.reads.length
  assert.deepEqual((pageEntries(await window.read(4, 100))).map((e) => e.seq), [5])
  assert.equal(f.reads.length, before)
})

test('a loop behind the window reads its own page; the window keeps only the newest bodies', async () => {
  const f = feed()
  const body = JSON.stringify({ seq: 1, kind: 'created', id: 1, version: 1, actor: 'anonymous', at: '2026-01-01T00:00:00.000Z', plant: null }).length
  const window = new FeedWindow(f.store, body * 5, 100)
  f.add(20)
  assert.equal((pageEntries(await window.read(0, 100))).length, 20)
  const reads = f.reads.length
  // The window holds about 5 bodies now: 16 to 20 come from it, 2 to 5 from a read of their own.
  assert.deepEqual((pageEntries(await window.read(17, 2))).map((e) => e.seq), [18, 19])
  assert.equal(f.reads.length, reads)
  assert.deepEqual((pageEntries(await window.read(1, 4))).map((e) => e.seq), [2, 3, 4, 5])
  assert.deepEqual(f.reads.slice(reads), [1])
})

test('the window lets go of what every loop reading it has passed, and keeps what the slowest still needs', async () => {
  const f = feed()
  let oldest = 0
  const window = new FeedWindow(f.store, 1024 * 1024, 100, () => oldest)
  f.add(10)
  assert.equal((pageEntries(await window.read(0, 100))).length, 10)
  // The slowest loop reading the window is at 6: 7 to 10 stay; 1 to 6 are let go at the next read.
  oldest = 6
  f.add(2)
  assert.deepEqual((pageEntries(await window.read(10, 100))).map((e) => e.seq), [11, 12])
  const reads = f.reads.length
  assert.deepEqual((pageEntries(await window.read(6, 100))).map((e) => e.seq), [7, 8, 9, 10, 11, 12])
  assert.equal(f.reads.length, reads, 'what the slowest loop needs comes from the window')
  assert.deepEqual((pageEntries(await window.read(3, 2))).map((e) => e.seq), [4, 5])
  assert.deepEqual(f.reads.slice(reads), [3], 'what every loop had passed is read again by a loop that goes back')
})

test("a loop's deliveries since its last save: the newest of them, oldest first, as the store keeps them", () => {
  const log = new DeliveredLog(3)
  assert.deepEqual(log.take(), [])
  for (let seq = 1; seq <= 5; seq++) log.add(seq, 1, 1000 + seq, 204, seq / 2, `ok ${seq}`, 'updated')
  assert.equal(log.size, 3)
  assert.deepEqual(log.take(), [3, 4, 5].map((seq) => ({ seq, attempt: 1, at: 1000 + seq, statusCode: 204, error: null, durationMs: seq / 2, response: `ok ${seq}`, event: 'updated' })))
  assert.equal(log.size, 0)
  log.add(6, 4, 2000, 200, 12, null, 'stock.out')
  assert.deepEqual(log.take(), [{ seq: 6, attempt: 4, at: 2000, statusCode: 200, error: null, durationMs: 12, response: null, event: 'stock.out' }])
})
