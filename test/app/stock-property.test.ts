import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Random movements and counts against an in-memory model: each is applied or refused as the model
// says, and afterwards the levels, the totals, the status and the ledger are the model's.

const LOCATIONS = ['main', 'shop']
type Command =
  | { kind: 'delta', plant: number, location: string, reason: 'received' | 'sale' | 'return' | 'damaged' | 'correction', amount: number }
  | { kind: 'count', plant: number, location: string, set: number, stale: boolean }

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.record({
    kind: fc.constant('delta' as const),
    plant: fc.integer({ min: 0, max: 1 }),
    location: fc.constantFrom(...LOCATIONS),
    reason: fc.constantFrom('received' as const, 'sale' as const, 'return' as const, 'damaged' as const, 'correction' as const),
    amount: fc.integer({ min: 1, max: 6 })
  }),
  fc.record({ kind: fc.constant('count' as const), plant: fc.integer({ min: 0, max: 1 }), location: fc.constantFrom(...LOCATIONS), set: fc.integer({ min: 0, max: 12 }), stale: fc.boolean() })
)

const SIGN = { received: 1, return: 1, sale: -1, damaged: -1, correction: -1 } as const

async function movement (api: TestApp, id: number, body: object): Promise<number> {
  return (await api.request({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload: body })).statusCode
}

for (const engine of ENGINES) {
  describe(`stock against a model on ${engine.name}`, { skip: engine.skip }, () => {
    test('random movements and counts agree with an in-memory model (levels, totals, status, ledger)', async (t) => {
      const api = await build(t, engine)
      await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'shop' } })
      await fc.assert(fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 20 }), async (commands) => {
        const ids = [(await api.add({ name: 'A' })).id as number, (await api.add({ name: 'B' })).id as number]
        const levels = ids.map(() => new Map<string, number>())
        const tracked = ids.map(() => false)
        const status = ids.map(() => 'available')
        const moved = ids.map(() => 0)
        for (const c of commands) {
          const level = levels[c.plant]
          const onHand = level.get(c.location) ?? 0
          const total = (): number => [...level.values()].reduce((a, b) => a + b, 0)
          const before = tracked[c.plant] ? total() : null
          let expected: number
          let next = onHand
          if (c.kind === 'count') {
            expected = c.stale && onHand !== c.set + 1 ? 409 : 201
            if (expected === 201) next = c.set
            const sent = c.stale ? { set: c.set, expected: c.set + 1, reason: 'count', location: c.location } : { set: c.set, expected: onHand, reason: 'count', location: c.location }
            if (c.stale && onHand === c.set + 1) next = c.set
            assert.equal(await movement(api, ids[c.plant], sent), expected, JSON.stringify(c))
          } else {
            const delta = SIGN[c.reason] * c.amount
            expected = onHand + delta < 0 ? 409 : 201
            if (expected === 201) next = onHand + delta
            assert.equal(await movement(api, ids[c.plant], { delta, reason: c.reason, location: c.location }), expected, JSON.stringify(c))
          }
          if (expected !== 201) continue
          level.set(c.location, next)
          tracked[c.plant] = true
          moved[c.plant]++
          const after = total()
          if (status[c.plant] !== 'pending') {
            if (after === 0 && (before === null || before > 0)) status[c.plant] = 'sold'
            else if (after > 0 && (before === null || before === 0) && status[c.plant] === 'sold') status[c.plant] = 'available'
          }
        }
        for (const [i, id] of ids.entries()) {
          const plant = (await api.request({ method: 'GET', url: `/v3/plant/${id}` })).json()
          const total = [...levels[i].values()].reduce((a, b) => a + b, 0)
          assert.deepEqual(plant.stock, tracked[i] ? { onHand: total, reserved: 0, available: total } : null)
          assert.equal(plant.status, status[i])
          assert.equal(plant.version, 1 + moved[i])
          const stock = (await api.request({ method: 'GET', url: `/v3/plant/${id}/stock` })).json().items
          assert.deepEqual(stock.map((l: { location: string, onHand: number }) => [l.location, l.onHand]), [...levels[i]].sort(([a], [b]) => a < b ? -1 : 1))
          const ledger = (await api.request({ method: 'GET', url: `/v3/plant/${id}/stock/movements?limit=100` })).json().items
          assert.equal(ledger.length, moved[i])
          assert.equal(ledger.reduce((sum: number, m: { delta: number }) => sum + m.delta, 0), total)
        }
      }), { numRuns: 15 })
    })
  })
}
