import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { describe, test } from 'node:test'
import { PhotoOrderInvalid } from '../../src/catalogue/errors.js'
import { FILES_PATH, type NewPhoto } from '../../src/catalogue/photo.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES, sqliteEngine } from '../helpers/engines.js'

// PUT /v3/plant/{id}/photos/order: a new order of a plant's photos, the first the cover.

/** A photo added straight through the store (its files a few bytes each): the order is what is tested, not the pictures. */
async function addPhoto (store: PlantStore, plantId: number): Promise<string> {
  const files = ['thumb', 'display', 'full'].map((variant) => {
    const bytes = randomBytes(32)
    return { name: `${createHash('sha256').update(bytes).digest('base64url')}.${variant === 'full' ? 'jpg' : 'webp'}`, bytes }
  })
  const photo: NewPhoto = {
    photo: {
      id: randomBytes(12).toString('base64url'),
      width: 10,
      height: 10,
      urls: { thumb: FILES_PATH + files[0].name, display: FILES_PATH + files[1].name, full: FILES_PATH + files[2].name }
    },
    files
  }
  await store.addPhoto(plantId, photo)
  return photo.photo.id
}

/** A plant with `n` photos; its id and the photo ids in the order added. */
async function plantWithPhotos (api: TestApp, n: number): Promise<{ id: number, photos: string[] }> {
  const { id } = await api.add({ name: 'Monstera' })
  const photos: string[] = []
  for (let i = 0; i < n; i++) photos.push(await addPhoto(api.app.store, id))
  return { id, photos }
}

const put = (api: TestApp, id: number, body: unknown, headers: Record<string, string> = {}) =>
  api.request({ method: 'PUT', url: `/v3/plant/${id}/photos/order`, payload: body as Record<string, unknown>, headers })

const ids = (record: { photos: Array<{ id: string }> }): string[] => record.photos.map((p) => p.id)

for (const engine of ENGINES) {
  describe(`ordering a plant's photos (PUT /v3/plant/{id}/photos/order) on ${engine.name}`, { skip: engine.skip }, () => {
    test('sets the order, the first the cover: a new version and ETag, one updated change in the feed, on every read', async (t) => {
      const api = await build(t, engine)
      const { id, photos } = await plantWithPhotos(api, 3)
      const before = await api.request({ method: 'GET', url: `/v3/plant/${id}` })
      const head = Number(before.headers['feed-position'])
      const order = [photos[2], photos[0], photos[1]]
      const res = await put(api, id, { order })
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(ids(res.json()), order)
      assert.equal(res.headers.etag, `"${id}.5"`) // created, three photos, the order
      assert.notEqual(res.headers.etag, before.headers.etag)
      const read = await api.request({ method: 'GET', url: `/v3/plant/${id}` })
      assert.deepEqual([ids(read.json()), read.headers.etag], [order, res.headers.etag])
      assert.deepEqual(ids((await api.request({ method: 'GET', url: '/v3/plant' })).json().items[0]), order)
      // The photos themselves are the same records, in the new order.
      assert.deepEqual(read.json().photos, order.map((photoId) => before.json().photos.find((p: { id: string }) => p.id === photoId)))
      const changes = (await api.request({ method: 'GET', url: `/v3/plant/changes?after=${head}` })).json().items
      assert.equal(changes.length, 1)
      assert.deepEqual([changes[0].kind, changes[0].id, changes[0].version, ids(changes[0].plant)], ['updated', id, 5, order])
    })

    test('the order the plant already has changes nothing (as PATCH {}): 200 with the plant as it is, the same ETag, no new version, no change in the feed', async (t) => {
      const api = await build(t, engine)
      const { id, photos } = await plantWithPhotos(api, 3)
      const before = await api.request({ method: 'GET', url: `/v3/plant/${id}` })
      const head = Number(before.headers['feed-position'])
      const same = await put(api, id, { order: photos })
      assert.equal(same.statusCode, 200, same.body)
      assert.deepEqual(same.json(), before.json())
      assert.equal(same.headers.etag, before.headers.etag)
      assert.equal(same.headers['cache-control'], 'no-store')
      // If-Match still applies: the current ETag is 200, a stale one 412.
      assert.equal((await put(api, id, { order: photos }, { 'if-match': before.headers.etag as string })).statusCode, 200)
      assert.equal((await put(api, id, { order: photos }, { 'if-match': `"${id}.1"` })).statusCode, 412)
      assert.deepEqual((await api.request({ method: 'GET', url: `/v3/plant/changes?after=${head}` })).json().items, [])
      assert.equal((await api.app.store.get(id))!.version, 4)
      // A plant without photos and the empty order: the same.
      const bare = await api.add({ name: 'Ficus' })
      const empty = await put(api, bare.id, { order: [] })
      assert.deepEqual([empty.statusCode, empty.headers.etag], [200, `"${bare.id}.1"`])
    })

    test('If-Match applies: the current ETag writes, a stale one is 412 with the plant as it is and changes nothing', async (t) => {
      const api = await build(t, engine)
      const { id, photos } = await plantWithPhotos(api, 2)
      const stale = await put(api, id, { order: [photos[1], photos[0]] }, { 'if-match': `"${id}.1"` })
      assert.equal(stale.statusCode, 412)
      assert.equal(stale.json().type, '/v3/problems/precondition-failed')
      assert.deepEqual(ids(stale.json().current), photos)
      assert.equal(stale.headers.etag, `"${id}.3"`)
      const fresh = await put(api, id, { order: [photos[1], photos[0]] }, { 'if-match': `"${id}.3"` })
      assert.equal(fresh.statusCode, 200, fresh.body)
      assert.equal(fresh.headers.etag, `"${id}.4"`)
    })

    test('an order that is not every photo once is 400 naming the fault, and changes nothing', async (t) => {
      const api = await build(t, engine)
      const { id, photos } = await plantWithPhotos(api, 3)
      const cases: Array<[unknown, string, string]> = [
        [{ order: [photos[0], photos[1]] }, '/order', `"${photos[2]}" is missing`],
        [{ order: [photos[0], photos[1], photos[2], photos[0]] }, '/order/3', `"${photos[0]}" is given more than once`],
        [{ order: [photos[0], 'AAAAAAAAAAAAAAAA', photos[2]] }, '/order/1', '"AAAAAAAAAAAAAAAA" is not a photo of this plant'],
        [{ order: [] }, '/order', `"${photos[0]}" is missing`],
        [{ order: photos, cover: photos[0] }, '', 'cover'],
        [{}, '', 'order'],
        [{ order: photos.join(',') }, '/order', '']
      ]
      for (const [body, path, words] of cases) {
        const res = await put(api, id, body)
        assert.equal(res.statusCode, 400, JSON.stringify(body))
        assert.equal(res.json().type, '/v3/problems/invalid-input', JSON.stringify(body))
        assert.ok(res.json().detail.includes(words), `${JSON.stringify(body)}: ${res.json().detail}`)
        if (path !== '') assert.equal(res.json().errors[0].path, path, JSON.stringify(body))
      }
      const read = await api.request({ method: 'GET', url: `/v3/plant/${id}` })
      assert.deepEqual([ids(read.json()), read.headers.etag], [photos, `"${id}.4"`])
      // A plant without photos takes the empty order (and only that).
      const bare = await api.add({ name: 'Ficus' })
      assert.equal((await put(api, bare.id, { order: [] })).statusCode, 200)
      assert.equal((await put(api, bare.id, { order: [photos[0]] })).statusCode, 400)
    })

    test('404 for an unknown plant, 400 for a bad plant id; other methods on the path are 405', async (t) => {
      const api = await build(t, engine)
      const unknown = await put(api, 999, { order: [] })
      assert.deepEqual([unknown.statusCode, unknown.json().type], [404, '/v3/problems/not-found'])
      const bad = await api.request({ method: 'PUT', url: '/v3/plant/1e3/photos/order', payload: { order: [] } })
      assert.deepEqual([bad.statusCode, bad.json().type], [400, '/v3/problems/invalid-id'])
      const { id } = await api.add({ name: 'Monstera' })
      for (const method of ['GET', 'POST', 'DELETE', 'PATCH'] as const) {
        const res = await api.request({ method, url: `/v3/plant/${id}/photos/order`, payload: {} })
        assert.equal(res.statusCode, 405, method)
        assert.equal(res.headers.allow, 'PUT', method)
      }
    })

    test('the write checks the order against the photos as they are then: one added since the route read the plant is 400, nothing changes', async (t) => {
      const api = await build(t, engine)
      const store = api.app.store
      const { id, photos } = await plantWithPhotos(api, 2)
      // Another writer adds a photo between the route's read and its write.
      const get = store.get.bind(store)
      store.get = async (plantId) => {
        const plant = await get(plantId)
        await addPhoto(store, plantId)
        store.get = get
        return plant
      }
      const res = await put(api, id, { order: [photos[1], photos[0]] })
      assert.equal(res.statusCode, 400)
      assert.match(res.json().detail, /changed meanwhile/)
      const plant = await store.get(id)
      assert.deepEqual([plant!.photos.slice(0, 2).map((p) => p.id), plant!.photos.length, plant!.version], [photos, 3, 4])
      await assert.rejects(store.orderPhotos(id, [photos[1], photos[0]]), PhotoOrderInvalid)
    })
  })
}

describe('ordering photos needs a key where keys are configured', () => {
  test('without a key 401 and nothing changes; with one 200', async (t) => {
    const api = await build(t, sqliteEngine, { apiKeys: ['order-key-0123456789'] })
    const auth = { authorization: 'Bearer order-key-0123456789' }
    const created = await api.request({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' }, headers: auth })
    const id = created.json().id
    const photos = [await addPhoto(api.app.store, id), await addPhoto(api.app.store, id)]
    const refused = await put(api, id, { order: [photos[1], photos[0]] })
    assert.equal(refused.statusCode, 401)
    assert.deepEqual(ids((await api.request({ method: 'GET', url: `/v3/plant/${id}` })).json()), photos)
    assert.equal((await put(api, id, { order: [photos[1], photos[0]] }, auth)).statusCode, 200)
    const doc = (await api.request({ method: 'GET', url: '/v3/openapi.json' })).json()
    assert.ok(doc.paths['/v3/plant/{id}/photos/order'].put.security.length > 0)
  })
})
