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

    test('a purged plant takes its levels and ledger with it, by hand or by the retention purge: the places it held stock at can be deleted', async (t) => {
      const DAY = 86_400_000
      let now = Date.parse('2026-03-01T00:00:00Z')
      const api = await build(t, engine, {}, { now: () => now, trashRetentionMs: 30 * DAY })
      const add = async (name: string): Promise<void> => {
        const res = await api.request({ method: 'POST', url: '/v3/locations', payload: { name } })
        assert.equal(res.statusCode, 201, res.body)
      }
      await add('yard')
      await add('shed')
      const byHand = (await api.add({ name: 'Purged by hand' })).id as number
      const byTime = (await api.add({ name: 'Purged in time' })).id as number
      await move(api, byHand, { delta: 3, reason: 'received', location: 'yard' })
      await move(api, byTime, { delta: 2, reason: 'received', location: 'shed' })
      for (const id of [byHand, byTime]) assert.equal((await api.request({ method: 'DELETE', url: `/v3/plant/${id}` })).statusCode, 204)
      // In the trash its stock still holds the places: a restore brings it back.
      assert.equal((await api.request({ method: 'DELETE', url: '/v3/locations/yard' })).statusCode, 409)

      assert.equal((await api.request({ method: 'DELETE', url: `/v3/trash/${byHand}` })).statusCode, 204)
      now += 31 * DAY
      await (api.app.store as unknown as { purge (): Promise<void> | void }).purge()
      assert.deepEqual((await api.request({ method: 'GET', url: '/v3/trash' })).json().items, [])
      for (const name of ['yard', 'shed']) {
        const res = await api.request({ method: 'DELETE', url: `/v3/locations/${name}` })
        assert.equal(res.statusCode, 204, `${name}: ${res.body}`)
      }
      for (const id of [byHand, byTime]) assert.equal((await api.request({ method: 'GET', url: `/v3/plant/${id}/stock/movements` })).statusCode, 404)
      assert.deepEqual(await units(api), { onHand: 0, reserved: 0, available: 0 })
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
