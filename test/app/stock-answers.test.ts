import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Stock's answers in a store developer's words (issue 49's fresh-eyes review): a movement that is
// both a delta and a count, a reservation of a plant that does not track stock, a sale refused at
// main while another place has units (and a reservation's line), a sale of a plant that tracks no stock,
// and GET on the reservations' collection.

const move = async (api: TestApp, id: number, body: Record<string, unknown>) =>
  await api.request({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload: body })

for (const engine of ENGINES) {
  describe(`stock's answers on ${engine.name}`, { skip: engine.skip }, () => {
    test('a movement with both delta and set is 400 saying they are exclusive (one or the other), naming both, and moves nothing', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Fern' })
      for (const body of [{ delta: 3, set: 4, reason: 'received' }, { delta: 3, set: 4, reason: 'count' }]) {
        const res = await move(api, plant.id, body)
        assert.equal(res.statusCode, 400, res.body)
        const problem = res.json()
        assert.match(problem.type, /invalid-input$/)
        assert.equal(problem.detail, 'a movement is a delta or a count, not both: send delta (with received, sale, return, damaged or correction) or set (with count), one or the other')
        assert.deepEqual(problem.errors.map((e: { path: string }) => e.path), ['/delta', '/set'])
        assert.equal(problem.status, 400)
      }
      assert.equal((await api.request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().stock, null)
    })

    test('a movement\'s path id is checked before its body: a non-canonical or too long id is 400 invalid-id, even with delta and set both sent', async (t) => {
      const api = await build(t, engine)
      const plant = await api.add({ name: 'Fern' })
      const cases = [[`0${plant.id}`, '/id must be a positive integer written in decimal digits'], ['1e3', '/id must be a positive integer written in decimal digits'],
        ['99999999999999999999999', `/id must be at most ${Number.MAX_SAFE_INTEGER}`]]
      for (const [id, detail] of cases) {
        for (const body of [{ delta: -1, reason: 'sale' }, { delta: 3, set: 4, reason: 'received' }]) {
          const res = await api.request({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload: body })
          assert.equal(res.statusCode, 400, res.body)
          assert.match(res.json().type, /invalid-id$/)
          assert.equal(res.json().detail, detail, id)
        }
      }
      assert.equal((await api.request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().stock, null)
    })

    test('reserving a plant that does not track stock is 409 insufficient-stock saying it does not track stock (not "0 available")', async (t) => {
      const api = await build(t, engine)
      const untracked = await api.add({ name: 'Ivy' })
      const tracked = await api.add({ name: 'Fern' })
      await move(api, tracked.id, { delta: 1, reason: 'received' })
      const res = await api.request({ method: 'POST', url: '/v3/reservations', payload: { lines: [{ plant: tracked.id, quantity: 2 }, { plant: untracked.id, quantity: 1 }], ttlSeconds: 60 } })
      assert.equal(res.statusCode, 409, res.body)
      const problem = res.json()
      assert.equal(problem.detail, `2 line(s) cannot be held (plant ${untracked.id} does not track stock: receive or count its stock first): nothing was held`)
      assert.deepEqual(problem.errors, [
        { path: '/lines/0', message: `plant ${tracked.id} has 1 available at main (the lines of one plant and location count together)` },
        { path: '/lines/1', message: `plant ${untracked.id} does not track stock: receive or count its stock first (POST /v3/plant/${untracked.id}/stock/movements)` }
      ])
      assert.deepEqual(problem.lines.map((l: { available: number }) => l.available), [1, 0])
      assert.deepEqual(problem.lines.map((l: { elsewhere?: unknown }) => l.elsewhere), [[], undefined], 'a tracked line names its other places (none), an untracked one none at all')
    })

    test('a sale refused at main names the places that have units available ("… 5 at greenhouse"); with none elsewhere it says only main\'s', async (t) => {
      const api = await build(t, engine)
      for (const name of ['greenhouse', 'shop']) await api.request({ method: 'POST', url: '/v3/locations', payload: { name } })
      const plant = await api.add({ name: 'Palm' })
      await move(api, plant.id, { delta: 5, reason: 'received', location: 'greenhouse' })
      await move(api, plant.id, { delta: 2, reason: 'received', location: 'shop' })
      const refused = await move(api, plant.id, { delta: -1, reason: 'sale' })
      assert.equal(refused.statusCode, 409, refused.body)
      assert.equal(refused.json().detail, 'only 0 available at main (available elsewhere: 5 at greenhouse, 2 at shop; name the place as location): nothing was applied')
      assert.equal(refused.json().available, 0)
      assert.equal(refused.json().location, 'main')
      assert.deepEqual(refused.json().elsewhere, [{ location: 'greenhouse', available: 5 }, { location: 'shop', available: 2 }], 'the places as fields, not only words')
      await move(api, plant.id, { delta: -2, reason: 'sale', location: 'shop' })
      const atShop = await move(api, plant.id, { delta: -1, reason: 'sale', location: 'shop' })
      assert.equal(atShop.json().detail, 'only 0 available at shop (available elsewhere: 5 at greenhouse; name the place as location): nothing was applied')
      await move(api, plant.id, { delta: -5, reason: 'sale', location: 'greenhouse' })
      const nowhere = (await move(api, plant.id, { delta: -1, reason: 'sale' })).json()
      assert.equal(nowhere.detail, 'only 0 available at main: nothing was applied')
      assert.deepEqual(nowhere.elsewhere, [], 'no other place has units')
    })

    test('a sale of a plant that does not track stock says so (not "0 available"); a reservation short at its place names the places with units', async (t) => {
      const api = await build(t, engine)
      await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'greenhouse' } })
      const cactus = await api.add({ name: 'Cactus' })
      const sale = await move(api, cactus.id, { delta: -1, reason: 'sale' })
      assert.equal(sale.statusCode, 409, sale.body)
      assert.equal(sale.json().detail, 'the plant does not track stock: receive or count its stock first (reason received, or set with count): nothing was applied')
      assert.equal(sale.json().elsewhere, undefined, 'a plant that tracks no stock has no places to name')
      const fern = await api.add({ name: 'Fern' })
      await move(api, fern.id, { delta: 7, reason: 'received', location: 'greenhouse' })
      const res = await api.request({ method: 'POST', url: '/v3/reservations', payload: { lines: [{ plant: fern.id, quantity: 2 }], ttlSeconds: 60 } })
      assert.equal(res.statusCode, 409, res.body)
      assert.deepEqual(res.json().errors, [{ path: '/lines/0', message: `plant ${fern.id} has 0 available at main (the lines of one plant and location count together) (available elsewhere: 7 at greenhouse; name the place as location)` }])
      assert.deepEqual(res.json().lines, [{ path: '/lines/0', plant: fern.id, location: 'main', quantity: 2, available: 0, elsewhere: [{ location: 'greenhouse', available: 7 }] }])
    })

    test('a stock entry of the history carries the units it moved (quantity) and its place as fields: movements, a count, a hold; other entries none', async (t) => {
      const api = await build(t, engine)
      await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'greenhouse' } })
      const plant = await api.add({ name: 'Palm' })
      await move(api, plant.id, { delta: 5, reason: 'received', location: 'greenhouse' })
      await move(api, plant.id, { delta: -2, reason: 'sale', location: 'greenhouse' })
      await move(api, plant.id, { set: 10, reason: 'count', location: 'greenhouse' })
      await api.request({ method: 'POST', url: '/v3/reservations', payload: { lines: [{ plant: plant.id, quantity: 4, location: 'greenhouse' }], ttlSeconds: 60 } })
      await api.request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { name: 'Kentia palm' } })
      const { items } = (await api.request({ method: 'GET', url: `/v3/plant/${plant.id}/history` })).json()
      assert.deepEqual(items.map((e: Record<string, unknown>) => [e.reason, e.quantity, e.location]), [
        [undefined, undefined, undefined],
        ['reserve', 4, 'greenhouse'],
        ['count', 7, 'greenhouse'],
        ['sale', 2, 'greenhouse'],
        ['received', 5, 'greenhouse'],
        [undefined, undefined, undefined]
      ])
    })

    test('GET /v3/reservations is 405 with Allow: POST, saying reservations are not listed and each is read by its id', async (t) => {
      const api = await build(t, engine)
      const res = await api.request({ method: 'GET', url: '/v3/reservations' })
      assert.equal(res.statusCode, 405)
      assert.equal(res.headers.allow, 'POST')
      assert.match(res.json().type, /method-not-allowed$/)
      assert.equal(res.json().detail, 'reservations are not listed: a checkout reads its own by id (GET /v3/reservations/{id}, the Location of the POST that made it); this path takes POST')
    })
  })
}
