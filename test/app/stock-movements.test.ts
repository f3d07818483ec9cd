import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createKey } from '../../src/keys/manage.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Stock: locations, movements (delta and count), the ledger, status following stock, the feed and
// history, idempotent sales, scopes.

const move = async (api: TestApp, id: number, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  await api.request({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload: body, headers })

for (const engine of ENGINES) {
  describe(`stock on ${engine.name}`, { skip: engine.skip }, () => {
    test('locations: main is always there; POST adds one (409 location-name-taken twice); DELETE refuses main, an unknown one and one holding stock', async (t) => {
      const api = await build(t, engine)
      const names = async (): Promise<string[]> => (await api.request({ method: 'GET', url: '/v3/locations' })).json().items.map((l: { name: string }) => l.name)
      assert.deepEqual(await names(), ['main'])
      const added = await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'greenhouse' } })
      assert.equal(added.statusCode, 201, added.body)
      assert.equal(added.json().name, 'greenhouse')
      const twice = await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'greenhouse' } })
      assert.equal(twice.statusCode, 409)
      assert.match(twice.json().type, /location-name-taken$/)
      assert.equal((await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'Green House' } })).statusCode, 400)
      assert.deepEqual(await names(), ['greenhouse', 'main'])
      assert.equal((await api.request({ method: 'DELETE', url: '/v3/locations/main' })).statusCode, 400)
      const unknown = await api.request({ method: 'DELETE', url: '/v3/locations/shed' })
      assert.equal(unknown.statusCode, 404)
      assert.match(unknown.json().type, /location-not-found$/)
      const plant = await api.add({ name: 'Fern' })
      assert.equal((await move(api, plant.id, { delta: 4, reason: 'received', location: 'greenhouse' })).statusCode, 201)
      const held = await api.request({ method: 'DELETE', url: '/v3/locations/greenhouse' })
      assert.equal(held.statusCode, 409)
      assert.match(held.json().type, /location-not-empty$/)
      assert.equal((await move(api, plant.id, { delta: -4, reason: 'damaged', location: 'greenhouse' })).statusCode, 201)
      assert.equal((await api.request({ method: 'DELETE', url: '/v3/locations/greenhouse' })).statusCode, 204)
      assert.deepEqual(await names(), ['main'])
    })

    test('a movement answers 201 with the movement, the location\'s and the plant\'s counts and the new ETag; the record carries the totals', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Monstera' })
      await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'shop' } })
      const received = await move(api, plant.id, { delta: 10, reason: 'received', reference: 'delivery 7' })
      assert.equal(received.statusCode, 201, received.body)
      const body = received.json()
      assert.deepEqual(body.level, { location: 'main', onHand: 10, reserved: 0, available: 10 })
      assert.deepEqual(body.stock, { onHand: 10, reserved: 0, available: 10 })
      assert.equal(body.version, 2)
      assert.equal(received.headers.etag, `"${plant.id}.2"`)
      assert.deepEqual({ ...body.movement, at: undefined }, { seq: body.movement.seq, at: undefined, actor: 'anonymous', location: 'main', delta: 10, reason: 'received', reference: 'delivery 7', onHandAfter: 10 })
      await move(api, plant.id, { delta: 5, reason: 'received', location: 'shop' })
      const sold = await move(api, plant.id, { delta: -2, reason: 'sale', location: 'shop' })
      assert.deepEqual(sold.json().level, { location: 'shop', onHand: 3, reserved: 0, available: 3 })
      assert.deepEqual(sold.json().stock, { onHand: 13, reserved: 0, available: 13 })
      const read = await api.request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      assert.deepEqual(read.json().stock, { onHand: 13, reserved: 0, available: 13 })
      assert.equal(read.headers.etag, sold.headers.etag)
      const levels = await api.request({ method: 'GET', url: `/v3/plant/${plant.id}/stock` })
      assert.deepEqual(levels.json().items, [{ location: 'main', onHand: 10, reserved: 0, available: 10 }, { location: 'shop', onHand: 3, reserved: 0, available: 3 }])
      assert.equal((await api.request({ method: 'GET', url: '/v3/plant/999/stock' })).statusCode, 404)
    })

    test('a movement that would take available below 0 is 409 insufficient-stock naming what is available; nothing is applied', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Fern' })
      await move(api, plant.id, { delta: 3, reason: 'received' })
      const short = await move(api, plant.id, { delta: -4, reason: 'sale' })
      assert.equal(short.statusCode, 409, short.body)
      assert.match(short.json().type, /insufficient-stock$/)
      assert.equal(short.json().available, 3)
      const read = (await api.request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json()
      assert.deepEqual([read.version, read.stock], [2, { onHand: 3, reserved: 0, available: 3 }])
      assert.equal((await api.request({ method: 'GET', url: `/v3/plant/${plant.id}/stock/movements` })).json().items.length, 1)
    })

    test('refusals: a delta of the wrong sign or 0 (400), an unknown location or plant (404), a stale If-Match (412), an unknown reason (400)', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Fern' })
      for (const body of [{ delta: 2, reason: 'sale' }, { delta: -2, reason: 'received' }, { delta: 0, reason: 'correction' }, { delta: 1, reason: 'stolen' }, { set: 3, reason: 'received' }]) {
        const res = await move(api, plant.id, body)
        assert.equal(res.statusCode, 400, `${JSON.stringify(body)}: ${res.body}`)
      }
      const nowhere = await move(api, plant.id, { delta: 1, reason: 'received', location: 'shed' })
      assert.equal(nowhere.statusCode, 404)
      assert.match(nowhere.json().type, /location-not-found$/)
      assert.equal((await move(api, 999, { delta: 1, reason: 'received' })).statusCode, 404)
      assert.equal((await move(api, plant.id, { delta: 1, reason: 'received' }, { 'if-match': `"${plant.id}.9"` })).statusCode, 412)
      const current = await move(api, plant.id, { delta: 1, reason: 'received' }, { 'if-match': `"${plant.id}.1"` })
      assert.equal(current.statusCode, 201, current.body)
    })

    test('a body that is neither a delta nor a count hears what is wrong with the one it came nearest, nothing else', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Fern' })
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ delta: 2147483647, reason: 'received' }, '/delta must be at most 1000000000'],
        [{ delta: 1 }, '/reason is required'],
        [{ set: -1, reason: 'count' }, '/set must be at least 0'],
        [{ delta: 1, reason: 'received', reference: '' }, '/reference must not be empty'],
        [{ delta: 1, reason: 'received', location: null }, '/location must be a string']
      ]
      for (const [body, detail] of cases) {
        const res = await move(api, plant.id, body)
        assert.equal(res.statusCode, 400, res.body)
        assert.equal(res.json().detail, detail, JSON.stringify(body))
      }
      const query = await api.request({ method: 'GET', url: '/v3/plant?lowStock=false' })
      assert.equal(query.statusCode, 400)
      assert.equal(query.json().detail, 'querystring /lowStock must be true or left out')
    })

    test('a count compares and sets: the expected onHand applies, another is 409 stock-changed naming the count', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Fern' })
      await move(api, plant.id, { delta: 7, reason: 'received' })
      const counted = await move(api, plant.id, { set: 5, expected: 7, reason: 'count' })
      assert.equal(counted.statusCode, 201, counted.body)
      assert.equal(counted.json().movement.delta, -2)
      assert.deepEqual(counted.json().stock, { onHand: 5, reserved: 0, available: 5 })
      const stale = await move(api, plant.id, { set: 4, expected: 7, reason: 'count' })
      assert.equal(stale.statusCode, 409)
      assert.match(stale.json().type, /stock-changed$/)
      assert.equal(stale.json().onHand, 5)
      assert.equal((await api.request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().stock.onHand, 5)
    })

    test('a count that finds the level as it is: kept in the ledger (delta 0), but no new version, change or history entry; a first count of 0 still starts tracking', async (t) => {
      const api = await build(t, engine)
      await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'shop' } })
      const plant = await api.add({ name: 'Fern' })
      const first = await move(api, plant.id, { set: 0, reason: 'count' })
      assert.equal(first.statusCode, 201, first.body)
      assert.deepEqual([first.json().version, first.json().stock], [2, { onHand: 0, reserved: 0, available: 0 }], 'a first count of 0 starts tracking: a change')
      await move(api, plant.id, { delta: 7, reason: 'received' })
      const { items: before } = await api.app.store.changes(0, 100)
      const was = (await api.request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json()
      const same = await move(api, plant.id, { set: 7, expected: 7, reason: 'count', reference: 'stocktake' })
      assert.equal(same.statusCode, 201, same.body)
      const body = same.json()
      assert.deepEqual([body.movement.delta, body.movement.onHandAfter, body.movement.reason, body.version, body.stock], [0, 7, 'count', 3, { onHand: 7, reserved: 0, available: 7 }])
      assert.equal(same.headers.etag, `"${plant.id}.3"`)
      const elsewhere = await move(api, plant.id, { set: 0, reason: 'count', location: 'shop' })
      assert.deepEqual([elsewhere.statusCode, elsewhere.json().version], [201, 3], 'a count of 0 where it holds nothing changes nothing either')
      const record = (await api.request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json()
      assert.deepEqual(record, was, 'the record as it was (its updatedAt too)')
      const { items } = await api.app.store.changes(before[before.length - 1].seq, 100)
      assert.deepEqual(items, [], 'no change in the feed')
      const history = (await api.request({ method: 'GET', url: `/v3/plant/${plant.id}/history` })).json().items
      assert.deepEqual(history.map((h: { version: number }) => h.version), [3, 2, 1])
      const ledger = (await api.request({ method: 'GET', url: `/v3/plant/${plant.id}/stock/movements` })).json().items
      assert.deepEqual(ledger.map((m: { delta: number, location: string, reference: string | null }) => [m.delta, m.location, m.reference]),
        [[0, 'shop', null], [0, 'main', 'stocktake'], [7, 'main', null], [0, 'main', null]])
      const next = await move(api, plant.id, { delta: -1, reason: 'sale' }, { 'if-match': `"${plant.id}.3"` })
      assert.deepEqual([next.statusCode, next.json().version], [201, 4], 'the ETag as it was still matches')
    })

    test('a refused sale keeps nothing under its Idempotency-Key: retried after a delivery, it sells', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Fern' })
      const key = { 'idempotency-key': 'till-1-sale-7' }
      const refused = await move(api, plant.id, { delta: -1, reason: 'sale' }, key)
      assert.equal(refused.statusCode, 409, refused.body)
      assert.equal((await move(api, plant.id, { delta: 2, reason: 'received' })).statusCode, 201)
      const sold = await move(api, plant.id, { delta: -1, reason: 'sale' }, key)
      assert.equal(sold.statusCode, 201, sold.body)
      assert.equal(sold.headers['idempotent-replayed'], undefined)
      const replayed = await move(api, plant.id, { delta: -1, reason: 'sale' }, key)
      assert.equal(replayed.headers['idempotent-replayed'], 'true')
      assert.equal(replayed.json().stock.onHand, 1)
    })

    test('with an Idempotency-Key a retried sale sells once and answers the first result; the key with another body is 422', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Fern' })
      await move(api, plant.id, { delta: 5, reason: 'received' })
      const key = { 'idempotency-key': 'till-3-sale-1' }
      const first = await move(api, plant.id, { delta: -1, reason: 'sale' }, key)
      const again = await move(api, plant.id, { delta: -1, reason: 'sale' }, key)
      assert.equal(again.statusCode, 201, again.body)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.deepEqual(again.json(), first.json())
      assert.equal((await api.request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().stock.available, 4)
      const other = await move(api, plant.id, { delta: -2, reason: 'sale' }, key)
      assert.equal(other.statusCode, 422)
      assert.equal((await api.request({ method: 'GET', url: `/v3/plant/${plant.id}/stock/movements` })).json().items.length, 2)
    })

    test('status follows stock: to 0 available is sold, above 0 from sold is available, pending is left alone, a status set by hand stands until the next crossing', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Fern' })
      const status = async (): Promise<string> => (await api.request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().status
      await move(api, plant.id, { delta: 2, reason: 'received' })
      assert.equal(await status(), 'available')
      await move(api, plant.id, { delta: -2, reason: 'sale' })
      assert.equal(await status(), 'sold')
      await move(api, plant.id, { delta: 1, reason: 'return' })
      assert.equal(await status(), 'available')
      await api.request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'sold' } })
      await move(api, plant.id, { delta: 1, reason: 'received' })
      assert.equal(await status(), 'sold', 'no crossing: the status set by hand stands')
      await api.request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'pending' } })
      await move(api, plant.id, { delta: -2, reason: 'sale' })
      assert.equal(await status(), 'pending')
      const inventory = (await api.request({ method: 'GET', url: '/v3/store/inventory' })).json()
      assert.deepEqual([inventory.available, inventory.pending, inventory.sold], [0, 1, 0])
    })

    test('each movement is one updated change in the feed with the new stock, and a history entry with its actor and reason; the ledger pages newest first', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Fern' })
      const { items: before } = await api.app.store.changes(0, 100)
      for (let i = 0; i < 3; i++) await move(api, plant.id, { delta: 2, reason: 'received', reference: `r${i}` })
      await move(api, plant.id, { delta: -1, reason: 'sale' })
      const { items } = await api.app.store.changes(before[before.length - 1].seq, 100)
      assert.deepEqual(items.map((c) => [c.kind, c.version, c.plant?.stock?.onHand]), [['updated', 2, 2], ['updated', 3, 4], ['updated', 4, 6], ['updated', 5, 5]])
      const history = (await api.request({ method: 'GET', url: `/v3/plant/${plant.id}/history?limit=2` })).json().items
      assert.deepEqual(history[0], {
        version: 5, at: history[0].at, actor: 'anonymous', kind: 'updated', reason: 'sale', location: 'main', quantity: 1, changes: { stock: [{ onHand: 6, reserved: 0, available: 6 }, { onHand: 5, reserved: 0, available: 5 }] }
      })
      const page1 = (await api.request({ method: 'GET', url: `/v3/plant/${plant.id}/stock/movements?limit=3` })).json()
      assert.deepEqual(page1.items.map((m: { delta: number, onHandAfter: number }) => [m.delta, m.onHandAfter]), [[-1, 5], [2, 6], [2, 4]])
      const page2 = (await api.request({ method: 'GET', url: `/v3/plant/${plant.id}/stock/movements?limit=3&cursor=${String(page1.nextCursor)}` })).json()
      assert.deepEqual(page2.items.map((m: { reference: string }) => m.reference), ['r0'])
      assert.equal(page2.nextCursor, null)
      assert.equal((await api.request({ method: 'GET', url: '/v3/plant/999/stock/movements' })).statusCode, 404)
    })

    test('DELETE /v3/plant/{id}/stock is 409 stock-held while it holds stock, then stops tracking: stock null, a new version', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Fern' })
      await move(api, plant.id, { delta: 2, reason: 'received' })
      const held = await api.request({ method: 'DELETE', url: `/v3/plant/${plant.id}/stock` })
      assert.equal(held.statusCode, 409)
      assert.match(held.json().type, /stock-held$/)
      await move(api, plant.id, { set: 0, reason: 'count' })
      const stopped = await api.request({ method: 'DELETE', url: `/v3/plant/${plant.id}/stock` })
      assert.equal(stopped.statusCode, 200, stopped.body)
      assert.equal(stopped.json().stock, null)
      assert.equal(stopped.headers.etag, `"${plant.id}.4"`)
      assert.deepEqual((await api.request({ method: 'GET', url: `/v3/plant/${plant.id}/stock` })).json().items, [])
    })

    test('scopes: a sell key records sales and returns only; write every reason; admin the locations; the actor is the key\'s name', async (t) => {
      const api = await build(t, engine, { apiKeys: ['env-admin-key-0123456789'] })
      const keyOf = async (name: string, scope: 'sell' | 'write' | 'admin') => ({ authorization: `Bearer ${(await createKey(api.app.store.keys, name, scope, null, Date.now())).secret}` })
      const till = await keyOf('till-1', 'sell')
      const writer = await keyOf('office', 'write')
      const admin = await keyOf('boss', 'admin')
      const created = await api.request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern' }, headers: writer })
      const id = created.json().id
      const received = await move(api, id, { delta: 3, reason: 'received' }, till)
      assert.equal(received.statusCode, 403)
      assert.equal(received.json().scope, 'write')
      assert.equal((await move(api, id, { delta: 3, reason: 'received' }, writer)).statusCode, 201)
      const sale = await move(api, id, { delta: -1, reason: 'sale' }, till)
      assert.equal(sale.statusCode, 201, sale.body)
      assert.equal(sale.json().movement.actor, 'till-1')
      assert.equal((await move(api, id, { delta: 1, reason: 'return' }, till)).statusCode, 201)
      assert.equal((await move(api, id, { set: 1, reason: 'count' }, till)).statusCode, 403)
      assert.equal((await move(api, id, { delta: -1, reason: 'sale' })).statusCode, 401)
      assert.equal((await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'shop' }, headers: writer })).statusCode, 403)
      assert.equal((await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'shop' }, headers: admin })).statusCode, 201)
      assert.equal((await api.request({ method: 'DELETE', url: '/v3/locations/shop', headers: writer })).statusCode, 403)
      const history = (await api.request({ method: 'GET', url: `/v3/plant/${id}/history?limit=1`, headers: till })).json().items
      assert.deepEqual([history[0].actor, history[0].reason], ['till-1', 'return'])
    })
  })
}
