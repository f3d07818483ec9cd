import assert from 'node:assert/strict'
import http from 'node:http'
import { describe, test, type TestContext } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { ConfigError, loadConfig } from '../../src/config.js'
import { PAGE } from '../../src/feed/pages.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { ENGINES } from '../helpers/engines.js'
import { listen } from '../helpers/listen.js'
import { SseClient } from '../helpers/sse.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void
const MB = 1024 * 1024

/** `count` changes of about 1.2 KB each (a long name, twenty tags), committed in batches. */
async function seed (store: PlantStore, count: number): Promise<void> {
  const tags = Array.from({ length: 20 }, (_, i) => `tag-${i}-${'t'.repeat(36)}`)
  for (let done = 0; done < count; done += 100) {
    await Promise.all(Array.from({ length: Math.min(100, count - done) }, (_, k) =>
      store.create({ name: `plant ${done + k} ${'n'.repeat(180)}`, category: 'indoor', tags, status: 'available' })))
  }
}

/** A subscriber that reads nothing: the server sees a client that never drains. */
function stalledSubscriber (url: string, headers: Record<string, string> = {}): Promise<{ status: number, close (): void }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { accept: 'text/event-stream', ...headers } }, (res) => {
      res.pause()
      res.on('error', () => {})
      resolve({ status: res.statusCode ?? 0, close: () => req.destroy() })
    })
    req.on('error', reject)
  })
}

async function healthLatencies (base: string, n: number): Promise<number[]> {
  const ms: number[] = []
  for (let i = 0; i < n; i++) {
    const started = performance.now()
    const res = await fetch(`${base}/healthz`)
    await res.arrayBuffer()
    assert.equal(res.status, 200)
    ms.push(performance.now() - started)
  }
  return ms.sort((a, b) => a - b)
}
const median = (sorted: number[]): number => sorted[sorted.length >> 1]

function memory (): { heap: number, rss: number } {
  gc()
  const m = process.memoryUsage()
  return { heap: m.heapUsed + m.external, rss: m.rss }
}

/** Resolves once the bytes the server has written stop growing (the subscribers' buffers are full). */
async function settled (sockets: Set<import('node:net').Socket>): Promise<void> {
  let last = -1
  for (let still = 0; still < 3;) {
    await new Promise((resolve) => setTimeout(resolve, 150))
    let written = 0
    for (const s of sockets) written += s.bytesWritten
    still = written === last ? still + 1 : 0
    last = written
  }
}

async function metric (base: string, name: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text()
  const line = text.split('\n').find((l) => l.startsWith(`${name} `))
  assert.ok(line, `${name} is exported`)
  return Number(line.split(' ')[1])
}

for (const engine of ENGINES) {
  describe(`event-stream abuse on ${engine.name}`, { skip: engine.skip }, () => {
    test('subscribers that read nothing, replaying a sizeable log from 0, hold a bounded buffer each, keep memory bounded and /healthz prompt', async (t: TestContext) => {
      const N = 60
      const CHANGES = 8_000
      const store = await engine.open()
      t.after(() => store.close())
      await seed(store, CHANGES)
      const { app, base, sockets } = await listen(t, store, { feedMaxStreamsPerClient: N })
      await healthLatencies(base, 10) // warm: the connection, the route
      const baseline = await healthLatencies(base, 40)
      const before = memory()

      const subscribers = await Promise.all(Array.from({ length: N }, () => stalledSubscriber(`${base}/v3/plant/events?after=0`)))
      t.after(() => { for (const s of subscribers) s.close() })
      assert.ok(subscribers.every((s) => s.status === 200))
      const during = await healthLatencies(base, 40)
      await settled(sockets)
      const after = memory()

      let buffered = 0
      let written = 0
      let furthest = 0
      for (const s of sockets) { buffered = Math.max(buffered, s.writableLength); written += s.bytesWritten; furthest = Math.max(furthest, s.bytesWritten) }
      const logBytes = CHANGES * 1_200
      const growth = { heap: (after.heap - before.heap) / MB, rss: (after.rss - before.rss) / MB }
      t.diagnostic(`${N} stalled subscribers over a log of ${CHANGES} changes (~${(logBytes / MB).toFixed(1)} MB): ` +
        `${(written / MB).toFixed(0)} MB sent into socket buffers, largest user-space buffer ${(buffered / 1024).toFixed(0)} KiB, ` +
        `heap+external ${(before.heap / MB).toFixed(1)} -> ${(after.heap / MB).toFixed(1)} MB (+${growth.heap.toFixed(1)}), ` +
        `rss ${(before.rss / MB).toFixed(0)} -> ${(after.rss / MB).toFixed(0)} MB (+${growth.rss.toFixed(0)}); ` +
        `/healthz median ${median(baseline).toFixed(2)} ms before, ${median(during).toFixed(2)} ms during the replays (max ${during.at(-1)!.toFixed(1)} ms); ` +
        `${app.feedHub.serialised} changes serialised`)
      // One chunk past the socket's high-water mark at most, whatever the log holds.
      assert.ok(buffered <= 64 * 1024, `a stalled subscriber holds ${buffered} bytes in user space`)
      // A memory bound, not a timing one: a stream holds its socket buffer, the hub a few pages.
      assert.ok(growth.heap < 32, `heap and buffers grew by ${growth.heap.toFixed(1)} MB`)
      assert.ok(median(during) < 20 * Math.max(median(baseline), 0.5), '/healthz stays prompt next to its own baseline')
      // Each change is serialised about once, not once per subscriber.
      assert.ok(app.feedHub.serialised <= 2 * CHANGES, `${app.feedHub.serialised} serialisations for ${CHANGES} changes`)
      // The log is read only as far as the furthest client could take, plus a page or two: never ahead of demand.
      const eventBytes = (await (await fetch(`${base}/v3/plant/changes?limit=1`)).text()).length
      assert.ok(app.feedHub.serialised * eventBytes <= furthest + 2 * 256 * eventBytes * 1.1,
        `${app.feedHub.serialised} changes read for a client that took ${furthest} bytes`)

      assert.equal(await metric(base, 'feed_event_streams_open'), N)
      assert.ok(await metric(base, 'feed_lag_changes') > 0, 'stalled subscribers lag behind the head')
      for (const s of subscribers) s.close()
      for (let i = 0; i < 100 && await metric(base, 'feed_event_streams_open') > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50))
      assert.equal(await metric(base, 'feed_event_streams_open'), 0)
      assert.equal(await metric(base, 'feed_lag_changes'), 0)
    })

    test('a replay sends at most one page per stream per turn of the event loop, even into sockets that take every write', async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      // Small changes: the whole replay (~0.5 MB) fits in loopback's socket buffers, so the sockets
      // never push back and only the pump's own yielding lets the loop turn.
      const PAGES = 10
      for (let done = 0; done < PAGES * PAGE; done += 128) {
        await Promise.all(Array.from({ length: 128 }, (_, k) => store.create({ name: `p${String(done + k).padStart(5, '0')}`, category: null, tags: [], status: 'available' })))
      }
      const { base, sockets } = await listen(t, store)
      // One tick per turn of the loop (an immediate queued while immediates run waits for the next
      // turn), noting the bytes the server wrote to its sockets since the previous tick.
      const written = (): number => { let n = 0; for (const s of sockets) n += s.bytesWritten; return n }
      const perTurn: number[] = []
      let last = written()
      let ticking = true
      const tick = (): void => {
        const now = written()
        if (now > last) perTurn.push(now - last)
        last = now
        if (ticking) setImmediate(tick)
      }
      setImmediate(tick)
      t.after(() => { ticking = false })
      // The first stream reads every page from the store; the second, after it, from the hub's cache.
      for (let i = 0; i < 2; i++) {
        const client = await SseClient.connect(`${base}/v3/plant/events?after=0`)
        t.after(() => client.close())
        await client.waitFor(() => client.events.length === PAGES * PAGE)
      }
      await new Promise((resolve) => setImmediate(resolve)) // the tick of the turn that wrote the last page
      ticking = false
      const pageBytes = written() / (2 * PAGES)
      t.diagnostic(`${PAGES} pages of ~${(pageBytes / 1024).toFixed(0)} KiB replayed twice over ${perTurn.length} turns that wrote; ` +
        `largest write in one turn ${(Math.max(...perTurn) / 1024).toFixed(0)} KiB`)
      // Before, a replay from the cache (or from SQLite, read synchronously) went out whole in one turn.
      assert.ok(Math.max(...perTurn) <= 1.5 * pageBytes, `${Math.max(...perTurn)} bytes written in one turn; a page is ~${pageBytes.toFixed(0)}`)
      assert.ok(perTurn.length >= 2 * PAGES, `${2 * PAGES} pages sent over ${perTurn.length} turns`)
    })

    test('live subscribers share one serialisation of each change', async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      const { app, base } = await listen(t, store)
      const clients = await Promise.all(Array.from({ length: 12 }, () => SseClient.connect(`${base}/v3/plant/events`)))
      t.after(() => { for (const c of clients) c.close() })
      await Promise.all(clients.map((c) => c.waitFor(() => c.lastEventId !== undefined)))
      for (let round = 0; round < 10; round++) {
        await Promise.all(Array.from({ length: 20 }, (_, k) => app.inject({ method: 'POST', url: '/v3/plant', headers: { 'content-type': 'application/json' }, payload: { name: `p${round}-${k}` } })))
      }
      await Promise.all(clients.map((c) => c.waitFor(() => c.events.length >= 200)))
      for (const c of clients) assert.deepEqual(c.events.map((e) => e.id), Array.from({ length: 200 }, (_, i) => i + 1))
      assert.equal(app.feedHub.serialised, 200)
    })

    test('where API keys exist, streams without a key take at most half the places (503 saying to send a key): a client with a key still finds one', async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      const key = 'a-key-for-this-test'
      const { base } = await listen(t, store, { apiKeys: [key], feedMaxStreams: 4, feedMaxStreamsPerClient: 10 })
      const open = [await stalledSubscriber(`${base}/v3/plant/events`), await stalledSubscriber(`${base}/v3/plant/events`)]
      t.after(() => { for (const s of open) s.close() })
      assert.deepEqual(open.map((s) => s.status), [200, 200])
      const third = await fetch(`${base}/v3/plant/events`)
      assert.equal(third.status, 503)
      assert.ok(Number(third.headers.get('retry-after')) > 0)
      assert.match((await third.json() as { detail: string }).detail, /at most 2 event streams without an API key .*send a key/)
      const keyed = { authorization: `Bearer ${key}` }
      open.push(await stalledSubscriber(`${base}/v3/plant/events`, keyed), await stalledSubscriber(`${base}/v3/plant/events`, keyed))
      assert.deepEqual(open.map((s) => s.status), [200, 200, 200, 200], 'the keyed clients found the places left')
      assert.equal((await fetch(`${base}/v3/plant/events`, { headers: keyed })).status, 503, 'and the instance\'s cap still holds')
      // A stream without a key that ends gives its place back to another without a key.
      open.shift()!.close()
      let status = 0
      for (let i = 0; i < 100 && status !== 200; i++) {
        const again = await stalledSubscriber(`${base}/v3/plant/events`)
        status = again.status
        if (status === 200) open.push(again)
        else { again.close(); await new Promise((resolve) => setTimeout(resolve, 20)) }
      }
      assert.equal(status, 200)
    })

    test('event streams are capped per client address (429) and in all (503), both with Retry-After; a refused or failed request holds no slot', async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      const { base } = await listen(t, store, { feedMaxStreams: 3, feedMaxStreamsPerClient: 2, trustProxy: ['127.0.0.1'] })
      const from = (address: string) => ({ 'x-forwarded-for': address })
      // Refused positions release their slot: far more of them than the cap, all 410.
      for (let i = 0; i < 5; i++) assert.equal((await fetch(`${base}/v3/plant/events?after=99`, { headers: from('10.0.0.9') })).status, 410)
      const open = [await stalledSubscriber(`${base}/v3/plant/events`, from('10.0.0.1')), await stalledSubscriber(`${base}/v3/plant/events`, from('10.0.0.1'))]
      t.after(() => { for (const s of open) s.close() })
      assert.deepEqual(open.map((s) => s.status), [200, 200])
      const third = await fetch(`${base}/v3/plant/events`, { headers: from('10.0.0.1') })
      assert.equal(third.status, 429)
      assert.ok(Number(third.headers.get('retry-after')) > 0)
      assert.match((await third.json() as { type: string }).type, /too-many-requests$/)
      open.push(await stalledSubscriber(`${base}/v3/plant/events`, from('10.0.0.2')))
      assert.equal(open[2].status, 200)
      const busy = await fetch(`${base}/v3/plant/events`, { headers: from('10.0.0.3') })
      assert.equal(busy.status, 503)
      assert.ok(Number(busy.headers.get('retry-after')) > 0)
      assert.match((await busy.json() as { type: string }).type, /service-busy$/)
      // HEAD opens no stream: it is answered past the cap.
      assert.equal((await fetch(`${base}/v3/plant/events`, { method: 'HEAD', headers: from('10.0.0.1') })).status, 200)
      // A closed stream gives its slot back.
      open.shift()!.close()
      let status = 0
      for (let i = 0; i < 100 && status !== 200; i++) {
        const again = await stalledSubscriber(`${base}/v3/plant/events`, from('10.0.0.1'))
        status = again.status
        if (status === 200) open.push(again)
        else { again.close(); await new Promise((resolve) => setTimeout(resolve, 20)) }
      }
      assert.equal(status, 200)
    })

    test('closing the service ends its event streams, so clients resume on another instance', { timeout: 30_000 }, async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      const { app, base } = await listen(t, store)
      const { ended } = await new Promise<{ ended: Promise<unknown> }>((resolve, reject) => {
        http.get(`${base}/v3/plant/events`, (res) => {
          res.resume()
          resolve({ ended: new Promise((resolve) => res.on('end', resolve).on('close', resolve)) })
        }).on('error', reject)
      })
      assert.equal(app.feedHub.streamsOpen, 1)
      await app.close()
      await ended
      assert.equal(app.feedHub.streamsOpen, 0)
    })

    test('HEAD /v3/plant/events answers with the headers of the stream and ends', { timeout: 30_000 }, async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      const { base } = await listen(t, store)
      const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
        const req = http.request(`${base}/v3/plant/events`, { method: 'HEAD' }, (r) => { r.resume(); r.on('end', () => resolve(r)) })
        req.on('error', reject)
        req.end()
      })
      assert.equal(res.statusCode, 200)
      assert.match(String(res.headers['content-type']), /^text\/event-stream/)
      assert.equal(res.headers['cache-control'], 'no-store')
    })
  })
}

test('the stream caps are configurable, with defaults of 1000 in all and 20 per client address', () => {
  const defaults = loadConfig({})
  assert.equal(defaults.feedMaxStreams, 1000)
  assert.equal(defaults.feedMaxStreamsPerClient, 20)
  const set = loadConfig({ FEED_MAX_STREAMS: '50', FEED_MAX_STREAMS_PER_CLIENT: '5' })
  assert.deepEqual([set.feedMaxStreams, set.feedMaxStreamsPerClient], [50, 5])
  assert.throws(() => loadConfig({ FEED_MAX_STREAMS: '0' }), ConfigError)
  assert.throws(() => loadConfig({ FEED_MAX_STREAMS_PER_CLIENT: 'many' }), ConfigError)
})
