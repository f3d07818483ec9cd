import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createKey } from '../../src/keys/manage.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

const batch = (request: TestApp['request'], operations: unknown[], headers: Record<string, string> = {}) =>
  request({ method: 'POST', url: '/v3/plant/batch', headers, payload: { operations } })

/** Every plant (by id) and every change of the feed: what a refused batch must leave exactly as it was. */
async function snapshot (app: TestApp['app']): Promise<unknown> {
  return { plants: await app.store.list({ afterId: 0, limit: 1000 }), changes: (await app.store.changes(0, 1000)).items, inventory: await app.store.inventory() }
}

for (const engine of ENGINES) {
  describe(`batch-plants (POST /v3/plant/batch) on ${engine.name}`, { skip: engine.skip }, () => {
    test('applies every operation in order, one result each, and one feed change each, consecutive and in order', async (t) => {
      const { app, request, add } = await build(t, engine)
      const fern = await add({ name: 'Fern', tags: ['green'] })
      const palm = await add({ name: 'Palm', sku: 'PALM-1' })
      const ivy = await add({ name: 'Ivy' })
      const head = await app.store.head()
      const res = await batch(request, [
        { op: 'create', plant: { name: 'Monstera', price: '12.5', sku: 'MON-1' } },
        { op: 'update', plant: { id: fern.id, name: 'Fern', status: 'sold' } },
        { op: 'patch', id: palm.id, patch: { price: '3' }, ifMatch: `"${palm.id}.1"` },
        { op: 'delete', id: ivy.id }
      ])
      assert.equal(res.statusCode, 200, res.body)
      const { results } = res.json()
      assert.equal(results.length, 4)
      assert.equal(results[0].status, 200)
      assert.equal(results[0].plant.name, 'Monstera')
      assert.equal(results[0].plant.price, '12.50')
      assert.deepEqual([results[1].status, results[1].plant.status, results[1].plant.tags], [200, 'sold', []])
      assert.deepEqual([results[2].plant.price, results[2].plant.sku], ['3.00', 'PALM-1'])
      assert.deepEqual(results[3], { status: 204 })
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${ivy.id}` })).statusCode, 404)
      const created = (await request({ method: 'GET', url: `/v3/plant/${results[0].plant.id}` })).json()
      assert.deepEqual(created, results[0].plant)
      const { items } = await app.store.changes(head, 100)
      assert.deepEqual(items.map((c) => [c.seq, c.kind, c.id]), [
        [head + 1, 'created', results[0].plant.id], [head + 2, 'updated', fern.id], [head + 3, 'updated', palm.id], [head + 4, 'deleted', ivy.id]
      ])
      assert.deepEqual(items[2].plant, results[2].plant)
      assert.deepEqual(await app.store.inventory(), { available: 2, pending: 0, sold: 1, units: { onHand: 0, reserved: 0, available: 0 } })
    })

    test('a large batch is answered a slice at a time: other work runs between slices, and every result is the plant as GET reads it', async (t) => {
      const { app, request } = await build(t, engine)
      // From the moment the store has applied the batch, count the turns of the event loop until the answer is made.
      let turns = 0
      let answering = false
      const batchOfStore = app.store.batch.bind(app.store)
      app.store.batch = async (...args: Parameters<typeof batchOfStore>) => {
        const result = await batchOfStore(...args)
        answering = true
        const tick = (): void => { if (answering) { turns++; setImmediate(tick) } }
        setImmediate(tick)
        return result
      }
      const operations = Array.from({ length: 240 }, (_, i) => ({ op: 'create', plant: { name: `Plant ${i}`, tags: ['a'], price: '1.5', description: i % 2 === 0 ? null : 'odd' } }))
      const res = await batch(request, operations)
      answering = false
      assert.equal(res.statusCode, 200, res.body)
      assert.match(String(res.headers['content-type']), /^application\/json; charset=utf-8$/)
      const { results } = res.json()
      assert.equal(results.length, 240)
      // 240 results are 5 slices of 50: at least 4 turns for other work while the answer is built.
      assert.ok(turns >= 4, `the event loop turned ${turns} times while 240 results were answered`)
      for (const i of [0, 49, 50, 199, 239]) {
        assert.equal(results[i].status, 200)
        assert.deepEqual(results[i].plant, (await request({ method: 'GET', url: `/v3/plant/${results[i].plant.id}` })).json())
      }
    })

    test('the store\'s batch with results: false (an import) applies every operation, feed included, and answers no plants', async (t) => {
      const { app } = await build(t, engine)
      const { plants: [fern] } = await app.store.batch([{ op: 'create', fields: { name: 'Fern', category: null, tags: [], status: 'available' } }])
      const head = await app.store.head()
      const answer = await app.store.batch([
        { op: 'patch', id: fern!.id, patch: { status: 'sold' } },
        { op: 'create', fields: { name: 'Palm', category: null, tags: [], status: 'available' } }
      ], undefined, { actor: 'cli' }, { results: false })
      assert.deepEqual(answer, { plants: [], replayed: false })
      const { items } = await app.store.changes(head, 10)
      assert.deepEqual(items.map((c) => [c.kind, c.plant?.name, c.plant?.status, c.actor]), [['updated', 'Fern', 'sold', 'cli'], ['created', 'Palm', 'available', 'cli']])
      assert.equal((await app.store.get(fern!.id))?.status, 'sold')
    })

    test('later operations see earlier ones: create, then patch it by SKU order; a SKU freed and taken again in one batch', async (t) => {
      const { app, request, add } = await build(t, engine)
      const old = await add({ name: 'Old', sku: 'SKU-1' })
      const other = await add({ name: 'Other', sku: 'SKU-2' })
      const res = await batch(request, [
        { op: 'delete', id: old.id },
        { op: 'create', plant: { name: 'New', sku: 'sku-1' } },
        { op: 'patch', id: other.id, patch: { sku: 'SKU-3' } },
        { op: 'create', plant: { name: 'Newer', sku: 'SKU-2' } },
        { op: 'patch', id: other.id, patch: { name: 'Other, renamed' } }
      ])
      assert.equal(res.statusCode, 200, res.body)
      const { results } = res.json()
      assert.deepEqual(results.map((r: { status: number }) => r.status), [204, 200, 200, 200, 200])
      assert.deepEqual(results[4].plant, { ...results[2].plant, name: 'Other, renamed', updatedAt: results[4].plant.updatedAt, version: results[2].plant.version + 1 })
      const { items } = await app.store.changes(0, 100)
      assert.deepEqual(items.slice(-5).map((c) => c.kind), ['deleted', 'created', 'updated', 'created', 'updated'])
      const seqs = items.slice(-5).map((c) => c.seq)
      assert.deepEqual(seqs, seqs.map((_, i) => seqs[0] + i))
    })

    test('all or nothing: any refused operation leaves the catalogue and the feed exactly as they were; errors name each by index', async (t) => {
      const { app, request, add } = await build(t, engine)
      const fern = await add({ name: 'Fern' })
      const palm = await add({ name: 'Palm', sku: 'PALM-1' })
      const before = await snapshot(app)
      const res = await batch(request, [
        { op: 'create', plant: { name: 'Monstera' } },
        { op: 'patch', id: fern.id, patch: { status: 'sold' } },
        { op: 'patch', id: 999999, patch: { status: 'sold' } },
        { op: 'update', plant: { id: fern.id, name: 'Fern' }, ifMatch: `"${fern.id}.1"` }, // version 1 is stale by now (the patch above)
        { op: 'create', plant: { name: 'Copy', sku: 'palm-1' } },
        { op: 'delete', id: 888888 }
      ])
      assert.equal(res.statusCode, 404, res.body)
      const body = res.json()
      assert.match(body.type, /not-found$/)
      assert.deepEqual(body.errors.map((e: { path: string }) => e.path), ['/operations/2/id', '/operations/3/ifMatch', '/operations/4/plant/sku', '/operations/5/id'])
      assert.match(body.errors[2].message, new RegExp(`plant ${palm.id}`))
      assert.deepEqual(await snapshot(app), before)
      // The status is the first refusal's.
      const stale = await batch(request, [{ op: 'delete', id: fern.id, ifMatch: '"1.9"' }, { op: 'delete', id: 777 }])
      assert.equal(stale.statusCode, 412, stale.body)
      const taken = await batch(request, [{ op: 'patch', id: fern.id, patch: { sku: 'Palm-1' } }])
      assert.equal(taken.statusCode, 409, taken.body)
      assert.deepEqual(taken.json().errors, [{ path: '/operations/0/patch/sku', message: `is taken by plant ${palm.id}` }])
      assert.deepEqual(await snapshot(app), before)
      // The same batch without its refused operations applies.
      const ok = await batch(request, [{ op: 'create', plant: { name: 'Monstera' } }, { op: 'patch', id: fern.id, patch: { status: 'sold' } }])
      assert.equal(ok.statusCode, 200, ok.body)
    })

    test('a refusal names what a client needs: the SKU\'s holder (an earlier operation, or a stored plant with `holder`), the current ETag; results carry ETags', async (t) => {
      const { app, request, add } = await build(t, engine)
      const palm = await add({ name: 'Palm', sku: 'PALM-1' })
      const fern = await add({ name: 'Fern' })
      const before = await snapshot(app)
      // Two creates of one SKU: the first one's id is rolled back, so the second names the operation, not a plant that will never exist.
      const twins = await batch(request, [{ op: 'create', plant: { name: 'A', sku: 'NEWDUP' } }, { op: 'create', plant: { name: 'B', sku: 'newdup' } }])
      assert.equal(twins.statusCode, 409, twins.body)
      assert.deepEqual(twins.json().errors, [{ path: '/operations/1/plant/sku', message: 'is taken by /operations/0 (an earlier operation of this batch)' }])
      assert.equal(twins.json().holder, undefined)
      // A patch giving a stored plant the SKU, then a create of it: the holder is that operation too.
      const moved = await batch(request, [{ op: 'patch', id: fern.id, patch: { sku: 'FERN-9' } }, { op: 'create', plant: { name: 'C', sku: 'fern-9' } }])
      assert.deepEqual(moved.json().errors, [{ path: '/operations/1/plant/sku', message: 'is taken by /operations/0 (an earlier operation of this batch)' }])
      // A stored plant's SKU: named, and in `holder`, as a single write's 409.
      const stored = await batch(request, [{ op: 'create', plant: { name: 'D' } }, { op: 'create', plant: { name: 'E', sku: 'palm-1' } }])
      assert.equal(stored.statusCode, 409)
      assert.deepEqual(stored.json().errors, [{ path: '/operations/1/plant/sku', message: `is taken by plant ${palm.id}` }])
      assert.equal(stored.json().holder, palm.id)
      // A stale ifMatch names the plant's current ETag; one stale only after an earlier operation says so.
      await request({ method: 'PATCH', url: `/v3/plant/${fern.id}`, payload: { status: 'pending' } })
      const stale = await batch(request, [{ op: 'delete', id: fern.id, ifMatch: `"${fern.id}.1"` }])
      assert.equal(stale.statusCode, 412)
      assert.deepEqual(stale.json().errors, [{ path: '/operations/0/ifMatch', message: `does not match the current ETag of the plant (its current ETag is "${fern.id}.2")` }])
      const inner = await batch(request, [{ op: 'patch', id: fern.id, patch: { status: 'sold' } }, { op: 'delete', id: fern.id, ifMatch: `"${fern.id}.2"` }])
      assert.match(inner.json().errors[0].message, new RegExp(`as an earlier operation of this batch leaves it \\("${fern.id}\\.2" is its ETag before the batch\\)`))
      // An ETag without its quotes matches nothing: refused saying so, not a 412.
      const bare = await batch(request, [{ op: 'delete', id: fern.id, ifMatch: `${fern.id}.2` }])
      assert.equal(bare.statusCode, 400)
      assert.deepEqual(bare.json().errors, [{ path: '/operations/0/ifMatch', message: 'must be an ETag as the ETag header gives it, in double quotes (for example "\\"5.1\\"" in JSON), or *' }])
      // Wording: an empty batch, a plant not found.
      assert.deepEqual((await batch(request, [])).json().errors, [{ path: '/operations', message: 'must hold at least 1 operation' }])
      assert.deepEqual((await batch(request, [{ op: 'delete', id: 999999 }])).json().errors, [{ path: '/operations/0/id', message: 'plant not found' }])
      // Every result carries its plant's ETag, usable as the next ifMatch.
      const done = await batch(request, [{ op: 'create', plant: { name: 'F' } }, { op: 'patch', id: fern.id, patch: { name: 'Fern 2' } }, { op: 'delete', id: palm.id }])
      const results = done.json().results
      assert.deepEqual(results.map((r: { etag?: string }) => r.etag), [`"${results[0].plant.id}.1"`, `"${fern.id}.3"`, undefined])
      const next = await batch(request, [{ op: 'patch', id: fern.id, patch: { name: 'Fern 3' }, ifMatch: results[1].etag }])
      assert.equal(next.statusCode, 200, next.body)
      assert.notDeepEqual(await snapshot(app), before)
    })

    test('invalid operations: 400 naming each by index and member, by the single routes\' rules; nothing applied', async (t) => {
      const { app, request, add } = await build(t, engine)
      const fern = await add({ name: 'Fern' })
      const before = await snapshot(app)
      const res = await batch(request, [
        { op: 'create', plant: { name: '' } },
        { op: 'create', plant: { name: 'Ok' } },
        { op: 'update', plant: { name: 'No id' } },
        { op: 'patch', id: fern.id, patch: { status: 'gone', id: 3 } },
        { op: 'remove', id: 1 },
        { op: 'delete' },
        { op: 'create', plant: { name: 'Priced', price: 3 } },
        'text'
      ])
      assert.equal(res.statusCode, 400, res.body)
      const paths = res.json().errors.map((e: { path: string }) => e.path)
      assert.deepEqual(paths, ['/operations/0/plant/name', '/operations/2/plant/id',
        '/operations/3/patch/id', '/operations/3/patch/status', '/operations/4/op', '/operations/5/id', '/operations/6/plant/price', '/operations/7'])
      assert.deepEqual(await snapshot(app), before)
      // An id written with a fraction is refused as the single routes refuse it; so is a body that is not JSON.
      const fraction = await request({ method: 'POST', url: '/v3/plant/batch', headers: { 'content-type': 'application/json' }, payload: '{"operations":[{"op":"delete","id":1.0}]}' })
      assert.equal(fraction.statusCode, 400, fraction.body)
      assert.deepEqual(fraction.json().errors.map((e: { path: string }) => e.path), ['/operations/0/id'])
      const notJson = await request({ method: 'POST', url: '/v3/plant/batch', headers: { 'content-type': 'application/json' }, payload: '{"operations":[' })
      assert.equal(notJson.statusCode, 400)
      for (const [payload, path] of [[{}, '/operations'], [{ operations: [] }, '/operations'], [{ operations: [], more: 1 }, '/more'],
        [{ operations: Array.from({ length: 501 }, () => ({ op: 'delete', id: 1 })) }, '/operations']] as const) {
        const bad = await request({ method: 'POST', url: '/v3/plant/batch', payload })
        assert.equal(bad.statusCode, 400, bad.body)
        assert.ok(bad.json().errors.some((e: { path: string }) => e.path === path), bad.body)
      }
    })

    test('a {} patch answers the plant as it is: no new version, no change in the feed (as PATCH)', async (t) => {
      const { app, request, add } = await build(t, engine)
      const fern = await add({ name: 'Fern' })
      const head = await app.store.head()
      const res = await batch(request, [{ op: 'patch', id: fern.id, patch: {} }, { op: 'patch', id: fern.id, patch: { status: 'sold' }, ifMatch: `"${fern.id}.1"` }])
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(res.json().results[0], { status: 200, plant: fern, etag: `"${fern.id}.1"` })
      assert.deepEqual((await app.store.changes(head, 10)).items.map((c) => [c.kind, c.version]), [['updated', 2]])
    })

    test('500 operations fit in the 1 MiB body limit; a larger body is 413', async (t) => {
      const { app, request } = await build(t, engine)
      const description = 'd'.repeat(1900)
      const operations = Array.from({ length: 500 }, (_, i) => ({ op: 'create', plant: { name: `Plant ${i}`, description } }))
      const big = JSON.stringify({ operations })
      assert.ok(big.length > 64 * 1024 && big.length < 1024 * 1024)
      const res = await request({ method: 'POST', url: '/v3/plant/batch', headers: { 'content-type': 'application/json' }, payload: big })
      assert.equal(res.statusCode, 200)
      assert.equal(res.json().results.length, 500)
      assert.equal((await app.store.inventory()).available, 500)
      const tooBig = JSON.stringify({ operations: [{ op: 'create', plant: { name: 'x', description: 'd'.repeat(1024 * 1024) } }] })
      const refused = await request({ method: 'POST', url: '/v3/plant/batch', headers: { 'content-type': 'application/json' }, payload: tooBig })
      assert.equal(refused.statusCode, 413)
      assert.match(refused.json().detail, /1 MiB/)
      // Other routes keep 64 KiB.
      const single = await request({ method: 'POST', url: '/v3/plant', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ name: 'x'.repeat(70 * 1024) }) })
      assert.equal(single.statusCode, 413)
    })

    test('Idempotency-Key covers the whole batch: a retry answers the first results and applies nothing; another body is 422', async (t) => {
      const { app, request, add } = await build(t, engine)
      const fern = await add({ name: 'Fern' })
      const operations = [{ op: 'create', plant: { name: 'Monstera' } }, { op: 'patch', id: fern.id, patch: { price: '4.5' } }]
      const first = await batch(request, operations, { 'idempotency-key': 'price-list-1' })
      assert.equal(first.statusCode, 200, first.body)
      const after = await snapshot(app)
      const again = await batch(request, [{ op: 'create', plant: { status: 'available', name: 'Monstera' } }, operations[1]], { 'idempotency-key': 'price-list-1' })
      assert.equal(again.statusCode, 200, again.body)
      assert.deepEqual(again.json(), first.json())
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.equal(first.headers['idempotent-replayed'], undefined)
      assert.deepEqual(await snapshot(app), after)
      const other = await batch(request, [operations[0]], { 'idempotency-key': 'price-list-1' })
      assert.equal(other.statusCode, 422, other.body)
      assert.match(other.json().detail, /^This Idempotency-Key was used for another request \(another method or path, or the same one with a different body\) at \d{4}-\d\d-\d\dT[\d:.]+Z, and is kept until \d{4}-\d\d-\d\dT[\d:.]+Z \(24 hours from that use\)/)
      // A refused batch keeps no key: the same key applies once the batch can be.
      const refused = await batch(request, [{ op: 'delete', id: 4242 }], { 'idempotency-key': 'k2' })
      assert.equal(refused.statusCode, 404)
      const ok = await batch(request, [{ op: 'delete', id: fern.id }], { 'idempotency-key': 'k2' })
      assert.equal(ok.statusCode, 200, ok.body)
    })

    test('the path: POST on /v3/plant/batch is the batch, other methods 405; POST /v3/plant/{id} stays 405', async (t) => {
      const { request } = await build(t, engine)
      const get = await request({ method: 'GET', url: '/v3/plant/batch' })
      assert.equal(get.statusCode, 405)
      assert.equal(get.headers.allow, 'POST')
      const post = await request({ method: 'POST', url: '/v3/plant/7', payload: {} })
      assert.equal(post.statusCode, 405)
      // An unknown query parameter is refused, as on every operation: ?dryRun=true must not apply the batch.
      const dry = await request({ method: 'POST', url: '/v3/plant/batch?dryRun=true', payload: { operations: [{ op: 'create', plant: { name: 'Fern' } }] } })
      assert.equal(dry.statusCode, 400, dry.body)
      assert.equal((await request({ method: 'GET', url: '/v3/plant' })).json().items.length, 0)
    })

    test('each operation needs its own scope: a till (sell) may batch status patches alone; anything else needs write; no key 401', async (t) => {
      const { app, request, add } = await build(t, engine, { apiKeys: ['secret-key-1'] })
      const admin = { authorization: 'Bearer secret-key-1' }
      const till = { authorization: `Bearer ${(await createKey(app.store.keys, 'till-1', 'sell', null, Date.now())).secret}` }
      const writer = { authorization: `Bearer ${(await createKey(app.store.keys, 'shop-1', 'write', null, Date.now())).secret}` }
      const anonymous = await batch(request, [{ op: 'create', plant: { name: 'Fern' } }])
      assert.equal(anonymous.statusCode, 401)
      const fern = (await batch(request, [{ op: 'create', plant: { name: 'Fern' } }], admin)).json().results[0].plant
      const palm = await request({ method: 'POST', url: '/v3/plant', headers: writer, payload: { name: 'Palm' } })
      void add
      const sales = [{ op: 'patch', id: fern.id, patch: { status: 'sold' } }, { op: 'patch', id: palm.json().id, patch: { status: 'pending' } }]
      assert.equal((await batch(request, sales, till)).statusCode, 200)
      for (const operations of [[...sales, { op: 'patch', id: fern.id, patch: { price: '1' } }], [...sales, { op: 'delete', id: fern.id }],
        [{ op: 'create', plant: { name: 'x' } }], [{ op: 'patch', id: fern.id, patch: { status: 'sold', name: 'y' } }]]) {
        const refused = await batch(request, operations, till)
        assert.equal(refused.statusCode, 403, refused.body)
        assert.match(refused.json().detail, /scope write /)
      }
      assert.equal((await batch(request, [...sales, { op: 'delete', id: fern.id }], writer)).statusCode, 200)
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${fern.id}` })).statusCode, 404)
    })
  })
}
