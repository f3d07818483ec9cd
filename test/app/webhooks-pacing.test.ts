import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { BUSY_REQUESTS, BUSY_SENDS, BUSY_UTILIZATION, DeliveryPacer, PACE_WINDOW_MS } from '../../src/webhooks/pacer.js'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { receiver, until } from '../helpers/receiver.js'

// Requests before deliveries (the target: POSTs with a fast receiver subscribed kept at 0.9 of none):
// while requests queue on a busy process, deliveries are held to BUSY_SENDS a window; a process busy
// with deliveries alone, or requests queueing on an idle one, are not held back. The windows are
// ticked by hand here, the signals given.

/** A window of PACE_WINDOW_MS has passed. */
const tick = (pacer: DeliveryPacer): void => { pacer.tick(PACE_WINDOW_MS) }

describe('the delivery pacer', () => {
  /** `inFlight`: requests in flight on average over each window. */
  const made = (busy: { utilization: number, inFlight: number }): DeliveryPacer =>
    new DeliveryPacer({ manual: true, requestMs: () => busy.inFlight * PACE_WINDOW_MS, utilization: () => busy.utilization })

  /** How many of `n` turns asked now have gone through once pending promises have run. */
  async function through (pacer: DeliveryPacer, n: number): Promise<{ gone: () => number }> {
    let gone = 0
    for (let i = 0; i < n; i++) void pacer.turn().then(() => { gone++ })
    await sleep(0)
    return { gone: () => gone }
  }

  test('with requests queueing on a busy process, BUSY_SENDS go a window, in the order asked; the rest wait', async () => {
    const signals = { utilization: BUSY_UTILIZATION, inFlight: BUSY_REQUESTS }
    const pacer = made(signals)
    tick(pacer)
    assert.equal(pacer.holding, true)
    const order: number[] = []
    for (let i = 0; i < BUSY_SENDS * 2 + 5; i++) void pacer.turn().then(() => order.push(i))
    await sleep(0)
    assert.equal(order.length, BUSY_SENDS)
    assert.equal(pacer.held, BUSY_SENDS + 5)
    tick(pacer)
    await sleep(0)
    assert.equal(order.length, BUSY_SENDS * 2)
    // The load eases: everyone held goes at the next window, and from then on nobody waits.
    signals.utilization = BUSY_UTILIZATION - 0.01
    tick(pacer)
    await sleep(0)
    assert.deepEqual(order, Array.from({ length: BUSY_SENDS * 2 + 5 }, (_, i) => i))
    assert.equal((await through(pacer, 500)).gone(), 500)
  })

  test('a process busy with deliveries alone (no request answered in the window) is not held back', async () => {
    const pacer = made({ utilization: 1, inFlight: 0 })
    tick(pacer)
    assert.equal(pacer.holding, false)
    assert.equal((await through(pacer, 500)).gone(), 500)
  })

  test('a busy process with few requests in flight (1,000 writes a second on one core) is not held back', async () => {
    const pacer = made({ utilization: 1, inFlight: BUSY_REQUESTS - 1 })
    tick(pacer)
    assert.equal(pacer.holding, false)
    assert.equal((await through(pacer, 500)).gone(), 500)
  })

  test('many requests in flight on a process with time to spare (slow uploads) are not held back either', async () => {
    const pacer = made({ utilization: 0.3, inFlight: 100 })
    tick(pacer)
    assert.equal((await through(pacer, 500)).gone(), 500)
  })

  test('close lets everyone waiting go', async () => {
    const pacer = made({ utilization: 1, inFlight: 32 })
    tick(pacer)
    const waiting = await through(pacer, BUSY_SENDS + 3)
    assert.equal(waiting.gone(), BUSY_SENDS)
    pacer.close()
    await sleep(0)
    assert.equal(waiting.gone(), BUSY_SENDS + 3)
  })
})

for (const engine of ENGINES) {
  describe(`webhook deliveries yield to requests (${engine.name})`, { skip: engine.skip }, () => {
    test('while requests queue on a busy service a fast receiver gets BUSY_SENDS changes a window, then the rest in order once it eases', async (t) => {
      const signals = { utilization: 1 }
      const api = await build(t, engine, { webhookAllowPrivate: true }, {}, {
        webhooks: { pacing: { manual: true, utilization: () => signals.utilization, requestMs: () => 32 * PACE_WINDOW_MS } }
      })
      const pacer = api.app.webhookDeliverer.pacer
      tick(pacer)
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
      const held = (await api.request({ method: 'GET', url: '/metrics' })).body
      assert.match(held, /^webhook_deliveries_held 1$/m)
      assert.match(held, /^webhook_deliveries_held_seconds_total 0\.1$/m) // one busy window of 100 ms so far
      tick(pacer)
      await until('a second window of sends', () => r.received.length === BUSY_SENDS * 2 && pacer.held === 1)
      signals.utilization = 0
      tick(pacer)
      await until('every change', () => r.received.length === changes)
      const eased = (await api.request({ method: 'GET', url: '/metrics' })).body
      assert.match(eased, /^webhook_deliveries_held 0$/m)
      assert.match(eased, /^webhook_deliveries_held_seconds_total 0\.2$/m) // two busy windows, then one not
      const seqs = r.received.map((x) => JSON.parse(x.body).seq as number)
      assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b))
      assert.equal(new Set(seqs).size, changes)
    })
  })
}
