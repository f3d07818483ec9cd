import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createKey } from '../../src/keys/manage.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Reservations: all or nothing (lines of one plant and location counted together), commit into
// sales, release, 410 once gone, expiry by the expirer, scopes, idempotency, status following
// stock, and the record, feed, history and ledger of each step.

const move = async (api: TestApp, id: number, body: Record<string, unknown>, headers: Record<string, string> = {}) =>
  await api.request({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload: body, headers })
const reserve = async (api: TestApp, lines: object[], headers: Record<string, string> = {}, ttlSeconds = 900) =>
  await api.request({ method: 'POST', url: '/v3/reservations', payload: { lines, ttlSeconds }, headers })
const plantOf = async (api: TestApp, id: number) => (await api.request({ method: 'GET', url: `/v3/plant/${id}` })).json()
/** A plant holding `units` at main. */
const stocked = async (api: TestApp, name: string, units: number): Promise<number> => {
  const { id } = await api.add({ name })
  assert.equal((await move(api, id, { delta: units, reason: 'received' })).statusCode, 201)
  return id
}

for (const engine of ENGINES) {
  describe(`reservations on ${engine.name}`, { skip: engine.skip }, () => {
    test('a reservation holds: 201 with Location; reserved rises and available drops on the record and the levels; one updated change and a history entry a plant', async (t) => {
      const api = await build(t, engine)
      await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'shop' } })
      const fern = await stocked(api, 'Fern', 10)
      await move(api, fern, { delta: 4, reason: 'received', location: 'shop' })
      const palm = await stocked(api, 'Palm', 3)
      const { items: before } = await api.app.store.changes(0, 100)
      const held = await reserve(api, [{ plant: fern, quantity: 2 }, { plant: palm, quantity: 1 }, { plant: fern, quantity: 3, location: 'shop' }])
      assert.equal(held.statusCode, 201, held.body)
      const r = held.json()
      assert.equal(held.headers.location, `/v3/reservations/${r.id}`)
      assert.deepEqual([r.state, r.lines, r.endedAt], ['held', [{ plant: fern, quantity: 2, location: 'main' }, { plant: palm, quantity: 1, location: 'main' }, { plant: fern, quantity: 3, location: 'shop' }], null])
      assert.ok(Date.parse(r.expiresAt) - Date.parse(r.createdAt) === 900_000)
      const record = await plantOf(api, fern)
      assert.deepEqual([record.stock, record.version], [{ onHand: 14, reserved: 5, available: 9 }, 4])
      const levels = (await api.request({ method: 'GET', url: `/v3/plant/${fern}/stock` })).json().items
      assert.deepEqual(levels, [{ location: 'main', onHand: 10, reserved: 2, available: 8 }, { location: 'shop', onHand: 4, reserved: 3, available: 1 }])
      const { items } = await api.app.store.changes(before[before.length - 1].seq, 100)
      assert.deepEqual(items.map((c) => [c.kind, c.id, c.plant?.stock?.reserved]), [['updated', fern, 5], ['updated', palm, 1]])
      const history = (await api.request({ method: 'GET', url: `/v3/plant/${fern}/history?limit=1` })).json().items
      assert.deepEqual([history[0].reason, history[0].changes.stock[1]], ['reserve', { onHand: 14, reserved: 5, available: 9 }])
      const read = await api.request({ method: 'GET', url: `/v3/reservations/${r.id}` })
      assert.equal(read.statusCode, 200)
      const { plants, ...reservation } = r
      assert.deepEqual(read.json(), reservation, 'a read is the reservation; the plants\' counts are the hold\'s answer')
      assert.deepEqual(plants, [{ id: fern, version: 4, stock: { onHand: 14, reserved: 5, available: 9 } }, { id: palm, version: 3, stock: { onHand: 3, reserved: 1, available: 2 } }])
      const inventory = (await api.request({ method: 'GET', url: '/v3/store/inventory' })).json()
      assert.deepEqual(inventory.units, { onHand: 17, reserved: 6, available: 11 })
      assert.equal((await api.request({ method: 'GET', url: '/v3/reservations/no-such-one' })).statusCode, 404)
    })

    test('a hold\'s 201 gives each plant\'s new version and totals: the version is the next If-Match, and a replay answers the same counts', async (t) => {
      const api = await build(t, engine)
      const fern = await stocked(api, 'Fern', 5)
      const key = { 'idempotency-key': 'checkout-41' }
      const held = await reserve(api, [{ plant: fern, quantity: 2 }], key)
      assert.equal(held.statusCode, 201, held.body)
      const record = await plantOf(api, fern)
      assert.deepEqual(held.json().plants, [{ id: fern, version: record.version, stock: record.stock }])
      assert.deepEqual(record.stock, { onHand: 5, reserved: 2, available: 3 })
      const replay = await reserve(api, [{ plant: fern, quantity: 2 }], key)
      assert.deepEqual([replay.headers['idempotent-replayed'], replay.json().plants], ['true', held.json().plants])
      const sale = await move(api, fern, { delta: -1, reason: 'sale' }, { 'if-match': `"${fern}.${String(held.json().plants[0].version)}"` })
      assert.equal(sale.statusCode, 201, sale.body)
      const direct = await api.app.store.stock.reserve({ id: 'till-hold', lines: [{ plant: fern, quantity: 1 }], ttlSeconds: 60 })
      assert.deepEqual(direct.plants, [{ id: fern, version: record.version + 2, stock: { onHand: 4, reserved: 3, available: 1 } }], 'the store answers the counts of its own write')
    })

    test('history names where a movement moved stock (location) and which reservation a step was (reservation), with its place when the plant\'s lines name one; other entries name neither', async (t) => {
      const api = await build(t, engine)
      await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'shop' } })
      const fern = await stocked(api, 'Fern', 5)
      assert.equal((await move(api, fern, { delta: 2, reason: 'received', location: 'shop' })).statusCode, 201)
      const held = (await reserve(api, [{ plant: fern, quantity: 1 }, { plant: fern, quantity: 1, location: 'shop' }])).json()
      assert.equal((await api.request({ method: 'POST', url: `/v3/reservations/${String(held.id)}/commit` })).statusCode, 200)
      const other = (await reserve(api, [{ plant: fern, quantity: 1 }])).json()
      assert.equal((await api.request({ method: 'DELETE', url: `/v3/reservations/${String(other.id)}` })).statusCode, 204)
      assert.equal((await api.request({ method: 'PATCH', url: `/v3/plant/${fern}`, payload: { lowStockAt: 1 }, headers: { 'content-type': 'application/merge-patch+json' } })).statusCode, 200)
      const history = (await api.request({ method: 'GET', url: `/v3/plant/${fern}/history` })).json().items
      assert.deepEqual(history.map((h: { version: number, reason?: string, location?: string, reservation?: string }) => [h.version, h.reason, h.location, h.reservation]), [
        [8, undefined, undefined, undefined],
        [7, 'release', 'main', other.id],
        [6, 'reserve', 'main', other.id],
        [5, 'sale', undefined, held.id],
        [4, 'reserve', undefined, held.id],
        [3, 'received', 'shop', undefined],
        [2, 'received', 'main', undefined],
        [1, undefined, undefined, undefined]
      ])
      assert.deepEqual(Object.keys(history[5].changes), ['stock'], 'the changes name the fields alone')
      // Held at two places, the step's entries name each, with its units; a one-place step names none this way.
      assert.deepEqual(history.map((h: { places?: unknown }) => h.places), [
        undefined, undefined, undefined,
        [{ location: 'main', quantity: 1 }, { location: 'shop', quantity: 1 }],
        [{ location: 'main', quantity: 1 }, { location: 'shop', quantity: 1 }],
        undefined, undefined, undefined
      ])
    })

    test('a count or a movement that would take units a reservation holds is refused, saying what is held and how it is let go', async (t) => {
      const api = await build(t, engine)
      const palm = await stocked(api, 'Palm', 2)
      assert.equal((await reserve(api, [{ plant: palm, quantity: 2 }])).statusCode, 201)
      for (const body of [{ set: 1, reason: 'count' }, { delta: -2, reason: 'damaged' }]) {
        const refused = await move(api, palm, body)
        assert.equal(refused.statusCode, 409, refused.body)
        assert.equal(refused.json().detail, 'only 0 available at main (2 more held there by reservations until each is committed, released or expires): nothing was applied')
      }
      const free = await stocked(api, 'Fern', 1)
      assert.equal((await move(api, free, { delta: -2, reason: 'sale' })).json().detail, 'only 1 available at main: nothing was applied', 'nothing held: nothing said of reservations')
      assert.deepEqual((await plantOf(api, palm)).stock, { onHand: 2, reserved: 2, available: 0 })
    })

    test('all or nothing: every short line is named by index with what is available; nothing is held', async (t) => {
      const api = await build(t, engine)
      await api.request({ method: 'POST', url: '/v3/locations', payload: { name: 'shop' } })
      const fern = await stocked(api, 'Fern', 5)
      const palm = await stocked(api, 'Palm', 1)
      const short = await reserve(api, [{ plant: fern, quantity: 2 }, { plant: palm, quantity: 3 }, { plant: fern, quantity: 1, location: 'shop' }])
      assert.equal(short.statusCode, 409, short.body)
      const body = short.json()
      assert.match(body.type, /insufficient-stock$/)
      assert.deepEqual(body.lines, [
        { path: '/lines/1', plant: palm, location: 'main', quantity: 3, available: 1, elsewhere: [] },
        { path: '/lines/2', plant: fern, location: 'shop', quantity: 1, available: 0, elsewhere: [{ location: 'main', available: 5 }] }
      ])
      assert.deepEqual(body.errors.map((e: { path: string }) => e.path), ['/lines/1', '/lines/2'])
      for (const id of [fern, palm]) assert.deepEqual((await plantOf(api, id)).version, 2)
      assert.equal((await plantOf(api, fern)).stock.reserved, 0)
    })

    test('lines of one plant and location count together: two lines asking 15 of 20 are both named short, nothing held', async (t) => {
      const api = await build(t, engine)
      const fern = await stocked(api, 'Fern', 20)
      const short = await reserve(api, [{ plant: fern, quantity: 15 }, { plant: fern, quantity: 15 }])
      assert.equal(short.statusCode, 409, short.body)
      assert.deepEqual(short.json().lines.map((l: { path: string, available: number }) => [l.path, l.available]), [['/lines/0', 20], ['/lines/1', 20]])
      assert.deepEqual((await plantOf(api, fern)).stock, { onHand: 20, reserved: 0, available: 20 })
      assert.equal((await reserve(api, [{ plant: fern, quantity: 15 }, { plant: fern, quantity: 5 }])).statusCode, 201)
    })

    test('refusals: an unknown plant or location names the line (404); lines, quantity and ttl out of bounds are 400', async (t) => {
      const api = await build(t, engine)
      const fern = await stocked(api, 'Fern', 5)
      const unknown = await reserve(api, [{ plant: fern, quantity: 1 }, { plant: 9999, quantity: 1 }])
      assert.equal(unknown.statusCode, 404, unknown.body)
      assert.match(unknown.json().type, /not-found$/)
      assert.deepEqual(unknown.json().errors.map((e: { path: string }) => e.path), ['/lines/1/plant'])
      const nowhere = await reserve(api, [{ plant: fern, quantity: 1, location: 'shed' }])
      assert.equal(nowhere.statusCode, 404)
      assert.match(nowhere.json().type, /location-not-found$/)
      assert.deepEqual(nowhere.json().errors.map((e: { path: string }) => e.path), ['/lines/0/location'])
      assert.equal((await reserve(api, [])).statusCode, 400)
      assert.equal((await reserve(api, [{ plant: fern, quantity: 0 }])).statusCode, 400)
      assert.equal((await reserve(api, [{ plant: fern, quantity: 1 }], {}, 29)).statusCode, 400)
      assert.equal((await reserve(api, [{ plant: fern, quantity: 1 }], {}, 86_401)).statusCode, 400)
      assert.equal((await reserve(api, Array.from({ length: 101 }, () => ({ plant: fern, quantity: 1 })))).statusCode, 400)
      assert.equal((await plantOf(api, fern)).version, 2)
    })

    test('reserved units cannot be sold by a till: a sale may not take available below 0; status follows stock (all held: sold; released: available)', async (t) => {
      const api = await build(t, engine)
      const fern = await stocked(api, 'Fern', 3)
      const r = (await reserve(api, [{ plant: fern, quantity: 2 }])).json()
      const sale = await move(api, fern, { delta: -2, reason: 'sale' })
      assert.equal(sale.statusCode, 409)
      assert.equal(sale.json().available, 1)
      const count = await move(api, fern, { set: 1, reason: 'count' })
      assert.equal(count.statusCode, 409, 'a count below what is reserved is refused too')
      assert.equal((await move(api, fern, { delta: -1, reason: 'sale' })).statusCode, 201)
      assert.equal((await plantOf(api, fern)).status, 'sold')
      const held = await api.request({ method: 'DELETE', url: `/v3/plant/${fern}/stock` })
      assert.equal(held.statusCode, 409)
      assert.equal((await api.request({ method: 'DELETE', url: `/v3/reservations/${String(r.id)}` })).statusCode, 204)
      const after = await plantOf(api, fern)
      assert.deepEqual([after.status, after.stock], ['available', { onHand: 2, reserved: 0, available: 2 }])
      const all = (await reserve(api, [{ plant: fern, quantity: 2 }])).json()
      assert.equal((await plantOf(api, fern)).status, 'sold')
      assert.equal((await api.request({ method: 'POST', url: `/v3/reservations/${String(all.id)}/commit` })).statusCode, 200)
      assert.deepEqual([(await plantOf(api, fern)).status, (await plantOf(api, fern)).stock], ['sold', { onHand: 0, reserved: 0, available: 0 }])
    })

    test('commit turns each line into a sale (the reservation as reference): onHand and reserved drop; one version a plant; again 410, unknown 404', async (t) => {
      const api = await build(t, engine)
      const fern = await stocked(api, 'Fern', 10)
      const palm = await stocked(api, 'Palm', 4)
      const r = (await reserve(api, [{ plant: fern, quantity: 2 }, { plant: palm, quantity: 1 }, { plant: fern, quantity: 1 }])).json()
      const { items: before } = await api.app.store.changes(0, 100)
      const committed = await api.request({ method: 'POST', url: `/v3/reservations/${String(r.id)}/commit` })
      assert.equal(committed.statusCode, 200, committed.body)
      const body = committed.json()
      assert.equal(body.reservation.state, 'committed')
      assert.deepEqual(body.sales.map((s: any) => [s.line, s.plant, s.movement.delta, s.movement.reason, s.movement.reference]),
        [[0, fern, -2, 'sale', r.id], [1, palm, -1, 'sale', r.id], [2, fern, -1, 'sale', r.id]])
      assert.deepEqual(body.sales[2].level, { location: 'main', onHand: 7, reserved: 0, available: 7 })
      assert.deepEqual(body.plants, [{ id: fern, version: 4, stock: { onHand: 7, reserved: 0, available: 7 } }, { id: palm, version: 4, stock: { onHand: 3, reserved: 0, available: 3 } }])
      const { items } = await api.app.store.changes(before[before.length - 1].seq, 100)
      assert.deepEqual(items.map((c) => [c.id, c.version]), [[fern, 4], [palm, 4]])
      const ledger = (await api.request({ method: 'GET', url: `/v3/plant/${fern}/stock/movements` })).json().items
      assert.deepEqual(ledger.slice(0, 2).map((m: any) => [m.delta, m.reference, m.onHandAfter]), [[-1, r.id, 7], [-2, r.id, 8]])
      const history = (await api.request({ method: 'GET', url: `/v3/plant/${palm}/history?limit=1` })).json().items
      assert.equal(history[0].reason, 'sale')
      assert.equal((await api.request({ method: 'GET', url: `/v3/reservations/${String(r.id)}` })).json().state, 'committed')
      const again = await api.request({ method: 'POST', url: `/v3/reservations/${String(r.id)}/commit` })
      assert.equal(again.statusCode, 410)
      assert.match(again.json().type, /reservation-gone$/)
      assert.equal(again.json().state, 'committed')
      assert.equal((await api.request({ method: 'DELETE', url: `/v3/reservations/${String(r.id)}` })).statusCode, 410)
      const unknown = await api.request({ method: 'POST', url: '/v3/reservations/nope/commit' })
      assert.equal(unknown.statusCode, 404)
      assert.match(unknown.json().type, /reservation-not-found$/)
      assert.equal((await api.request({ method: 'DELETE', url: '/v3/reservations/nope' })).statusCode, 404)
      const inventory = (await api.request({ method: 'GET', url: '/v3/store/inventory' })).json()
      assert.deepEqual(inventory.units, { onHand: 10, reserved: 0, available: 10 })
    })

    test('release lets the units go (204, a new version); released, it is 410 to commit and to release', async (t) => {
      const api = await build(t, engine)
      const fern = await stocked(api, 'Fern', 5)
      const r = (await reserve(api, [{ plant: fern, quantity: 5 }])).json()
      const released = await api.request({ method: 'DELETE', url: `/v3/reservations/${String(r.id)}` })
      assert.equal(released.statusCode, 204, released.body)
      const plant = await plantOf(api, fern)
      assert.deepEqual([plant.stock, plant.version], [{ onHand: 5, reserved: 0, available: 5 }, 4])
      const history = (await api.request({ method: 'GET', url: `/v3/plant/${fern}/history?limit=1` })).json().items
      assert.equal(history[0].reason, 'release')
      assert.equal((await api.request({ method: 'GET', url: `/v3/reservations/${String(r.id)}` })).json().state, 'released')
      for (const [method, url] of [['POST', `/v3/reservations/${String(r.id)}/commit`], ['DELETE', `/v3/reservations/${String(r.id)}`]] as const) {
        const gone = await api.request({ method, url })
        assert.equal(gone.statusCode, 410)
        assert.equal(gone.json().state, 'released')
      }
      assert.equal((await api.request({ method: 'GET', url: `/v3/plant/${fern}/stock/movements` })).json().items.length, 1)
    })

    test('Idempotency-Key: a retried reservation holds once and answers the first; a retried commit answers the first result; another body is 422', async (t) => {
      const api = await build(t, engine)
      const fern = await stocked(api, 'Fern', 5)
      const key = { 'idempotency-key': 'checkout-17' }
      const first = await reserve(api, [{ plant: fern, quantity: 2 }], key)
      const again = await reserve(api, [{ plant: fern, quantity: 2 }], key)
      assert.equal(again.statusCode, 201)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.deepEqual(again.json(), first.json())
      assert.equal((await plantOf(api, fern)).stock.reserved, 2)
      assert.equal((await reserve(api, [{ plant: fern, quantity: 3 }], key)).statusCode, 422)
      const id = String(first.json().id)
      const commitKey = { 'idempotency-key': 'commit-17' }
      const committed = await api.request({ method: 'POST', url: `/v3/reservations/${id}/commit`, headers: commitKey })
      const retried = await api.request({ method: 'POST', url: `/v3/reservations/${id}/commit`, headers: commitKey })
      assert.equal(retried.statusCode, 200)
      assert.equal(retried.headers['idempotent-replayed'], 'true')
      assert.deepEqual(retried.json(), committed.json())
      assert.equal((await plantOf(api, fern)).stock.onHand, 3)
    })

    test('an Idempotency-Key used on another request (a movement, then a reservation; a reservation, then a plant) is 422 saying another method or path, not only another body', async (t) => {
      const api = await build(t, engine)
      const fern = await stocked(api, 'Fern', 5)
      const key = { 'idempotency-key': 'till-3-sale-9' }
      assert.equal((await move(api, fern, { delta: -1, reason: 'sale' }, key)).statusCode, 201)
      const elsewhere = await reserve(api, [{ plant: fern, quantity: 1 }], key)
      assert.equal(elsewhere.statusCode, 422, elsewhere.body)
      assert.equal(elsewhere.json().title, 'Idempotency key reused for another request')
      assert.match(elsewhere.json().detail, /^This Idempotency-Key was used for another request \(another method or path, or the same one with a different body\) at /)
      const checkout = { 'idempotency-key': 'checkout-9' }
      assert.equal((await reserve(api, [{ plant: fern, quantity: 1 }], checkout)).statusCode, 201)
      const plant = await api.request({ method: 'POST', url: '/v3/plant', payload: { name: 'Palm' }, headers: checkout })
      assert.equal(plant.statusCode, 422, plant.body)
      assert.match(plant.json().detail, /another method or path/)
      assert.equal((await plantOf(api, fern)).stock.reserved, 1)
    })

    test('scopes: sell (and above) may reserve, read, commit and release; read may not; the actor is the key\'s name', async (t) => {
      const api = await build(t, engine, { apiKeys: ['env-admin-key-0123456789'] })
      const keyOf = async (name: string, scope: 'read' | 'sell' | 'write') => ({ authorization: `Bearer ${(await createKey(api.app.store.keys, name, scope, null, Date.now())).secret}` })
      const till = await keyOf('till-1', 'sell')
      const reader = await keyOf('reader', 'read')
      const writer = await keyOf('office', 'write')
      const { id } = (await api.request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern' }, headers: writer })).json()
      await move(api, id, { delta: 5, reason: 'received' }, writer)
      assert.equal((await reserve(api, [{ plant: id, quantity: 1 }])).statusCode, 401)
      assert.equal((await reserve(api, [{ plant: id, quantity: 1 }], reader)).statusCode, 403)
      const held = await reserve(api, [{ plant: id, quantity: 1 }], till)
      assert.equal(held.statusCode, 201, held.body)
      assert.equal(held.json().actor, 'till-1')
      const rid = String(held.json().id)
      assert.equal((await api.request({ method: 'GET', url: `/v3/reservations/${rid}`, headers: reader })).statusCode, 403)
      assert.equal((await api.request({ method: 'GET', url: `/v3/reservations/${rid}`, headers: till })).statusCode, 200)
      assert.equal((await api.request({ method: 'POST', url: `/v3/reservations/${rid}/commit`, headers: reader })).statusCode, 403)
      const committed = await api.request({ method: 'POST', url: `/v3/reservations/${rid}/commit`, headers: till })
      assert.equal(committed.statusCode, 200, committed.body)
      assert.equal(committed.json().sales[0].movement.actor, 'till-1')
      const other = (await reserve(api, [{ plant: id, quantity: 1 }], writer)).json()
      assert.equal((await api.request({ method: 'DELETE', url: `/v3/reservations/${String(other.id)}`, headers: writer })).statusCode, 204)
    })

    test('expiry: past expiresAt it reads as expired, commit and release are 410, and the expirer releases its units (one updated change, reason expire)', async (t) => {
      let offset = 0
      const api = await build(t, engine, { reservationExpiryPollMs: 10, reservationLeaseMs: 1000 }, { now: () => Date.now() + offset })
      const fern = await stocked(api, 'Fern', 4)
      const r = (await reserve(api, [{ plant: fern, quantity: 4 }], {}, 30)).json()
      assert.equal((await plantOf(api, fern)).status, 'sold')
      offset = 31_000
      // The expirer runs on its own (every 10 ms here): wait for its release, not for a time.
      while ((await plantOf(api, fern)).stock.reserved !== 0) await new Promise((resolve) => setTimeout(resolve, 10))
      const plant = await plantOf(api, fern)
      assert.deepEqual([plant.stock, plant.status, plant.version], [{ onHand: 4, reserved: 0, available: 4 }, 'available', 4])
      const history = (await api.request({ method: 'GET', url: `/v3/plant/${fern}/history?limit=1` })).json().items
      assert.deepEqual([history[0].reason, history[0].actor], ['expire', 'expiry'])
      const read = (await api.request({ method: 'GET', url: `/v3/reservations/${String(r.id)}` })).json()
      assert.equal(read.state, 'expired')
      assert.ok(read.endedAt !== null)
      const gone = await api.request({ method: 'POST', url: `/v3/reservations/${String(r.id)}/commit` })
      assert.equal(gone.statusCode, 410)
      assert.equal(gone.json().state, 'expired')
    })

    test('a plant in the trash: committing its reservation is 404 naming the line; a release lowers the reserved units it keeps there, which a restore brings back', async (t) => {
      const api = await build(t, engine)
      const fern = await stocked(api, 'Fern', 5)
      const r = (await reserve(api, [{ plant: fern, quantity: 2 }])).json()
      assert.equal((await api.request({ method: 'DELETE', url: `/v3/plant/${fern}` })).statusCode, 204)
      const commit = await api.request({ method: 'POST', url: `/v3/reservations/${String(r.id)}/commit` })
      assert.equal(commit.statusCode, 404)
      assert.deepEqual(commit.json().errors.map((e: { path: string }) => e.path), ['/lines/0/plant'])
      assert.equal((await api.request({ method: 'DELETE', url: `/v3/reservations/${String(r.id)}` })).statusCode, 204)
      assert.equal((await api.request({ method: 'POST', url: `/v3/trash/${fern}/restore` })).statusCode, 200)
      assert.deepEqual((await plantOf(api, fern)).stock, { onHand: 5, reserved: 0, available: 5 })
      assert.deepEqual((await api.request({ method: 'GET', url: '/v3/store/inventory' })).json().units, { onHand: 5, reserved: 0, available: 5 })
    })

    test('past expiresAt, before the expirer has run, a commit is already 410 and the reservation reads as expired; a DELETE lets its units go at once (expired, by expiry) and is 410', async (t) => {
      let offset = 0
      // The expirer looks only every 10 minutes here: what is seen is the overdue reservation itself.
      const api = await build(t, engine, { reservationExpiryPollMs: 600_000 }, { now: () => Date.now() + offset })
      const fern = await stocked(api, 'Fern', 4)
      await new Promise((resolve) => setTimeout(resolve, 0))
      const r = (await reserve(api, [{ plant: fern, quantity: 1 }], {}, 30)).json()
      offset = 31_000
      assert.equal((await api.request({ method: 'GET', url: `/v3/reservations/${String(r.id)}` })).json().state, 'expired')
      assert.equal((await api.request({ method: 'POST', url: `/v3/reservations/${String(r.id)}/commit` })).statusCode, 410)
      assert.equal((await plantOf(api, fern)).stock.reserved, 1, 'a refused commit lets nothing go')
      const { items: before } = await api.app.store.changes(0, 1000)
      const released = await api.request({ method: 'DELETE', url: `/v3/reservations/${String(r.id)}` })
      assert.equal(released.statusCode, 410, released.body)
      assert.match(released.json().type, /reservation-gone$/)
      assert.equal(released.json().state, 'expired')
      const plant = await plantOf(api, fern)
      assert.deepEqual([plant.stock, plant.version], [{ onHand: 4, reserved: 0, available: 4 }, 4], 'its units are let go by the DELETE, not at the expirer\'s next look')
      const { items: changes } = await api.app.store.changes(before[before.length - 1].seq, 100)
      assert.deepEqual(changes.map((c) => [c.kind, c.id, c.version]), [['updated', fern, 4]])
      const history = (await api.request({ method: 'GET', url: `/v3/plant/${fern}/history?limit=1` })).json().items
      assert.deepEqual([history[0].reason, history[0].actor], ['expire', 'expiry'])
      const read = (await api.request({ method: 'GET', url: `/v3/reservations/${String(r.id)}` })).json()
      assert.equal(read.state, 'expired')
      assert.ok(read.endedAt !== null)
      assert.deepEqual((await api.request({ method: 'GET', url: '/v3/store/inventory' })).json().units, { onHand: 4, reserved: 0, available: 4 })
      const again = await api.request({ method: 'DELETE', url: `/v3/reservations/${String(r.id)}` })
      assert.deepEqual([again.statusCode, again.json().state], [410, 'expired'])
      assert.equal((await plantOf(api, fern)).version, 4, 'let go once')
    })
  })
}
