import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// The record's stock (null until a plant tracks it) and lowStockAt (a field like the store fields).

for (const engine of ENGINES) {
  describe(`the record's stock and lowStockAt on ${engine.name}`, { skip: engine.skip }, () => {
    test('a new plant has stock null and lowStockAt null; POST, PUT and PATCH set lowStockAt; reads, lists and the feed carry both', async (t) => {
      const { app, request, add } = await build(t, engine)
      const plain = await add({ name: 'Fern' })
      assert.equal(plain.stock, null)
      assert.equal(plain.lowStockAt, null)
      const watched = await add({ name: 'Monstera', lowStockAt: 3 })
      assert.equal(watched.lowStockAt, 3)
      const put = await request({ method: 'PUT', url: '/v3/plant', payload: { id: watched.id, name: 'Monstera', lowStockAt: 5 } })
      assert.equal(put.statusCode, 200, put.body)
      assert.equal(put.json().lowStockAt, 5)
      const patched = await request({ method: 'PATCH', url: `/v3/plant/${watched.id}`, payload: { lowStockAt: 0 } })
      assert.equal(patched.statusCode, 200, patched.body)
      assert.equal(patched.json().lowStockAt, 0)
      // PUT replaces the whole plant: lowStockAt left out is its default.
      const again = await request({ method: 'PUT', url: '/v3/plant', payload: { id: plain.id, name: 'Fern' } })
      assert.equal(again.json().lowStockAt, null)
      const read = await request({ method: 'GET', url: `/v3/plant/${watched.id}` })
      assert.deepEqual([read.json().stock, read.json().lowStockAt], [null, 0])
      const listed = (await request({ method: 'GET', url: '/v3/plant' })).json().items
      assert.deepEqual(listed.map((p: { lowStockAt: unknown, stock: unknown }) => [p.lowStockAt, p.stock]), [[null, null], [0, null]])
      const { items } = await app.store.changes(0, 100)
      assert.deepEqual(items.map((c) => c.plant?.lowStockAt), [null, 3, 5, 0, null])
      assert.ok(items.every((c) => c.plant?.stock === null))
    })

    test('a batch creates, updates and patches lowStockAt', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      const res = await request({
        method: 'POST',
        url: '/v3/plant/batch',
        payload: {
          operations: [
            { op: 'create', plant: { name: 'Ivy', lowStockAt: 2 } },
            { op: 'patch', id: plant.id, patch: { lowStockAt: 7 } },
            { op: 'update', plant: { id: plant.id, name: 'Fern', lowStockAt: 8 } }
          ]
        }
      })
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(res.json().results.map((r: { plant: { lowStockAt: number } }) => r.plant.lowStockAt), [2, 7, 8])
    })

    test('stock in a body is 400 naming it as read-only; a lowStockAt that is not an integer ≥ 0 is refused naming it', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      const stock = { onHand: 4, reserved: 0, available: 4 }
      for (const req of [
        { method: 'POST' as const, url: '/v3/plant', payload: { name: 'Fern', stock } },
        { method: 'PUT' as const, url: '/v3/plant', payload: { id: plant.id, name: 'Fern', stock } },
        { method: 'PATCH' as const, url: `/v3/plant/${plant.id}`, payload: { stock } }
      ]) {
        const res = await request(req)
        assert.equal(res.statusCode, 400, `${req.method}: ${res.body}`)
        const stockError = res.json().errors.find((e: { path: string }) => e.path === '/stock')
        assert.match(stockError.message, /^is read-only: the stock changes by movements/)
      }
      for (const lowStockAt of [-1, 1.5, '3', true]) {
        const res = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { lowStockAt } })
        assert.equal(res.statusCode, 400, res.body)
        assert.ok(res.json().errors.some((e: { path: string }) => e.path === '/lowStockAt'), res.body)
      }
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().version, 1)
    })

    test('history shows lowStockAt changing; a revert puts it back', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern', lowStockAt: 2 })
      await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { lowStockAt: 9 } })
      const history = (await request({ method: 'GET', url: `/v3/plant/${plant.id}/history` })).json().items
      assert.deepEqual(history.map((e: { changes: unknown }) => e.changes), [{ lowStockAt: [2, 9] }, { name: [null, 'Fern'], status: [null, 'available'], lowStockAt: [null, 2] }])
      const reverted = await request({ method: 'POST', url: `/v3/plant/${plant.id}/revert`, payload: { version: 1 } })
      assert.equal(reverted.statusCode, 200, reverted.body)
      assert.equal(reverted.json().lowStockAt, 2)
    })

    test('the trash keeps lowStockAt: a restored plant has it back', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern', lowStockAt: 4 })
      assert.equal((await request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })).statusCode, 204)
      const restored = await request({ method: 'POST', url: `/v3/trash/${plant.id}/restore` })
      assert.equal(restored.statusCode, 200, restored.body)
      assert.deepEqual([restored.json().lowStockAt, restored.json().stock], [4, null])
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().lowStockAt, 4)
    })
  })
}
