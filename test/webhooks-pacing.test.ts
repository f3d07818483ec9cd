import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { BUSY_SENDS, DeliveryPacer, PACE_WINDOW_MS } from '../src/webhooks/pacer.js'
import { build } from './helpers/app.js'
import { ENGINES } from './helpers/engines.js'
import { receiver, until } from './helpers/receiver.js'

// Requests before deliveries (issue 28: POSTs with a fast receiver subscribed kept at 0.9 of none):
// while requests keep the event loop busy, deliveries are held to BUSY_SENDS a window; a loop busy
// with deliveries alone is not held back. The windows are ticked by hand here, the signals given.

describe('the delivery pacer', () => {
  const made = (busy: { utilization: number, requestAgoMs: number }): DeliveryPacer =>
    new DeliveryPacer({ manual: true, now: () => 1_000_000, lastRequestAt: () => 1_000_000 - busy.requestAgoMs, utilization: () => busy.utilization })

  /** How many of `n` turns asked now have gone through once pending promises have run. */
  async function through (pacer: DeliveryPacer, n: number): Promise<{ gone: () => number }> {
    let gone = 0
    for (let i = 0; i < n; i++) void pacer.turn().then(() => { gone++ })
    await sleep(0)
    return { gone: () => gone }
  }

  test('with requests arriving and the loop busy, BUSY_SENDS go a window, in the order asked; the rest wait', async () => {
    const signals = { utilization: 0.95, requestAgoMs: 5 }
    const pacer = made(signals)
    pacer.tick()
    assert.equal(pacer.holding, true)
    const order: number[] = []
    for (let i = 0; i < BUSY_SENDS * 2 + 5; i++) void pacer.turn().then(() => order.push(i))
    await sleep(0)
    assert.equal(order.length, BUSY_SENDS)
    assert.equal(pacer.held, BUSY_SENDS + 5)
    pacer.tick()
    await sleep(0)
    assert.equal(order.length, BUSY_SENDS * 2)
    // The load eases: everyone held goes at the next window, and from then on nobody waits.
    signals.utilization = 0.2
    pacer.tick()
    await sleep(0)
    assert.deepEqual(order, Array.from({ length: BUSY_SENDS * 2 + 5 }, (_, i) => i))
    assert.equal((await through(pacer, 500)).gone(), 500)
  })

  test('a loop busy with deliveries alone (no request for a window) is not held back', async () => {
    const pacer = made({ utilization: 1, requestAgoMs: PACE_WINDOW_MS + 1 })
    pacer.tick()
    assert.equal(pacer.holding, false)
    assert.equal((await through(pacer, 500)).gone(), 500)
  })

  test('requests on a loop with time to spare are not held back either', async () => {
    const pacer = made({ utilization: 0.3, requestAgoMs: 0 })
    pacer.tick()
    assert.equal((await through(pacer, 500)).gone(), 500)
  })

  test('close lets everyone waiting go', async () => {
    const pacer = made({ utilization: 1, requestAgoMs: 0 })
    pacer.tick()
    const waiting = await through(pacer, BUSY_SENDS + 3)
    assert.equal(waiting.gone(), BUSY_SENDS)
    pacer.close()
    await sleep(0)
    assert.equal(waiting.gone(), BUSY_SENDS + 3)
  })
})

for (const engine of ENGINES) {
  describe(`webhook deliveries yield to requests (${engine.name})`, { skip: engine.skip }, () => {
    test('while the service is busy with requests a fast receiver gets BUSY_SENDS changes a window, then the rest in order once it eases', async (t) => {
      const signals = { utilization: 1 }
      const api = await build(t, engine, { webhookAllowPrivate: true }, {}, {
        webhooks: { pacing: { manual: true, utilization: () => signals.utilization, lastRequestAt: () => Date.now() } }
      })
      const pacer = api.app.webhookDeliverer.pacer
      pacer.tick()
      const r = await receiver(t)
      const res = await api.request({ method: 'POST', url: '/v3/webhooks', payload: { url: r.url } })
      assert.equal(res.statusCode, 201, res.body)
      const changes = BUSY_SENDS * 2 + 10
      const batch = await api.request({
        method: 'POST',
        url: '/v3/plant/batch',
        payload: { operations: Array.from({ length: changes }, (_, i) => ({ op: 'create', plant: { name: `Fern ${i}` } })) }
      })
      assert.equal(batch.statusCode, 200, batch.body)
      await until('a window of sends, the next held', () => r.received.length === BUSY_SENDS && pacer.held === 1)
      // No window passes: nothing more is sent (without the pacer every change would be on its way).
      await sleep(200)
      assert.equal(r.received.length, BUSY_SENDS)
      assert.match((await api.request({ method: 'GET', url: '/metrics' })).body, /^webhook_sends_held 1$/m)
      pacer.tick()
      await until('a second window of sends', () => r.received.length === BUSY_SENDS * 2 && pacer.held === 1)
      signals.utilization = 0
      pacer.tick()
      await until('every change', () => r.received.length === changes)
      assert.match((await api.request({ method: 'GET', url: '/metrics' })).body, /^webhook_sends_held 0$/m)
      const seqs = r.received.map((x) => JSON.parse(x.body).seq as number)
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b))
      assert.equal(new Set(seqs).size, changes)
    })
  })
}
