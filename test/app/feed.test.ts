import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { SseClient } from '../helpers/sse.js'
import { PAIRS, listen } from '../helpers/listen.js'

const DAY = 86_400_000

async function post (base: string, body: object) {
  const res = await fetch(`${base}/v3/plant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  assert.equal(res.status, 200)
  return res.json() as Promise<{ id: number }>
}

for (const engine of ENGINES) {
  describe(`change feed on ${engine.name}`, { skip: engine.skip }, () => {
    test('every write appends one change, in order, with kind, id, version and the record after it', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Fern 2', status: 'sold' } })
      await request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })
      await request({ method: 'POST', url: '/v3/plant', payload: { name: '' } }) // refused: no change
      const page = (await request({ method: 'GET', url: '/v3/plant/changes' })).json()
      assert.deepEqual(page.items.map((c: any) => [c.kind, c.id, c.version]), [['created', plant.id, 1], ['updated', plant.id, 2], ['deleted', plant.id, 3]])
      assert.deepEqual(page.items[0].plant, plant)
      assert.deepEqual(page.items[1].plant, { ...plant, name: 'Fern 2', status: 'sold', updatedAt: page.items[1].plant.updatedAt, version: 2 })
      assert.equal(page.items[2].plant, null)
      const seqs = page.items.map((c: any) => c.seq)
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b))
      assert.equal(page.next, seqs[2])
    })

    test('catch-up pages: after and limit walk the log; next continues it; a sequence beyond the head is 410, never an empty page', async (t) => {
      const { request, add } = await build(t, engine)
      for (let i = 0; i < 7; i++) await add({ name: `p${i}` })
      const seen: number[] = []
      let after = 0
      for (;;) {
        const page = (await request({ method: 'GET', url: `/v3/plant/changes?after=${after}&limit=3` })).json()
        if (page.items.length === 0) break
        assert.ok(page.items.length <= 3)
        seen.push(...page.items.map((c: any) => c.seq))
        after = page.next
      }
      assert.equal(seen.length, 7)
      assert.equal(new Set(seen).size, 7)
      assert.deepEqual((await request({ method: 'GET', url: `/v3/plant/changes?after=${after}` })).json(), { items: [], next: after })
      const future = await request({ method: 'GET', url: `/v3/plant/changes?after=${after + 1}` })
      assert.equal(future.statusCode, 410)
      assert.match(future.json().type, /gone$/)
      assert.match(future.json().detail, /beyond the head/)
    })

    test('a malformed after, limit or Last-Event-ID is 400 in the contract shape', async (t) => {
      const { request } = await build(t, engine)
      for (const query of ['after=-1', 'after=abc', 'after=1.5', 'limit=0', 'limit=1001', 'since=3']) {
        const res = await request({ method: 'GET', url: `/v3/plant/changes?${query}` })
        assert.equal(res.statusCode, 400, query)
        assert.match(res.json().type, /invalid-input$/)
      }
      for (const id of ['abc', '-1', '99999999999999999999']) {
        const res = await request({ method: 'GET', url: '/v3/plant/events', headers: { 'last-event-id': id } })
        assert.equal(res.statusCode, 400, id)
        assert.match(res.json().type, /invalid-input$/)
      }
      assert.equal((await request({ method: 'GET', url: '/v3/plant/events?after=x' })).statusCode, 400)
    })

    test('the event stream sends each change as id/event/data and resumes after Last-Event-ID with nothing lost or doubled', async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      const { base } = await listen(t, store)
      const a = await post(base, { name: 'a' })
      const first = await SseClient.connect(`${base}/v3/plant/events?after=0`)
      assert.equal(first.status, 200)
      await first.waitFor(() => first.events.length >= 1)
      await post(base, { name: 'b' })
      await first.waitFor(() => first.events.length >= 2)
      first.close()
      const lastId = first.events[1].id
      await fetch(`${base}/v3/plant/${a.id}`, { method: 'DELETE' })
      await post(base, { name: 'c' })
      const second = await SseClient.connect(`${base}/v3/plant/events`, { 'last-event-id': String(lastId) })
      t.after(() => second.close())
      await second.waitFor(() => second.events.length >= 2)
      assert.deepEqual(first.events.map((e) => e.event), ['created', 'created'])
      assert.deepEqual(second.events.map((e) => e.event), ['deleted', 'created'])
      assert.ok(second.events[0].id > lastId)
      assert.deepEqual(second.events[0].data, { seq: second.events[0].id, kind: 'deleted', id: a.id, version: 2, actor: 'anonymous', at: second.events[0].data.at, plant: null })
      assert.equal(second.events[1].data.plant.name, 'c')
      // Each record sent carries its version.
      assert.deepEqual([...first.events, second.events[1]].map((e) => e.data.plant.version), [1, 1, 1])
    })
  })
}

describe('change feed, embedded engine specifics', () => {
  test('changes older than the retention are dropped and asking for them answers 410', async (t) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'plants-feed-'))
    let now = Date.now()
    const clock = () => now
    const before = openSqliteStore({ dataDir, feedRetentionMs: DAY, now: clock })
    await before.create({ name: 'old', category: null, tags: [], status: 'available' })
    await before.close()
    now += 2 * DAY
    const store = openSqliteStore({ dataDir, feedRetentionMs: DAY, now: clock }) // purges on open
    t.after(() => store.close())
    await store.create({ name: 'new', category: null, tags: [], status: 'available' })
    const app = await buildApp(testConfig(), { store })
    t.after(() => app.close())
    const gone = await app.inject({ method: 'GET', url: '/v3/plant/changes?after=0' })
    assert.equal(gone.statusCode, 410)
    assert.match(gone.json().type, /gone$/)
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/events?after=0' })).statusCode, 410)
    const kept = await app.inject({ method: 'GET', url: '/v3/plant/changes?after=1' })
    assert.deepEqual(kept.json().items.map((c: any) => c.plant.name), ['new'])
    // A later purge inside the retention keeps the newer change and the floor where it was.
    now += DAY / 2
    ;(store as unknown as { purge (): void }).purge()
    const again = await app.inject({ method: 'GET', url: '/v3/plant/changes?after=1' })
    assert.deepEqual(again.json().items.map((c: any) => c.plant.name), ['new'])
    now += DAY
    ;(store as unknown as { purge (): void }).purge()
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/changes?after=1' })).statusCode, 410)
    assert.deepEqual((await app.inject({ method: 'GET', url: '/v3/plant/changes?after=2' })).json().items, [])
    // Every change has expired: the head is the floor, and a stream with no position starts there.
    assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/changes?after=3' })).statusCode, 410)
  })

  test('a subscriber that stops reading holds at most a bounded buffer on the server, then catches up exactly', async (t) => {
    const store = openSqliteStore({ dataDir: ':memory:', feedRetentionMs: DAY })
    t.after(() => store.close())
    const { base, sockets } = await listen(t, store)
    const slow = await SseClient.connect(`${base}/v3/plant/events?after=0`)
    t.after(() => slow.close())
    slow.pause()
    const tags = Array.from({ length: 20 }, (_, i) => `tag-${i}-${'x'.repeat(30)}`)
    let produced = 0
    let maxBuffered = 0
    for (let round = 0; round < 40; round++) {
      await Promise.all(Array.from({ length: 100 }, (_, k) => post(base, { name: `plant ${round}-${k} ${'n'.repeat(150)}`, tags })))
      produced += 100
      for (const s of sockets) maxBuffered = Math.max(maxBuffered, s.writableLength)
    }
    const feedBytes = produced * 1000
    t.diagnostic(`slow subscriber: ${produced} changes (~${(feedBytes / 1e6).toFixed(1)} MB of events); largest server-side socket buffer ${(maxBuffered / 1024).toFixed(0)} KiB`)
    assert.ok(maxBuffered < 1024 * 1024, `buffered ${maxBuffered} bytes for one slow client`)
    assert.ok(feedBytes > 4 * maxBuffered)
    slow.resume()
    await slow.waitFor(() => slow.events.length >= produced, 60_000)
    const ids = slow.events.map((e) => e.id)
    assert.equal(new Set(ids).size, produced)
  })
})

for (const [name, pair] of Object.entries(PAIRS)) {
  test(`${name}: 1,000 writes through two instances while a subscriber reconnects: its copy equals the catalogue, each sequence once`, { skip: pair.skip }, async (t) => {
    const stores = await pair.open(t)
    const [one, two] = await Promise.all(stores.map((s) => listen(t, s)))
    const bases = [one.base, two.base]

    const copy = new Map<number, unknown>()
    const seqs: number[] = []
    let lastId = 0
    let subscriber: SseClient | undefined
    let received = 0
    const follow = async (base: string) => {
      subscriber = await SseClient.connect(`${base}/v3/plant/events`, { 'last-event-id': String(lastId) })
    }
    const drain = () => {
      for (const e of subscriber!.events.splice(0)) {
        seqs.push(e.id)
        lastId = e.id
        received++
        if (e.data.plant === null) copy.delete(e.data.id)
        else copy.set(e.data.id, e.data.plant)
      }
    }
    await follow(bases[0])

    // 1,000 writes: creates, updates and deletes, spread over both instances, 20 at a time.
    const ids: number[] = []
    let writes = 0
    for (let round = 0; writes < 1000; round++) {
      await Promise.all(Array.from({ length: 20 }, async (_, k) => {
        const base = bases[(round + k) % 2]
        if (ids.length > 10 && k % 5 === 0) {
          const id = ids[(round * 7 + k) % ids.length]
          await fetch(`${base}/v3/plant`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id, name: `r${round}` }) })
        } else if (ids.length > 10 && k % 7 === 0) {
          const id = ids.splice((round + k) % ids.length, 1)[0]
          await fetch(`${base}/v3/plant/${id}`, { method: 'DELETE' })
        } else {
          ids.push((await post(base, { name: `p${round}-${k}`, tags: [`r${round % 3}`] })).id)
        }
      }))
      writes += 20
      if (round % 10 === 9) {
        // Disconnect mid-stream and resume on the other instance from the last event kept.
        drain()
        subscriber!.close()
        await follow(bases[round % 2])
      }
    }
    // Wait until the subscriber has everything the log holds.
    let total = 0
    for (let after = 0; ;) {
      const page = await (await fetch(`${bases[0]}/v3/plant/changes?after=${after}&limit=1000`)).json() as { items: unknown[], next: number }
      if (page.items.length === 0) break
      total += page.items.length
      after = page.next
    }
    await subscriber!.waitFor(() => received + subscriber!.events.length >= total)
    drain()
    subscriber!.close()

    assert.equal(new Set(seqs).size, seqs.length, 'no sequence seen twice')
    assert.equal(seqs.length, total, 'every sequence seen')
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'in order')
    const catalogue = new Map<number, unknown>()
    for (let cursor: string | null = ''; cursor !== null;) {
      const page = await (await fetch(`${bases[1]}/v3/plant?limit=500${cursor ? `&cursor=${cursor}` : ''}`)).json() as { items: Array<{ id: number }>, nextCursor: string | null }
      for (const p of page.items) catalogue.set(p.id, p)
      cursor = page.nextCursor
    }
    assert.deepEqual(copy, catalogue)

    // The catch-up endpoint rebuilds the same copy from the start.
    const replay = new Map<number, unknown>()
    for (let after = 0; ;) {
      const page = await (await fetch(`${bases[1]}/v3/plant/changes?after=${after}&limit=333`)).json() as { items: any[], next: number }
      if (page.items.length === 0) break
      for (const c of page.items) { if (c.plant === null) replay.delete(c.id); else replay.set(c.id, c.plant) }
      after = page.next
    }
    assert.deepEqual(replay, catalogue)
  })
}
