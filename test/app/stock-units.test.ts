import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// The inventory's units: the stock of the plants that track it, kept by every movement, trash and
// restore in the write's transaction (a trashed plant's stock counts nowhere; a restored one again).

const units = async (api: TestApp): Promise<unknown> => (await api.request({ method: 'GET', url: '/v3/store/inventory' })).json().units

async function move (api: TestApp, id: number, payload: Record<string, unknown>): Promise<void> {
  const res = await api.request({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload })
  assert.equal(res.statusCode, 201, res.body)
}

for (const engine of ENGINES) {
  describe(`the inventory's units on ${engine.name}`, { skip: engine.skip }, () => {
    test('receive, sell, trash and restore move the units; untracked plants add none', async (t) => {
      const api = await build(t, engine)
      assert.deepEqual(await units(api), { onHand: 0, reserved: 0, available: 0 })
      await api.add({ name: 'Untracked' })
      const aloe = (await api.add({ name: 'Aloe' })).id as number
      const fern = (await api.add({ name: 'Fern' })).id as number
      await move(api, aloe, { delta: 10, reason: 'received' })
      await move(api, fern, { delta: 4, reason: 'received', location: 'main' })
      assert.deepEqual(await units(api), { onHand: 14, reserved: 0, available: 14 })
      await move(api, aloe, { delta: -3, reason: 'sale' })
      await move(api, fern, { set: 6, expected: 4, reason: 'count' })
      assert.deepEqual(await units(api), { onHand: 13, reserved: 0, available: 13 })

      assert.equal((await api.request({ method: 'DELETE', url: `/v3/plant/${aloe}` })).statusCode, 204)
      assert.deepEqual(await units(api), { onHand: 6, reserved: 0, available: 6 }, 'a trashed plant\'s stock counts nowhere')
      assert.equal((await api.request({ method: 'POST', url: `/v3/trash/${aloe}/restore` })).statusCode, 200)
      assert.deepEqual(await units(api), { onHand: 13, reserved: 0, available: 13 }, 'a restored plant\'s stock counts again')
      await move(api, aloe, { delta: -7, reason: 'sale' })
      assert.deepEqual(await units(api), { onHand: 6, reserved: 0, available: 6 })

      // Trashed then purged: gone for good, and counted nowhere still.
      assert.equal((await api.request({ method: 'DELETE', url: `/v3/plant/${fern}` })).statusCode, 204)
      assert.equal((await api.request({ method: 'DELETE', url: `/v3/trash/${fern}` })).statusCode, 204)
      assert.deepEqual(await units(api), { onHand: 0, reserved: 0, available: 0 })
      const inventory = (await api.request({ method: 'GET', url: '/v3/store/inventory' })).json()
      assert.deepEqual({ ...inventory, units: undefined }, { available: 1, pending: 0, sold: 1, units: undefined })
    })

    test('a batch that deletes tracked plants takes their units with them', async (t) => {
      const api = await build(t, engine)
      const a = (await api.add({ name: 'A' })).id as number
      const b = (await api.add({ name: 'B' })).id as number
      await move(api, a, { delta: 5, reason: 'received' })
      await move(api, b, { delta: 2, reason: 'received' })
      const res = await api.request({ method: 'POST', url: '/v3/plant/batch', payload: { operations: [{ op: 'delete', id: a }, { op: 'delete', id: b }] } })
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(await units(api), { onHand: 0, reserved: 0, available: 0 })
    })
  })
}
