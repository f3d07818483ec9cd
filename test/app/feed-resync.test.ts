import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { PlantStore } from '../../src/store/plant-store.js'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { PAIRS, listen } from '../helpers/listen.js'
import { SseClient } from '../helpers/sse.js'

const DAY = 86_400_000
type Record = { id: number, name: string, category: string | null, tags: string[], status: string }
type Change = { seq: number, kind: string, id: number, version: number, plant: Record | null }

const json = { 'content-type': 'application/json' }
const purge = (store: PlantStore): Promise<void> | void => (store as unknown as { purge (): Promise<void> | void }).purge()

async function allChanges (base: string, from = 0): Promise<Change[]> {
  const all: Change[] = []
  for (let after = from; ;) {
    const page = await (await fetch(`${base}/v3/plant/changes?after=${after}&limit=1000`)).json() as { items: Change[], next: number }
    if (page.items.length === 0) return all
    all.push(...page.items)
    after = page.next
  }
}

/** The whole catalogue, page by page, and the Feed-Position of the first and of the last page. */
async function loadCatalogue (base: string, limit = 500): Promise<{ plants: Map<number, Record>, position: number, last: number }> {
  const plants = new Map<number, Record>()
  let position = -1
  let last = -1
  for (let cursor: string | null = ''; cursor !== null;) {
    const res = await fetch(`${base}/v3/plant?limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`)
    last = Number(res.headers.get('feed-position'))
    if (position < 0) position = last
    const page = await res.json() as { items: Record[], nextCursor: string | null }
    for (const p of page.items) plants.set(p.id, p)
    cursor = page.nextCursor
  }
  return { plants, position, last }
}

for (const engine of ENGINES) {
  describe(`feed resynchronisation on ${engine.name}`, { skip: engine.skip }, () => {
    test('every read of plants (list, by id, 304, HEAD, inventory) carries Feed-Position: the newest change it reflects', async (t) => {
      const { request, add } = await build(t, engine)
      const doc = (await request({ method: 'GET', url: '/v3/openapi.json' })).json()
      assert.ok(doc.paths['/v3/plant'].get.responses['200'].headers['feed-position'])
      assert.ok(doc.paths['/v3/plant/{id}'].get.responses['200'].headers['feed-position'])
      assert.ok(doc.paths['/v3/plant/{id}'].get.responses['304'].headers['feed-position'])
      assert.ok(doc.paths['/v3/store/inventory'].get.responses['200'].headers['feed-position'])

      const empty = await request({ method: 'GET', url: '/v3/plant' })
      assert.equal(empty.headers['feed-position'], '0')
      const a = await add({ name: 'a' })
      await add({ name: 'b' })
      await request({ method: 'PUT', url: '/v3/plant', payload: { id: a.id, name: 'a2' } })
      const head = (await request({ method: 'GET', url: '/v3/plant/changes' })).json().next
      assert.equal(head, 3)
      const list = await request({ method: 'GET', url: '/v3/plant?limit=1' })
      assert.equal(list.headers['feed-position'], String(head))
      const one = await request({ method: 'GET', url: `/v3/plant/${a.id}` })
      assert.equal(one.headers['feed-position'], String(head))
      const notModified = await request({ method: 'GET', url: `/v3/plant/${a.id}`, headers: { 'if-none-match': String(one.headers.etag) } })
      assert.equal(notModified.statusCode, 304)
      assert.equal(notModified.headers['feed-position'], String(head))
      assert.equal((await request({ method: 'GET', url: '/v3/store/inventory' })).headers['feed-position'], String(head))
      await request({ method: 'DELETE', url: `/v3/plant/${a.id}` })
      assert.equal((await request({ method: 'GET', url: '/v3/plant' })).headers['feed-position'], String(head + 1))
      assert.equal((await request({ method: 'HEAD', url: '/v3/plant' })).headers['feed-position'], String(head + 1))
    })

    test('events with no position start live at the head, naming it first in a bare id', async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      const { app, base } = await listen(t, store)
      for (const name of ['a', 'b']) await app.inject({ method: 'POST', url: '/v3/plant', headers: json, payload: { name } })
      const live = await SseClient.connect(`${base}/v3/plant/events`)
      t.after(() => live.close())
      assert.equal(live.status, 200)
      await live.waitFor(() => live.lastEventId !== undefined)
      assert.equal(live.lastEventId, 2)
      await app.inject({ method: 'POST', url: '/v3/plant', headers: json, payload: { name: 'c' } })
      await live.waitFor(() => live.events.length >= 1)
      assert.deepEqual(live.events.map((e) => [e.id, e.data.plant.name]), [[3, 'c']])
      const head = await app.inject({ method: 'HEAD', url: '/v3/plant/events' })
      assert.equal(head.statusCode, 200)
      assert.match(String(head.headers['content-type']), /^text\/event-stream/)
      assert.equal(head.body, '')
    })

    test('events with no position are never 410, even when every stored change has expired', async (t) => {
      let now = Date.now()
      const store = await engine.open({ feedRetentionMs: DAY, now: () => now })
      t.after(() => store.close())
      const { app, base } = await listen(t, store)
      for (const name of ['a', 'b']) await app.inject({ method: 'POST', url: '/v3/plant', headers: json, payload: { name } })
      now += 2 * DAY
      await purge(store)
      assert.equal((await app.inject({ method: 'GET', url: '/v3/plant/changes?after=0' })).statusCode, 410)
      assert.deepEqual((await app.inject({ method: 'GET', url: '/v3/plant/changes?after=2' })).json(), { items: [], next: 2 })
      assert.equal((await app.inject({ method: 'HEAD', url: '/v3/plant/events' })).statusCode, 200)
      assert.equal((await app.inject({ method: 'GET', url: '/v3/plant' })).headers['feed-position'], '2')
      const live = await SseClient.connect(`${base}/v3/plant/events`)
      t.after(() => live.close())
      assert.equal(live.status, 200)
      await live.waitFor(() => live.lastEventId === 2)
      await app.inject({ method: 'POST', url: '/v3/plant', headers: json, payload: { name: 'c' } })
      await live.waitFor(() => live.events.length >= 1)
      assert.deepEqual(live.events.map((e) => e.id), [3])
    })

    test('a position beyond the head is 410 on the changes page, the event stream and its HEAD', async (t) => {
      const { request, add } = await build(t, engine)
      await add({ name: 'a' })
      for (const url of ['/v3/plant/changes?after=2', '/v3/plant/events?after=2']) {
        const res = await request({ method: 'GET', url })
        assert.equal(res.statusCode, 410, url)
        assert.match(res.json().detail, /beyond the head/)
      }
      const byHeader = await request({ method: 'GET', url: '/v3/plant/events', headers: { 'last-event-id': '5' } })
      assert.equal(byHeader.statusCode, 410)
      assert.equal((await request({ method: 'HEAD', url: '/v3/plant/events?after=2' })).statusCode, 410)
      assert.equal((await request({ method: 'HEAD', url: '/v3/plant/events?after=1' })).statusCode, 200)
      assert.equal((await request({ method: 'GET', url: '/v3/plant/changes?after=1' })).statusCode, 200)
    })

    test('a client whose position expired (410) reloads the list, follows the feed from its Feed-Position and ends with an exact copy while writes continue', async (t) => {
      let now = Date.now()
      const store = await engine.open({ feedRetentionMs: DAY, now: () => now })
      t.after(() => store.close())
      const { base } = await listen(t, store)
      const post = async (body: object) => (await (await fetch(`${base}/v3/plant`, { method: 'POST', headers: json, body: JSON.stringify(body) })).json()) as Record
      const ids: number[] = []
      for (let i = 0; i < 10; i++) ids.push(...(await Promise.all(Array.from({ length: 30 }, (_, k) => post({ name: `seed ${i}-${k}` })))).map((p) => p.id))
      // The client's copy is from long ago: its position has expired.
      now += 2 * DAY
      await purge(store)
      const stale = await fetch(`${base}/v3/plant/events`, { headers: { 'last-event-id': '1' } })
      assert.equal(stale.status, 410)

      // Writes go on while the client reloads and follows: creates, updates and deletes.
      let writing = true
      let writes = 0
      const writer = (async () => {
        for (let round = 0; writing || round < 5; round++) {
          await Promise.all(Array.from({ length: 6 }, async (_, k) => {
            const pick = ids[(round * 13 + k * 7) % ids.length]
            if (k === 0) ids.push((await post({ name: `new ${round}`, tags: ['fresh'] })).id)
            else if (k === 1 && ids.length > 50) {
              const id = ids.splice(ids.indexOf(pick), 1)[0]
              await fetch(`${base}/v3/plant/${id}`, { method: 'DELETE' })
            } else {
              await fetch(`${base}/v3/plant`, { method: 'PUT', headers: json, body: JSON.stringify({ id: pick, name: `r${round}-${k}`, status: 'pending' }) })
            }
            writes++
          }))
        }
      })()

      const { plants: copy, position, last } = await loadCatalogue(base, 10) // small pages: the reload takes a while
      assert.ok(last > position, 'writes went on during the reload')
      const feed = await SseClient.connect(`${base}/v3/plant/events`, { 'last-event-id': String(position) })
      t.after(() => feed.close())
      assert.equal(feed.status, 200)
      let applied = 0
      const apply = () => {
        for (const e of feed.events.slice(applied)) {
          if (e.data.plant === null) copy.delete(e.data.id)
          else copy.set(e.data.id, e.data.plant)
        }
        applied = feed.events.length
      }
      await feed.waitFor(() => feed.events.length >= 20)
      apply()
      writing = false
      await writer
      const head = (await allChanges(base, position)).at(-1)!.seq
      await feed.waitFor(() => feed.events.at(-1)?.id === head)
      apply()
      t.diagnostic(`${writes} writes during the resync; position of the first page ${position}, of the last ${last}, head ${head}`)
      const seqs = feed.events.map((e) => e.id)
      assert.equal(seqs[0], position + 1, 'nothing missed')
      assert.deepEqual(seqs, Array.from({ length: head - position }, (_, i) => position + 1 + i), 'each change once, in order')
      assert.deepEqual(copy, (await loadCatalogue(base)).plants)
    })
  })
}

for (const [name, pair] of Object.entries(PAIRS)) {
  test(`${name}: a read through another instance never names a position newer than what it returns`, { skip: pair.skip }, async (t) => {
    const stores = await pair.open(t)
    const [writer, reader] = await Promise.all(stores.map((s) => listen(t, s)))
    const put = (id: number, n: number) => fetch(`${writer.base}/v3/plant`, { method: 'PUT', headers: json, body: JSON.stringify({ id, name: `v${n}` }) })
    const ids: number[] = []
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${writer.base}/v3/plant`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'v0' }) })
      ids.push(((await res.json()) as Record).id)
    }
    // Each read: the version it shows (by name) and the position it names.
    const reads: Array<{ id: number, shown: number, position: number }> = []
    let writing = true
    const writes = (async () => {
      for (let n = 1; n <= 60; n++) await Promise.all(ids.map((id) => put(id, n)))
      writing = false
    })()
    while (writing) {
      const [one, list] = await Promise.all([fetch(`${reader.base}/v3/plant/${ids[reads.length % ids.length]}`), fetch(`${reader.base}/v3/plant`)])
      const plant = await one.json() as Record
      reads.push({ id: plant.id, shown: Number(plant.name.slice(1)), position: Number(one.headers.get('feed-position')) })
      const listPosition = Number(list.headers.get('feed-position'))
      for (const p of ((await list.json()) as { items: Record[] }).items) reads.push({ id: p.id, shown: Number(p.name.slice(1)), position: listPosition })
    }
    await writes
    const changes = await allChanges(writer.base)
    // A change at or below a read's position must already show in what the read returned.
    for (const read of reads) {
      const reflected = changes.filter((c) => c.id === read.id && c.seq <= read.position && c.plant !== null)
      const newest = reflected.length === 0 ? 0 : Number(reflected.at(-1)!.plant!.name.slice(1))
      assert.ok(newest <= read.shown, `position ${read.position} promised v${newest} of plant ${read.id}, the read showed v${read.shown}`)
    }
    const lagging = reads.filter((r) => r.position < changes.filter((c) => c.id === r.id && Number(c.plant?.name.slice(1)) <= r.shown).at(-1)!.seq)
    t.diagnostic(`${reads.length} reads checked; ${lagging.length} named a position a little older than their data`)
    assert.ok(reads.length > 20)
  })
}
