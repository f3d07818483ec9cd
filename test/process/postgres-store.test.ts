import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import { FeedGone, IdempotencyKeyReused, PlantNotFound, StorageUnavailable, VersionMismatch } from '../../src/catalogue/errors.js'
import type { PlantInput } from '../../src/catalogue/plant.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { TEST_DATABASE_URL, freshSchema, postgresEngine, type Scratch } from '../helpers/postgres-engine.js'
import { DatabaseProxy, sleep } from '../helpers/scale.js'

// The PostgreSQL store on its own: what several instances sharing one database must get right.

const DAY = 86_400_000
const fields = (name: string, extra: Partial<PlantInput> = {}): PlantInput =>
  ({ name, category: null, tags: [], status: 'available', ...extra })

/** Two stores (two "instances") on one fresh schema. */
async function pair (t: { after (fn: () => Promise<void>): void }, options: { now?: () => number, pollIntervalMs?: number } = {}): Promise<[PlantStore, PlantStore]> {
  const scratch = await freshSchema()
  const open = (): Promise<PlantStore> => openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 7 * DAY, ...options })
  const stores = await Promise.all([open(), open()])
  t.after(async () => {
    await Promise.all(stores.map((s) => s.close()))
    await scratch.drop()
  })
  return stores as [PlantStore, PlantStore]
}

async function within<T> (ms: number, promise: Promise<T>): Promise<{ value?: T, error?: unknown, elapsed: number }> {
  const started = performance.now()
  try {
    return { value: await promise, elapsed: performance.now() - started }
  } catch (error) {
    const elapsed = performance.now() - started
    assert.ok(elapsed < ms, `took ${Math.round(elapsed)} ms, more than ${ms} ms`)
    return { error, elapsed }
  }
}

describe('PostgreSQL store', { skip: postgresEngine.skip }, () => {
  it('changes committed concurrently through two stores get contiguous sequence numbers, read in order without a gap while writes go on', async (t) => {
    const [a, b] = await pair(t)
    const total = 300
    let writing = true
    const seen: number[] = []
    // A reader that follows the feed while the writes happen: if a lower seq could become visible
    // after a higher one, it would step over it for good and the list below would have a hole.
    const reader = (async () => {
      let cursor = 0
      while (writing || cursor < total) {
        const page = await a.changes(cursor, 100)
        for (const c of page.items) seen.push(c.seq)
        cursor = page.next
        if (page.items.length === 0) await sleep(5)
      }
    })()
    await Promise.all(Array.from({ length: total }, (_, i) => (i % 2 === 0 ? a : b).create(fields(`p${i}`))))
    writing = false
    await reader
    assert.deepEqual(seen, Array.from({ length: total }, (_, i) => i + 1))
    const page = await b.changes(0, 1000)
    assert.equal(page.items.length, total)
    assert.equal(new Set(page.items.map((c) => c.id)).size, total)
  })

  it('a commit through one store wakes the onCommit listeners of another by its notification', { timeout: 60_000 }, async (t) => {
    // The head is polled too, but not within this test (an hour between polls): only the
    // notification, or the one read made once LISTEN is up (for what it may have missed), can wake
    // b. Neither depends on how fast the machine is, so the test waits for the wake, not a time.
    const [a, b] = await pair(t, { pollIntervalMs: 3_600_000 })
    await a.create(fields('warm-up')) // both stores have read the feed's head
    let stop = (): void => {}
    const woken = new Promise<void>((resolve) => { stop = b.onCommit(resolve) })
    t.after(() => stop())
    await a.create(fields('Monstera'))
    await woken
  })

  it('two stores racing on one Idempotency-Key create one plant and both answer with it', async (t) => {
    const [a, b] = await pair(t)
    for (let round = 0; round < 10; round++) {
      const claim = { key: `race-${round}`, requestHash: 'same-body' }
      const results = await Promise.all([a, b, a, b].map((s) => s.create(fields(`Fern ${round}`), claim)))
      assert.equal(new Set(results.map((r) => r.plant.id)).size, 1, `round ${round}: ${JSON.stringify(results)}`)
      assert.equal(results.filter((r) => !r.replayed).length, 1)
    }
    assert.equal((await a.list({ afterId: 0, limit: 100 })).length, 10)
    await assert.rejects(b.create(fields('Other'), { key: 'race-0', requestHash: 'other-body' }), IdempotencyKeyReused)
  })

  it('updates with the same expected version through two stores: exactly one wins, the rest are refused', async (t) => {
    const [a, b] = await pair(t)
    const { plant } = await a.create(fields('Ficus'))
    const outcomes = await Promise.allSettled(Array.from({ length: 20 }, (_, i) =>
      (i % 2 === 0 ? a : b).update(plant.id, fields(`Ficus ${i}`), [plant.version])))
    assert.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1)
    for (const o of outcomes) if (o.status === 'rejected') assert.ok(o.reason instanceof VersionMismatch, String(o.reason))
    assert.equal((await b.get(plant.id))!.version, 2)
    await assert.rejects(b.update(999_999, fields('x'), [1]), PlantNotFound) // 404 comes before 412
    await assert.rejects(b.update(plant.id, fields('x'), [2 ** 60]), VersionMismatch) // not a database error
  })

  it('ids from two stores are distinct and each plant is readable from either', async (t) => {
    const [a, b] = await pair(t)
    const created = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 === 0 ? a : b).create(fields(`p${i}`))))
    const ids = created.map((c) => c.plant.id)
    assert.equal(new Set(ids).size, ids.length)
    for (const id of ids) {
      assert.equal((await a.get(id))?.id, id)
      assert.equal((await b.get(id))?.id, id)
    }
  })

  it('keeps strings exactly as sent, U+0000 included (which PostgreSQL text cannot hold), and filters by them', async (t) => {
    const store = await postgresEngine.open()
    t.after(() => store.close())
    const odd = { name: 'nul\u0000 and \uffff0 and \uffff', category: 'c\u0000', tags: ['t\u0000', '\uffff1', 'plain'] }
    const { plant } = await store.create(fields(odd.name, { category: odd.category, tags: odd.tags }))
    assert.deepEqual(await store.get(plant.id), { ...plant })
    assert.deepEqual((await store.get(plant.id))!.tags, odd.tags)
    assert.equal((await store.list({ afterId: 0, limit: 10, tags: ['t\u0000', '\uffff1'], category: 'c\u0000' })).length, 1)
    assert.equal((await store.list({ afterId: 0, limit: 10, tags: ['\uffff0'] })).length, 0)
    assert.equal((await store.changes(0, 10)).items[0].plant!.name, odd.name)
  })

  it('purges changes older than the retention and answers FeedGone for a point before the floor', async (t) => {
    let now = Date.UTC(2030, 0, 1)
    const retention = DAY
    const store = await postgresEngine.open({ feedRetentionMs: retention, now: () => now })
    t.after(() => store.close())
    await store.create(fields('old 1'))
    await store.create(fields('old 2'))
    now += retention + 1
    await store.create(fields('new'))
    await (store as unknown as { purge (): Promise<void> }).purge()
    await assert.rejects(store.changes(0, 10), FeedGone)
    await assert.rejects(store.changes(1, 10), FeedGone)
    const page = await store.changes(2, 10)
    assert.deepEqual(page.items.map((c) => c.seq), [3])
    assert.deepEqual((await store.changes(3, 10)), { items: [], next: 3, crossings: [] }) // at the head: an empty page
    await assert.rejects(store.changes(99, 10), (err: unknown) => err instanceof FeedGone && err.reason === 'ahead') // beyond it: gone
  })

  it('keeps an Idempotency-Key for its TTL, then lets the key create again', async (t) => {
    let now = Date.UTC(2030, 0, 1)
    const scratch = await freshSchema()
    const store = await openPostgresStore({ connectionString: scratch.url, feedRetentionMs: 7 * DAY, now: () => now })
    t.after(async () => { await store.close(); await scratch.drop() })
    const claim = { key: 'k', requestHash: 'h' }
    const first = await store.create(fields('A'), claim)
    now += DAY - 1
    assert.equal((await store.create(fields('A'), claim)).plant.id, first.plant.id)
    now += 2
    const later = await store.create(fields('A'), claim)
    assert.equal(later.replayed, false)
    assert.notEqual(later.plant.id, first.plant.id)
  })

  it('rejects a malformed DATABASE_URL with one clear line that does not echo the password', async () => {
    for (const url of ['postgres://', 'postgres://u:s3cret%zz@h/db', 'postgres://u:s3cret@h:99999/db', 'postgres://h/db?pool_max=0']) {
      await assert.rejects(openPostgresStore({ connectionString: url, feedRetentionMs: DAY }), (err: Error) => {
        assert.match(err.message, /^DATABASE_URL/)
        assert.ok(!err.message.includes('s3cret') && !err.message.includes('\n'), err.message)
        return true
      })
    }
  })

  it('applies each migration once when several stores open a fresh schema at the same moment', async (t) => {
    const scratch = await freshSchema()
    const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore({ connectionString: scratch.url, feedRetentionMs: DAY })))
    t.after(async () => { await Promise.all(stores.map((s) => s.close())); await scratch.drop() })
    const { adminQuery } = await import('../helpers/postgres-engine.js')
    const rows = await adminQuery(`SELECT version, count(*)::int AS n FROM ${scratch.name}.schema_migrations GROUP BY version`)
    assert.ok(rows.length > 0)
    for (const r of rows) assert.equal(r.n, 1)
  })

  describe('when PostgreSQL cannot be reached', () => {
    let proxy: DatabaseProxy
    let scratch: Scratch
    before(async () => {
      const target = new URL(TEST_DATABASE_URL!)
      proxy = await DatabaseProxy.start({ host: target.hostname, port: Number(target.port || 5432) })
      scratch = await freshSchema()
    })
    after(async () => {
      await proxy.close()
      await scratch.drop()
    })

    for (const mode of ['refuse', 'freeze'] as const) {
      it(`answers StorageUnavailable within 2 s when the database ${mode === 'refuse' ? 'refuses connections' : 'stops answering'}, and recovers with no reopen`, async (t) => {
        await proxy.set('pass')
        const store = await openPostgresStore({ connectionString: proxy.rewrite(scratch.url), feedRetentionMs: DAY })
        t.after(async () => { await proxy.set('pass'); await store.close() })
        const { plant } = await store.create(fields('before'))
        await store.get(plant.id) // a pooled connection is idle now
        await proxy.set(mode)
        const ops: Array<() => Promise<unknown>> = [
          () => store.get(plant.id),
          () => store.create(fields('during')),
          () => store.update(plant.id, fields('during'), [1]),
          () => store.list({ afterId: 0, limit: 10 }),
          () => store.changes(0, 10),
          () => store.ping()
        ]
        for (const op of ops) {
          const { error } = await within(2_000, op())
          assert.ok(error instanceof StorageUnavailable, `expected StorageUnavailable, got ${String(error)}`)
        }
        // Many at once: none waits longer, and the queue behind a stuck commit is answered too.
        const burst = await within(2_000, Promise.allSettled(Array.from({ length: 50 }, (_, i) => store.create(fields(`b${i}`)))))
        assert.ok(burst.value!.every((r) => r.status === 'rejected' && r.reason instanceof StorageUnavailable))
        await proxy.set('pass')
        const until = Date.now() + 10_000
        for (;;) {
          try {
            await store.ping()
            break
          } catch (err) {
            if (Date.now() > until) throw err
            await sleep(100)
          }
        }
        const after = await store.create(fields('after'))
        assert.equal((await store.get(after.plant.id))!.name, 'after')
      })
    }

    it('gives a batch a deadline that grows with its operations: with the database frozen, a single write and a batch each name their own', async (t) => {
      await proxy.set('pass')
      const store = await openPostgresStore({ connectionString: proxy.rewrite(scratch.url), feedRetentionMs: DAY })
      t.after(async () => { await proxy.set('pass'); await store.close() })
      // Each write alone, on the one pooled connection made idle before the freeze (a new
      // connection would meet the connect timeout first and say so instead).
      const frozen = async (write: () => Promise<unknown>): Promise<unknown> => {
        await proxy.set('pass')
        await store.create(fields('before'))
        await proxy.set('freeze')
        return write().then(() => undefined, (err: unknown) => err)
      }
      const single = await frozen(() => store.create(fields('single')))
      assert.ok(single instanceof StorageUnavailable && /within 1500 ms/.test(single.message), String(single))
      const operations = Array.from({ length: 200 }, (_, i) => ({ op: 'create' as const, fields: fields(`batch ${i}`) }))
      const batch = await frozen(() => store.batch(operations))
      // 1.5 s and 10 ms for each operation beyond the first (group-commit.ts, PER_WRITE_MS).
      assert.ok(batch instanceof StorageUnavailable && /within 3490 ms/.test(batch.message), String(batch))
    })

    it('opens while the database is unreachable, answers StorageUnavailable, and becomes ready when it appears', async (t) => {
      await proxy.set('refuse')
      const fresh = await freshSchema()
      const store = await within(3_000, openPostgresStore({ connectionString: proxy.rewrite(fresh.url), feedRetentionMs: DAY }))
      assert.ok(store.value, `open failed: ${String(store.error)}`)
      t.after(async () => { await store.value!.close(); await fresh.drop() })
      const { error } = await within(2_000, store.value.create(fields('too early')))
      assert.ok(error instanceof StorageUnavailable)
      await proxy.set('pass')
      const until = Date.now() + 15_000
      for (;;) {
        try {
          await store.value.ping()
          break
        } catch (err) {
          if (Date.now() > until) throw err
          await sleep(100)
        }
      }
      assert.equal((await store.value.create(fields('on time'))).plant.name, 'on time')
    })
  })
})
