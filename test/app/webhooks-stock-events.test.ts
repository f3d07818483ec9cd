import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import pino from 'pino'
import { Webhook as Verifier } from 'standardwebhooks'
import { stockCrossings } from '../../src/catalogue/stock.js'
import { WebhookDeliverer } from '../../src/webhooks/deliverer.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { PAIRS } from '../helpers/listen.js'
import { receiver, until, type Receiver } from '../helpers/receiver.js'

// Webhooks stock.low and stock.out: sent when a movement takes a plant across into low stock
// (available from above lowStockAt to at or below it) or none (from above 0 to 0), once per
// crossing, from the movement's change in the durable feed (so through restarts), and only to the
// webhooks subscribed to them.

const service = (t: TestContext, engine: typeof ENGINES[number]): Promise<TestApp> =>
  build(t, engine, { webhookAllowPrivate: true }, {}, { webhooks: { retryDelayMs: () => 10 } })

async function subscribe (api: TestApp, url: string, events?: string[]): Promise<{ id: number, secret: string }> {
  const res = await api.request({ method: 'POST', url: '/v3/webhooks', payload: events ? { url, events } : { url } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

const move = async (api: TestApp, id: number, body: Record<string, unknown>): Promise<Record<string, any>> => {
  const res = await api.request({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload: body })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

const bodies = (r: Receiver): any[] => r.received.map((x) => JSON.parse(x.body))
const kinds = (r: Receiver): string[] => bodies(r).map((b) => b.kind)

test('the crossing rule: into low (available from above lowStockAt to at or below it) and into none; staying low or without lowStockAt, nothing', () => {
  const s = (available: number) => ({ onHand: available, reserved: 0, available })
  assert.deepEqual(stockCrossings(s(5), s(3), 3), ['stock.low'])
  assert.deepEqual(stockCrossings(s(3), s(2), 3), [], 'stays low')
  assert.deepEqual(stockCrossings(s(2), s(0), 3), ['stock.out'], 'already low: out only')
  assert.deepEqual(stockCrossings(s(10), s(0), 3), ['stock.low', 'stock.out'], 'straight to 0 crosses both')
  assert.deepEqual(stockCrossings(s(0), s(0), 3), [], 'stays out')
  assert.deepEqual(stockCrossings(s(5), s(1), null), [], 'without lowStockAt never low')
  assert.deepEqual(stockCrossings(s(1), s(0), null), ['stock.out'])
  assert.deepEqual(stockCrossings(s(0), s(4), 3), [], 'lifted above: nothing')
  assert.deepEqual(stockCrossings(null, s(10), 3), [], 'a first movement above lowStockAt')
  assert.deepEqual(stockCrossings(null, s(2), 3), ['stock.low'], 'a first movement crosses from nothing, as the status does')
  assert.deepEqual(stockCrossings(null, s(0), 3), ['stock.low', 'stock.out'])
})

for (const engine of ENGINES) {
  describe(`webhooks stock.low and stock.out (${engine.name})`, { skip: engine.skip }, () => {
    test('a reservation holding the last units sends stock.out, naming the reservation (no movement, no level); its commit and a release send nothing', async (t) => {
      const api = await service(t, engine)
      const stock = await receiver(t)
      await subscribe(api, stock.url, ['stock.low', 'stock.out'])
      const plant = await api.add({ name: 'Fern', lowStockAt: 1 })
      await move(api, plant.id, { delta: 3, reason: 'received' })
      const reserve = async (quantity: number): Promise<{ id: string }> => {
        const res = await api.request({ method: 'POST', url: '/v3/reservations', payload: { lines: [{ plant: plant.id, quantity }], ttlSeconds: 600 } })
        assert.equal(res.statusCode, 201, res.body)
        return res.json()
      }
      const first = await reserve(3) // 3 → 0 available: low and out
      assert.equal((await api.request({ method: 'DELETE', url: `/v3/reservations/${first.id}` })).statusCode, 204) // back to 3: nothing
      const second = await reserve(3) // low and out again
      assert.equal((await api.request({ method: 'POST', url: `/v3/reservations/${second.id}/commit` })).statusCode, 200) // available stays 0: nothing
      const last = await move(api, plant.id, { delta: 2, reason: 'received' }) // lifted: nothing
      await move(api, plant.id, { delta: -1, reason: 'sale' }) // 1: low, by a movement
      await until('the movement\'s stock.low', () => bodies(stock).some((b) => b.version > last.version))
      assert.deepEqual(bodies(stock).map((b) => [b.kind, b.reservation, b.movement === null, b.level === null]), [
        ['stock.low', first.id, true, true], ['stock.out', first.id, true, true],
        ['stock.low', second.id, true, true], ['stock.out', second.id, true, true],
        ['stock.low', null, false, false]
      ])
      assert.deepEqual(bodies(stock)[1].plant.stock, { onHand: 3, reserved: 3, available: 0 })
    })

    test('a subscriber gets one event per crossing, signed, with the record, the movement and the level; staying low sends nothing; lifted and crossing again sends again; others get none', async (t) => {
      const api = await service(t, engine)
      const stock = await receiver(t)
      const changes = await receiver(t)
      const stockHook = await subscribe(api, stock.url, ['stock.low', 'stock.out'])
      await subscribe(api, changes.url) // the default: the three kinds of change only
      const plant = await api.add({ name: 'Fern', lowStockAt: 3 })
      await move(api, plant.id, { delta: 10, reason: 'received' }) // from nothing to 10: above 3
      await move(api, plant.id, { delta: -5, reason: 'sale' }) // 5
      const low = await move(api, plant.id, { delta: -2, reason: 'sale', reference: 'till 2' }) // 3: low
      await move(api, plant.id, { delta: -1, reason: 'sale' }) // 2: stays low
      const out = await move(api, plant.id, { delta: -2, reason: 'sale' }) // 0: out
      await move(api, plant.id, { delta: 10, reason: 'received' }) // 10: above again
      await move(api, plant.id, { delta: -1, reason: 'sale' }) // 9: not low
      const lowAgain = await move(api, plant.id, { delta: -6, reason: 'sale' }) // 3: low again
      const outAgain = await move(api, plant.id, { delta: -3, reason: 'damaged' }) // 0: out again
      const last = await api.request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { name: 'Fern, done' } })
      assert.equal(last.statusCode, 200)

      // Each webhook's deliveries go in feed order: once the last event (and, for the other, the
      // last change) has come, nothing before it is still to come.
      await until('the second stock.out', () => bodies(stock).some((b) => b.version === outAgain.version && b.kind === 'stock.out'))
      await until('the last change', () => bodies(changes).some((b) => b.version === last.json().version))
      assert.deepEqual(kinds(stock), ['stock.low', 'stock.out', 'stock.low', 'stock.out'])
      assert.deepEqual(bodies(stock).map((b) => b.version), [low.version, out.version, lowAgain.version, outAgain.version])
      assert.deepEqual(kinds(changes), ['created', ...Array(9).fill('updated'), 'updated'], 'no stock event to a webhook not subscribed to them')

      const first = bodies(stock)[0]
      assert.equal(first.id, plant.id)
      assert.deepEqual(first.plant.stock, { onHand: 3, reserved: 0, available: 3 })
      assert.equal(first.plant.lowStockAt, 3)
      assert.deepEqual(first.movement, low.movement)
      assert.equal(first.movement.reference, 'till 2')
      assert.deepEqual(first.level, { location: 'main', onHand: 3, reserved: 0, available: 3 })
      assert.equal(typeof first.actor, 'string')
      assert.match(first.at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      // The seq is the movement's change in the feed: the one the other webhook was sent as updated.
      const updated = bodies(changes).find((b) => b.version === low.version)
      assert.equal(first.seq, updated.seq)
      const [request] = stock.received
      assert.equal(request.headers['webhook-id'], `${stockHook.id}-${first.seq}-stock.low`)
      assert.deepEqual(new Verifier(stockHook.secret).verify(request.body, request.headers as Record<string, string>), first)
      assert.equal(new Set(stock.received.map((r) => r.headers['webhook-id'])).size, 4)

      // The feed itself is unchanged: its changes carry no stock events.
      const feed = await api.request({ method: 'GET', url: '/v3/plant/changes?after=0' })
      assert.ok(!feed.body.includes('stock.low') && !('crossings' in feed.json()), feed.body)
    })

    test('subscribed to updated and stock.out, a crossing sends its change, then the event; a movement from above lowStockAt straight to 0 sends stock.low then stock.out', async (t) => {
      const api = await service(t, engine)
      const both = await receiver(t)
      const all = await receiver(t)
      await subscribe(api, both.url, ['updated', 'stock.out'])
      await subscribe(api, all.url, ['stock.low', 'stock.out'])
      const plant = await api.add({ name: 'Palm', lowStockAt: 2 })
      await move(api, plant.id, { delta: 8, reason: 'received' })
      const gone = await move(api, plant.id, { set: 0, expected: 8, reason: 'count' })
      await until('both events', () => all.received.length === 2)
      assert.deepEqual(kinds(all), ['stock.low', 'stock.out'])
      assert.deepEqual(bodies(all).map((b) => b.version), [gone.version, gone.version])
      await until('the change and its event', () => both.received.length === 3)
      assert.deepEqual(kinds(both), ['updated', 'updated', 'stock.out'])
      assert.equal(bodies(both)[2].seq, bodies(both)[1].seq)
      assert.deepEqual(bodies(both)[2].plant.stock, { onHand: 0, reserved: 0, available: 0 })
      assert.equal(bodies(both)[2].plant.status, 'sold')
    })

    test('the deliveries list shows what each attempt sent (event) and filters by it: kind=stock.low, stock.out, updated; changes holds them all, tests the test sends', async (t) => {
      const api = await service(t, engine)
      const r = await receiver(t)
      const hook = await subscribe(api, r.url, ['updated', 'stock.low', 'stock.out'])
      const plant = await api.add({ name: 'Palm', lowStockAt: 2 })
      await move(api, plant.id, { delta: 8, reason: 'received' })
      const gone = await move(api, plant.id, { set: 0, expected: 8, reason: 'count' })
      await until('the changes and their events', () => r.received.length === 4)
      assert.equal((await api.request({ method: 'POST', url: `/v3/webhooks/${hook.id}/test` })).statusCode, 200)
      const list = async (kind?: string): Promise<Array<{ seq: number, event: string | null }>> => {
        const res = await api.request({ method: 'GET', url: `/v3/webhooks/${hook.id}/deliveries${kind === undefined ? '' : `?kind=${kind}`}` })
        assert.equal(res.statusCode, 200, res.body)
        return res.json().items.map((d: { seq: number, event: string | null }) => ({ seq: d.seq, event: d.event }))
      }
      // Deliveries are recorded in batches (delivery-loop.ts): wait for the four, not for a time.
      let all = await list()
      while (all.length < 5) {
        await new Promise((resolve) => setTimeout(resolve, 20))
        all = await list()
      }
      const seq = all.find((d) => d.event === 'stock.out')!.seq
      assert.deepEqual(all.map((d) => d.event), ['test', 'stock.out', 'stock.low', 'updated', 'updated'])
      assert.deepEqual(await list('stock.out'), [{ seq, event: 'stock.out' }])
      assert.deepEqual(await list('stock.low'), [{ seq, event: 'stock.low' }])
      assert.deepEqual((await list('updated')).map((d) => d.event), ['updated', 'updated'])
      assert.deepEqual(await list('deleted'), [])
      assert.deepEqual((await list('changes')).map((d) => d.event), ['stock.out', 'stock.low', 'updated', 'updated'])
      assert.deepEqual(await list('tests'), [{ seq: 0, event: 'test' }])
      assert.equal(gone.version, 3)
      const unknown = await api.request({ method: 'GET', url: `/v3/webhooks/${hook.id}/deliveries?kind=stock.gone` })
      assert.equal(unknown.statusCode, 400)
      assert.match(unknown.body, /stock\.low/)
    })

    test('a failed event is retried alone: the change delivered before it is not sent again', async (t) => {
      const api = await service(t, engine)
      const r = await receiver(t)
      const hook = await subscribe(api, r.url, ['updated', 'stock.out'])
      const plant = await api.add({ name: 'Ivy' })
      await move(api, plant.id, { delta: 1, reason: 'received' })
      await until('the first movement', () => r.received.length === 1)
      r.answers = ['ok', 'fail']
      await move(api, plant.id, { delta: -1, reason: 'sale' })
      await until('the event, again', () => r.received.length === 4)
      assert.deepEqual(kinds(r), ['updated', 'updated', 'stock.out', 'stock.out'])
      const ids = r.received.map((x) => x.headers['webhook-id'])
      assert.equal(ids[2], ids[3], 'the retry has the same webhook-id')
      const seq = bodies(r)[1].seq
      assert.equal(ids[2], `${hook.id}-${seq}-stock.out`)
      await until('the place saved past the change', async () => (await api.request({ method: 'GET', url: `/v3/webhooks/${hook.id}` })).json().deliveredUpTo === seq)
    })

    test('a webhook whose failing event it no longer subscribes to moves on to the next change', async (t) => {
      const api = await service(t, engine)
      const r = await receiver(t)
      const hook = await subscribe(api, r.url, ['updated', 'stock.out'])
      const plant = await api.add({ name: 'Moss' })
      await move(api, plant.id, { delta: 1, reason: 'received' })
      await until('the first movement', () => r.received.length === 1)
      r.answers = ['ok']
      r.then = 'fail'
      await move(api, plant.id, { delta: -1, reason: 'sale' })
      await until('the event failed twice', () => kinds(r).filter((k) => k === 'stock.out').length >= 2)
      const patched = await api.request({ method: 'PATCH', url: `/v3/webhooks/${hook.id}`, payload: { events: ['updated'] } })
      assert.equal(patched.statusCode, 200)
      r.then = 'ok'
      const next = await move(api, plant.id, { delta: 2, reason: 'received' })
      await until('the next change', () => bodies(r).some((b) => b.kind === 'updated' && b.version === next.version))
      assert.equal(bodies(r).filter((b) => b.kind === 'updated').length, 3, 'the change before the event was not sent again')
    })

    test('stock.low and stock.out are refused nowhere but named; an unknown kind is 400 naming the allowed ones', async (t) => {
      const api = await service(t, engine)
      const made = await subscribe(api, 'https://shop.example/stock', ['stock.out'])
      const patched = await api.request({ method: 'PATCH', url: `/v3/webhooks/${made.id}`, payload: { events: ['stock.low', 'stock.out', 'deleted'] } })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.deepEqual(patched.json().events, ['stock.low', 'stock.out', 'deleted'])
      const wrong = await api.request({ method: 'POST', url: '/v3/webhooks', payload: { url: 'https://shop.example/other', events: ['stock.high'] } })
      assert.equal(wrong.statusCode, 400)
      assert.match(wrong.body, /stock\.low, stock\.out/)
    })
  })
}

const silent = pino({ level: 'silent' })

for (const [engine, pair] of Object.entries(PAIRS)) {
  describe(`stock events through restarts (${engine})`, { skip: pair.skip }, () => {
    test('a crossing made while no instance delivers is sent once one starts; a restart, or another instance, does not send it again', async (t) => {
      const stores = await pair.open(t)
      const r = await receiver(t)
      await stores[0].webhooks.create({ url: r.url, events: ['stock.out'], secret: 'whsec_' + Buffer.alloc(32, 7).toString('base64') }, Date.now())
      const plant = await stores[0].create({ name: 'Aloe', category: null, tags: [], status: 'available' })
      const id = plant.plant.id
      await stores[0].stock.move(id, { delta: 2, reason: 'received' })
      await stores[0].stock.move(id, { delta: -2, reason: 'sale' })
      const deliverer = (i: number): WebhookDeliverer => {
        const d = new WebhookDeliverer(stores[i], silent, { allowPrivate: true, retryDelayMs: () => 10, leaseMs: 600 })
        t.after(() => d.close())
        d.start()
        return d
      }
      const first = deliverer(0)
      await until('the first crossing', () => r.received.length === 1)
      await first.close() // a clean stop, as at a restart: the place is saved
      const second = deliverer(1)
      await stores[1].stock.move(id, { delta: 1, reason: 'received' })
      const crossed = await stores[1].stock.move(id, { delta: -1, reason: 'sale' })
      await until('the second crossing', () => bodies(r).some((b) => b.version === crossed.version))
      await second.close()
      deliverer(0)
      await stores[0].stock.move(id, { delta: 3, reason: 'received' })
      const third = await stores[0].stock.move(id, { delta: -3, reason: 'sale' })
      await until('the third crossing', () => bodies(r).some((b) => b.version === third.version))
      assert.deepEqual(kinds(r), ['stock.out', 'stock.out', 'stock.out'])
      assert.equal(new Set(r.received.map((x) => x.headers['webhook-id'])).size, 3, 'each crossing once')
    })
  })
}
