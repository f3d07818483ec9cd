import assert from 'node:assert/strict'
import { test } from 'node:test'
import { batchPlants, createPlantClient, describeProblem, uploadPhoto, type Plant } from '../../src/client/plant-client.js'
import { listenOn } from '../../scripts/lib/listening-service.js'
import { servedDocument } from '../../scripts/openapi-document.js'
import { picture } from '../helpers/pictures.js'
import { seedView } from '../helpers/records.js'

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace']

test('the typed client drives every documented operation against a listening service, error statuses included', async (t) => {
  const service = await listenOn(':memory:')
  t.after(() => service.close())
  const exercised = new Set<string>()
  const client = createPlantClient({ baseUrl: service.url })
  client.use({ onRequest: ({ request, schemaPath }) => { exercised.add(`${request.method} ${schemaPath}`) } })

  // api-index: where the docs, the document and the API are
  assert.equal((await client.GET('/v3')).data?.openapi, '/v3/openapi.json')

  // health and ready
  assert.deepEqual((await client.GET('/healthz')).data, { status: 'ok' })
  assert.deepEqual((await client.GET('/readyz')).data, { status: 'ready' })
  assert.equal((await client.GET('/v3/version')).data?.engine, 'sqlite')

  // get-problem-type: a problem's `type` link resolves; an unknown one is 404
  assert.equal((await client.GET('/v3/problems/{code}', { params: { path: { code: 'insufficient-stock' } } })).data?.title, 'Insufficient stock')
  assert.equal((await client.GET('/v3/problems/{code}', { params: { path: { code: 'no-such-thing' } } })).response.status, 404)

  // add-plant: 200 with Location and ETag, defaults applied
  const added = await client.POST('/v3/plant', { body: { name: 'Monstera', tags: ['large'] } })
  assert.equal(added.response.status, 200)
  const monstera = added.data as Plant
  assert.deepEqual(seedView(monstera), { id: monstera.id, name: 'Monstera', category: null, tags: ['large'], status: 'available', photos: [] })
  assert.equal(added.response.headers.get('location'), `/v3/plant/${monstera.id}`)
  const etag = added.response.headers.get('etag')
  assert.ok(etag)

  // add-plant: 405 invalid input (the seed's status), with the problem body typed as `error`
  const invalid = await client.POST('/v3/plant', { body: { name: '   ' } })
  assert.equal(invalid.response.status, 405)
  assert.ok(invalid.response.headers.get('allow'))
  assert.equal(invalid.error?.title, 'Invalid input')
  assert.match(describeProblem(405, invalid.error), /must not be only white space/)
  // an unknown member is refused, never dropped: the typed body forbids it, so go around the types
  const unknown = await client.POST('/v3/plant', { body: { name: 'Fern', staus: 'sold' } as never })
  assert.equal(unknown.response.status, 405)
  assert.deepEqual(unknown.error?.errors, [{ path: '/staus', message: 'is not a known field' }])

  // add-plant with Idempotency-Key: replayed, then 422 for another body under the same key
  const key = { 'idempotency-key': 'client-e2e-1' }
  const first = await client.POST('/v3/plant', { params: { header: key }, body: { name: 'Fern' } })
  const retry = await client.POST('/v3/plant', { params: { header: key }, body: { name: 'Fern' } })
  assert.equal(retry.data?.id, first.data?.id)
  const reused = await client.POST('/v3/plant', { params: { header: key }, body: { name: 'Cactus' } })
  assert.equal(reused.response.status, 422)

  // get-plant: 200, 304 with If-None-Match, 404, 400 for a bad id
  const got = await client.GET('/v3/plant/{id}', { params: { path: { id: monstera.id } } })
  assert.deepEqual(got.data, monstera)
  const notModified = await client.GET('/v3/plant/{id}', { params: { path: { id: monstera.id }, header: { 'if-none-match': etag } } })
  assert.equal(notModified.response.status, 304)
  assert.equal((await client.GET('/v3/plant/{id}', { params: { path: { id: 999_999 } } })).response.status, 404)
  const badId = await client.GET('/v3/plant/{id}', { params: { path: { id: 0 } } })
  assert.equal(badId.response.status, 400)
  assert.equal(badId.error?.title, 'Invalid ID supplied')

  // update-plant: 200 with a new ETag, 412 on a stale If-Match, 404, 400 invalid id, 400 invalid input
  const updated = await client.PUT('/v3/plant', {
    params: { header: { 'if-match': etag } },
    body: { id: monstera.id, name: 'Monstera deliciosa', status: 'pending' }
  })
  assert.equal(updated.response.status, 200)
  assert.equal(updated.data?.status, 'pending')
  assert.notEqual(updated.response.headers.get('etag'), etag)
  const stale = await client.PUT('/v3/plant', { params: { header: { 'if-match': etag } }, body: { id: monstera.id, name: 'X' } })
  assert.equal(stale.response.status, 412)
  assert.equal((await client.PUT('/v3/plant', { body: { id: 999_999, name: 'X' } })).response.status, 404)
  const noId = await client.PUT('/v3/plant', { body: { name: 'X' } as never })
  assert.equal(noId.response.status, 400)
  assert.match(noId.error?.type ?? '', /invalid-id$/)
  const badStatus = await client.PUT('/v3/plant', { body: { id: monstera.id, name: 'X', status: 'gone' as never } })
  assert.equal(badStatus.response.status, 400)
  assert.match(badStatus.error?.type ?? '', /invalid-input$/)

  // list-plants: filters, keyset pages, 400 for a limit out of range; repeated tag means all of them
  await client.POST('/v3/plant', { body: { name: 'Olive', tags: ['large', 'outdoor'], category: 'tree' } })
  const page1 = await client.GET('/v3/plant', { params: { query: { limit: 2 } } })
  assert.equal(page1.data?.items.length, 2)
  assert.ok(page1.data?.nextCursor)
  const page2 = await client.GET('/v3/plant', { params: { query: { limit: 2, cursor: page1.data.nextCursor } } })
  assert.equal(page2.data?.items.length, 1)
  assert.equal(page2.data?.nextCursor, null)
  const both = await client.GET('/v3/plant', { params: { query: { tag: ['large', 'outdoor'], limit: 50 } } })
  assert.deepEqual(both.data?.items.map((p) => p.name), ['Olive'])
  assert.equal((await client.GET('/v3/plant', { params: { query: { limit: 501 } } })).response.status, 400)

  // list-plants finds: status any of, q, sort by name, with cursors bound to their query
  const found = await client.GET('/v3/plant', { params: { query: { q: 'OLI', status: ['available', 'sold'], sort: '-name', limit: 1 } } })
  assert.deepEqual(found.data?.items.map((p) => p.name), ['Olive'])
  const byName = await client.GET('/v3/plant', { params: { query: { sort: 'name', limit: 1 } } })
  assert.deepEqual(byName.data?.items.map((p) => p.name), ['Fern'])
  const otherSort = await client.GET('/v3/plant', { params: { query: { sort: '-name', cursor: byName.data?.nextCursor ?? undefined } } })
  assert.equal(otherSort.response.status, 400)
  // A short term at a word's start, accents ignored, category and tag ignoring case; a term of accents alone is 400.
  const short = await client.GET('/v3/plant', { params: { query: { q: 'ÓL', category: 'Tree', tag: ['LARGE'] } } })
  assert.deepEqual(short.data?.items.map((p) => p.name), ['Olive'])
  assert.equal((await client.GET('/v3/plant', { params: { query: { q: '\u0301' } } })).response.status, 400)

  // patch-plant: a merge patch as application/merge-patch+json; {} changes nothing; 412, 404, 400
  const patched = await client.PATCH('/v3/plant/{id}', {
    params: { path: { id: monstera.id } },
    body: { status: 'sold', category: 'indoor' },
    headers: { 'content-type': 'application/merge-patch+json' }
  })
  assert.equal(patched.response.status, 200)
  assert.deepEqual(seedView(patched.data!), { id: monstera.id, name: 'Monstera deliciosa', category: 'indoor', tags: [], status: 'sold', photos: [] })
  const patchEtag = patched.response.headers.get('etag')
  const noop = await client.PATCH('/v3/plant/{id}', { params: { path: { id: monstera.id }, header: { 'if-match': patchEtag! } }, body: {} })
  assert.equal(noop.response.headers.get('etag'), patchEtag)
  assert.equal((await client.PATCH('/v3/plant/{id}', { params: { path: { id: monstera.id }, header: { 'if-match': etag } }, body: {} })).response.status, 412)
  assert.equal((await client.PATCH('/v3/plant/{id}', { params: { path: { id: 999_999 } }, body: { status: 'sold' } })).response.status, 404)
  const nullName = await client.PATCH('/v3/plant/{id}', { params: { path: { id: monstera.id } }, body: { name: null } as never })
  assert.equal(nullName.response.status, 400)
  assert.deepEqual(nullName.error?.errors?.map((e) => e.path), ['/name'])

  // get-inventory: every status, counted at one moment
  const inventory = await client.GET('/v3/store/inventory')
  assert.deepEqual(inventory.data, { available: 2, pending: 0, sold: 1, units: { onHand: 0, reserved: 0, available: 0 } })

  // count-plants: the list's filters, exact up to 10,000; a list-only parameter is 400
  assert.deepEqual((await client.GET('/v3/plant/count', { params: { query: { status: ['available'] } } })).data, { count: 2, exact: true })
  assert.equal((await client.GET('/v3/plant/count', { params: { query: { limit: 5 } as never } })).error?.status, 400)

  // delete-plant: 204, then 404
  assert.equal((await client.DELETE('/v3/plant/{id}', { params: { path: { id: monstera.id } } })).response.status, 204)
  assert.equal((await client.DELETE('/v3/plant/{id}', { params: { path: { id: monstera.id } } })).response.status, 404)

  // list-plant-changes: the log of what happened above, and 400 for a bad limit
  const changes = await client.GET('/v3/plant/changes', { params: { query: { after: 0, limit: 100 } } })
  assert.deepEqual(changes.data?.items.map((c) => c.kind), ['created', 'created', 'updated', 'created', 'updated', 'deleted'])
  assert.equal((await client.GET('/v3/plant/changes', { params: { query: { limit: 0 } } })).response.status, 400)

  // stream-plant-events: the first event after `after` arrives as Server-Sent Events
  const events = await client.GET('/v3/plant/events', { params: { query: { after: 3 } }, parseAs: 'stream' })
  assert.equal(events.response.status, 200)
  assert.match(events.response.headers.get('content-type') ?? '', /^text\/event-stream/)
  const reader = events.response.body!.pipeThrough(new TextDecoderStream()).getReader()
  let text = ''
  while (!/\n\n(id|event|data):[^]*\n\n/.test(text)) {
    const { value, done } = await reader.read()
    if (done) break
    text += value
  }
  await reader.cancel()
  assert.match(text, /id: 4\nevent: created\ndata: \{"seq":4,"kind":"created"/)
  assert.equal((await client.GET('/v3/plant/events', { params: { query: { after: -1 } } })).response.status, 400)

  // add-plant-photo through the typed helper (a Blob names its own type), get-photo-file, delete-plant-photo
  const olive = (await client.POST('/v3/plant', { body: { name: 'Photographed olive' } })).data!
  const blob = new Blob([new Uint8Array(await picture('png', 4))], { type: 'image/png' })
  const photo = await uploadPhoto(client, olive.id, blob, { ifMatch: `"${olive.id}.1"` })
  assert.equal(photo.response.status, 201)
  assert.equal(photo.data?.width, 64)
  assert.equal((await uploadPhoto(client, olive.id, new Uint8Array([1, 2, 3]), { type: 'image/jpeg' })).error?.status, 400)
  // Checked by the compiler (npm run typecheck), never run: bytes carry no type, so one is required.
  const typed = (): unknown => {
    // @ts-expect-error a Uint8Array without its type (the upload would be 415)
    return uploadPhoto(client, olive.id, new Uint8Array([1, 2, 3]))
  }
  void typed
  assert.equal((await uploadPhoto(client, olive.id, blob, { ifMatch: `"${olive.id}.1"` })).response.status, 412)
  const file = await client.GET('/v3/photos/{file}', { params: { path: { file: photo.data!.urls.thumb.split('/').pop()! } }, parseAs: 'arrayBuffer' })
  assert.equal(file.response.headers.get('content-type'), 'image/webp')
  assert.deepEqual((await client.GET('/v3/plant/{id}', { params: { path: { id: olive.id } } })).data?.photos, [photo.data])
  const one = await client.GET('/v3/plant/{id}/photos/{photoId}', { params: { path: { id: olive.id, photoId: photo.data!.id } } })
  assert.deepEqual(one.data, photo.data)
  // order-plant-photos: every photo id once, the first the cover; anything else is 400
  const ordered = await client.PUT('/v3/plant/{id}/photos/order', { params: { path: { id: olive.id } }, body: { order: [photo.data!.id] } })
  assert.deepEqual(ordered.data?.photos, [photo.data])
  assert.equal((await client.PUT('/v3/plant/{id}/photos/order', { params: { path: { id: olive.id } }, body: { order: [] } })).error?.status, 400)
  const removed = await client.DELETE('/v3/plant/{id}/photos/{photoId}', { params: { path: { id: olive.id, photoId: photo.data!.id } } })
  assert.equal(removed.response.status, 204)

  // store fields: a priced, scanned, described plant; its SKU taken again is 409 naming it; every new filter and sort
  assert.equal((await client.GET('/v3')).data?.currency, 'EUR')
  const priced = await client.POST('/v3/plant', { body: { name: 'Till fern', price: '4.5', sku: 'TILL-1', barcode: '96385074', description: 'By the till' } })
  assert.equal(priced.response.status, 200)
  assert.deepEqual([priced.data?.price, priced.data?.sku, priced.data?.barcode, priced.data?.description], ['4.50', 'TILL-1', '96385074', 'By the till'])
  const taken = await client.POST('/v3/plant', { body: { name: 'Copy', sku: 'till-1' } })
  assert.deepEqual([taken.response.status, taken.error?.holder], [409, priced.data?.id])
  const since = priced.data!.updatedAt
  const filters = { sku: 'till-1', barcode: '96385074', updatedSince: since, priceMin: '4.5', priceMax: '4.50' }
  for (const sort of ['price', '-price', 'updated', '-updated'] as const) {
    const found = await client.GET('/v3/plant', { params: { query: { ...filters, sort } } })
    assert.deepEqual(found.data?.items.map((p) => p.id), [priced.data?.id], sort)
  }
  assert.equal((await client.GET('/v3/plant', { params: { query: { updatedSince: 'now' } } })).response.status, 400)

  // batch-plants: a price list applied all or nothing; a refused operation named by index, nothing applied
  const prices = await batchPlants(client, [
    { op: 'patch', id: priced.data!.id, patch: { price: '5' } },
    { op: 'create', plant: { name: 'Batch fern', price: '2.5' } }
  ], { idempotencyKey: 'e2e-batch-1' })
  assert.deepEqual(prices.data?.results.map((r) => r.status === 200 ? r.plant.price : null), ['5.00', '2.50'])
  const refusedBatch = await batchPlants(client, [{ op: 'patch', id: priced.data!.id, patch: { price: '6' } }, { op: 'delete', id: 999_999 }])
  assert.deepEqual([refusedBatch.response.status, refusedBatch.error?.errors], [404, [{ path: '/operations/1/id', message: 'plant not found' }]])
  assert.equal((await client.GET('/v3/plant/{id}', { params: { path: { id: priced.data!.id } } })).data?.price, '5.00')

  // the trash: a deleted plant is listed there (newest first), restored under its id, deleted again
  const binned = await client.POST('/v3/plant', { body: { name: 'Trash fern' } })
  const binnedId = { path: { id: binned.data!.id } }
  assert.equal((await client.DELETE('/v3/plant/{id}', { params: binnedId })).response.status, 204)
  const trash = await client.GET('/v3/trash', { params: { query: { limit: 1 } } })
  assert.deepEqual([trash.data?.items[0]?.id, trash.data?.items[0]?.plant.name], [binned.data!.id, 'Trash fern'])
  const restored = await client.POST('/v3/trash/{id}/restore', { params: binnedId })
  assert.deepEqual([restored.response.status, restored.data?.id, restored.data?.name], [200, binned.data!.id, 'Trash fern'])
  assert.equal((await client.POST('/v3/trash/{id}/restore', { params: binnedId })).response.status, 404, 'no longer in the trash')
  assert.equal((await client.DELETE('/v3/plant/{id}', { params: binnedId })).response.status, 204)

  // plant-history and revert-plant: a rename undone; the history of a plant in the trash is readable; a version not kept is 404
  const renamed = await client.POST('/v3/plant', { body: { name: 'Before' } })
  const renamedId = { path: { id: renamed.data!.id } }
  await client.PATCH('/v3/plant/{id}', { params: renamedId, body: { name: 'After' } })
  const history = await client.GET('/v3/plant/{id}/history', { params: { ...renamedId, query: { limit: 1 } } })
  assert.deepEqual([history.data?.items[0]?.version, history.data?.items[0]?.kind, history.data?.items[0]?.changes.name], [2, 'updated', ['Before', 'After']])
  assert.ok(history.data?.nextCursor)
  const older = await client.GET('/v3/plant/{id}/history', { params: { ...renamedId, query: { cursor: history.data!.nextCursor! } } })
  assert.deepEqual(older.data?.items.map((e) => e.kind), ['created'])
  const reverted = await client.POST('/v3/plant/{id}/revert', { params: renamedId, headers: { 'if-match': `"${renamed.data!.id}.2"` }, body: { version: 1 } })
  assert.deepEqual([reverted.response.status, reverted.data?.name, reverted.response.headers.get('etag')], [200, 'Before', `"${renamed.data!.id}.3"`])
  const notKept = await client.POST('/v3/plant/{id}/revert', { params: renamedId, body: { version: 99 } })
  assert.deepEqual([notKept.response.status, notKept.error?.type], [404, '/v3/problems/version-not-kept'])
  assert.equal((await client.GET('/v3/plant/{id}/history', { params: binnedId })).data?.items[0]?.kind, 'deleted', 'readable in the trash')
  assert.equal((await client.GET('/v3/plant/{id}/history', { params: { path: { id: 999_999 } } })).response.status, 404)

  // keys, last (the first key makes keys required): made anonymously on this keyless loopback
  // service, then used; a till's key is 403 on them; revoked, and revoked again (204: idempotent)
  const admin = await client.POST('/v3/keys', { body: { name: 'e2e-admin', scope: 'admin' } })
  assert.equal(admin.response.status, 201)
  const asAdmin = { authorization: `Bearer ${admin.data!.secret}` }
  const till = await client.POST('/v3/keys', { headers: asAdmin, body: { name: 'e2e-till', scope: 'sell', expiresAt: '2099-01-01' } })
  assert.deepEqual([till.response.status, till.data?.expiresAt], [201, '2099-01-02T00:00:00.000Z'], 'a date alone: the key works through that day')
  const listed = await client.GET('/v3/keys', { headers: asAdmin })
  assert.deepEqual(listed.data?.items.map((k) => [k.name, k.scope]), [['e2e-admin', 'admin'], ['e2e-till', 'sell']])
  const refused = await client.GET('/v3/keys', { headers: { authorization: `Bearer ${till.data!.secret}` } })
  assert.deepEqual([refused.response.status, refused.error?.type], [403, '/v3/problems/insufficient-scope'])
  const current = await client.GET('/v3/keys/current', { headers: { authorization: `Bearer ${till.data!.secret}` } })
  assert.deepEqual([current.data?.name, current.data?.scope, current.data?.scopes], ['e2e-till', 'sell', ['read', 'sell']], 'a till learns what its key may do')
  assert.equal((await client.GET('/v3/keys/current')).response.status, 401, 'without a key, once keys exist')
  assert.equal((await client.DELETE('/v3/keys/{name}', { params: { path: { name: 'e2e-till' } }, headers: asAdmin })).response.status, 204)
  assert.equal((await client.DELETE('/v3/keys/{name}', { params: { path: { name: 'e2e-till' } }, headers: asAdmin })).response.status, 204, 'a revoke is idempotent')

  // the trash's purge needs the admin key: then the plant is gone for good
  assert.equal((await client.DELETE('/v3/trash/{id}', { params: binnedId })).response.status, 401)
  assert.equal((await client.DELETE('/v3/trash/{id}', { params: binnedId, headers: asAdmin })).response.status, 204)
  assert.equal((await client.POST('/v3/trash/{id}/restore', { params: binnedId, headers: asAdmin })).response.status, 404)

  // webhooks, with the admin key: added (the secret once), listed, read, paused, rotated, tried,
  // their attempts listed, removed; an unknown id 404, a private target 400
  const hook = await client.POST('/v3/webhooks', { headers: asAdmin, body: { url: 'https://shop.example/hooks', events: ['updated'] } })
  assert.deepEqual([hook.response.status, hook.data?.status, hook.data?.secret.startsWith('whsec_')], [201, 'active', true])
  const hookId = { path: { id: hook.data!.id } }
  assert.equal((await client.POST('/v3/webhooks', { headers: asAdmin, body: { url: 'http://127.0.0.1/' } })).response.status, 400)
  assert.deepEqual((await client.GET('/v3/webhooks', { headers: asAdmin })).data?.items.map((w) => w.url), ['https://shop.example/hooks'])
  assert.equal((await client.GET('/v3/webhooks/{id}', { params: hookId, headers: asAdmin })).data?.events[0], 'updated')
  assert.equal((await client.PATCH('/v3/webhooks/{id}', { params: hookId, headers: asAdmin, body: { status: 'paused' } })).data?.status, 'paused')
  assert.match((await client.POST('/v3/webhooks/{id}/secret', { params: hookId, headers: asAdmin })).data?.secret ?? '', /^whsec_/)
  const tried = await client.POST('/v3/webhooks/{id}/test', { params: hookId, headers: asAdmin })
  assert.deepEqual([tried.response.status, tried.data?.seq], [200, 0])
  assert.equal((await client.GET('/v3/webhooks/{id}/deliveries', { params: hookId, headers: asAdmin })).data?.items.length, 1)
  assert.equal((await client.DELETE('/v3/webhooks/{id}', { params: hookId, headers: asAdmin })).response.status, 204)
  assert.equal((await client.GET('/v3/webhooks/{id}', { params: hookId, headers: asAdmin })).response.status, 404)

  // stock: locations, a movement (409 insufficient-stock naming what is available), levels, the ledger, untracking
  assert.deepEqual((await client.GET('/v3/locations')).data?.items.map((l) => l.name), ['main'])
  assert.equal((await client.POST('/v3/locations', { headers: asAdmin, body: { name: 'shop' } })).response.status, 201)
  const potted = (await client.POST('/v3/plant', { headers: asAdmin, body: { name: 'Potted fern', lowStockAt: 1 } })).data as Plant
  const pottedId = { path: { id: potted.id } }
  const received = await client.POST('/v3/plant/{id}/stock/movements', { params: pottedId, headers: asAdmin, body: { delta: 2, reason: 'received', location: 'shop' } })
  assert.deepEqual([received.response.status, received.data?.stock], [201, { onHand: 2, reserved: 0, available: 2 }])
  const oversold = await client.POST('/v3/plant/{id}/stock/movements', { params: pottedId, headers: asAdmin, body: { delta: -3, reason: 'sale', location: 'shop' } })
  assert.deepEqual([oversold.response.status, oversold.error?.available], [409, 2])
  assert.equal((await client.GET('/v3/plant/{id}/stock', { params: pottedId })).data?.items[0].onHand, 2)
  assert.equal((await client.GET('/v3/plant/{id}/stock/movements', { params: pottedId })).data?.items.length, 1)
  assert.equal((await client.DELETE('/v3/plant/{id}/stock', { params: pottedId, headers: asAdmin })).response.status, 409)
  await client.POST('/v3/plant/{id}/stock/movements', { params: pottedId, headers: asAdmin, body: { set: 0, expected: 2, reason: 'count', location: 'shop' } })
  assert.equal((await client.DELETE('/v3/plant/{id}/stock', { params: pottedId, headers: asAdmin })).data?.stock, null)
  assert.equal((await client.DELETE('/v3/locations/{name}', { params: { path: { name: 'shop' } }, headers: asAdmin })).response.status, 204)

  // reservations: hold (409 naming every short line), read, commit into sales, release, 410 once gone
  const stocked = (await client.POST('/v3/plant', { headers: asAdmin, body: { name: 'Reserved fern' } })).data as Plant
  await client.POST('/v3/plant/{id}/stock/movements', { params: { path: { id: stocked.id } }, headers: asAdmin, body: { delta: 3, reason: 'received' } })
  const shortLines = await client.POST('/v3/reservations', { headers: asAdmin, body: { lines: [{ plant: stocked.id, quantity: 2 }, { plant: stocked.id, quantity: 2 }], ttlSeconds: 60 } })
  assert.deepEqual([shortLines.response.status, shortLines.error?.lines?.map((l) => [l.path, l.elsewhere])], [409, [['/lines/0', []], ['/lines/1', []]]])
  const held = await client.POST('/v3/reservations', { headers: asAdmin, body: { lines: [{ plant: stocked.id, quantity: 2 }], ttlSeconds: 60 } })
  assert.equal(held.response.status, 201)
  assert.deepEqual(held.data?.plants, [{ id: stocked.id, version: 3, stock: { onHand: 3, reserved: 2, available: 1 } }])
  const heldId = { path: { id: held.data!.id } }
  assert.equal((await client.GET('/v3/reservations/{id}', { params: heldId, headers: asAdmin })).data?.state, 'held')
  const sold = await client.POST('/v3/reservations/{id}/commit', { params: heldId, headers: asAdmin })
  assert.deepEqual(sold.data?.plants[0].stock, { onHand: 1, reserved: 0, available: 1 })
  const again = await client.POST('/v3/reservations/{id}/commit', { params: heldId, headers: asAdmin })
  assert.deepEqual([again.response.status, again.error?.state], [410, 'committed'])
  const other = await client.POST('/v3/reservations', { headers: asAdmin, body: { lines: [{ plant: stocked.id, quantity: 1 }], ttlSeconds: 60 } })
  assert.equal((await client.DELETE('/v3/reservations/{id}', { params: { path: { id: other.data!.id } }, headers: asAdmin })).response.status, 204)

  // Every operation of the document went through the client: a new route must be added here.
  const doc = await servedDocument()
  const documented = Object.entries(doc.paths ?? {}).flatMap(([path, item]) =>
    Object.keys(item).filter((m) => METHODS.includes(m)).map((m) => `${m.toUpperCase()} ${path}`))
  assert.deepEqual([...exercised].sort(), documented.sort())
})
