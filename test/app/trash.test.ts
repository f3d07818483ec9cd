import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { picture } from '../helpers/pictures.js'

// The trash: DELETE moves a plant there; it is then as deleted for every other
// operation; it can be listed, restored (same id, fields, photos; a new version) or purged.

const DAY = 86_400_000

async function addPhoto (app: TestApp, id: number, body: Buffer): Promise<Record<string, any>> {
  const res = await app.request({ method: 'POST', url: `/v3/plant/${id}/photos`, payload: body, headers: { 'content-type': 'image/png' } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

const changesAfter = async (app: TestApp, after: number): Promise<Array<Record<string, any>>> =>
  (await app.request({ method: 'GET', url: `/v3/plant/changes?after=${after}` })).json().items

for (const engine of ENGINES) {
  describe(`the trash (${engine.name})`, { skip: engine.skip }, () => {
    test('DELETE moves a plant to the trash: 404 everywhere else, listed with when; restore brings back its id, fields and photos as a new version', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Monstera', category: 'indoor', tags: ['large'], price: '12.50', sku: 'MON-1', description: 'by the window' })
      const photo = await addPhoto(app, plant.id, await picture('png', 3, 300))
      const before = (await app.request({ method: 'GET', url: `/v3/plant/${plant.id}` }))
      const head = Number(before.headers['feed-position'])
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })).statusCode, 204)

      // As deleted for every other operation.
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/${plant.id}` })).statusCode, 404)
      assert.equal((await app.request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'sold' } })).statusCode, 404)
      assert.equal((await app.request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'x' } })).statusCode, 404)
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })).statusCode, 404)
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/${plant.id}/photos/${photo.id}` })).statusCode, 404)
      assert.equal((await app.request({ method: 'GET', url: '/v3/plant?sku=mon-1' })).json().items.length, 0)
      assert.equal((await app.request({ method: 'GET', url: '/v3/plant?q=monstera' })).json().items.length, 0)
      assert.deepEqual((await app.request({ method: 'GET', url: '/v3/store/inventory' })).json(), { available: 0, pending: 0, sold: 0, units: { onHand: 0, reserved: 0, available: 0 } })
      const deleted = await changesAfter(app, head)
      assert.deepEqual(deleted.map((c) => [c.kind, c.id, c.plant]), [['deleted', plant.id, null]])
      // The photo's bytes stay: the trash names them.
      assert.equal((await app.request({ method: 'GET', url: photo.urls.thumb })).statusCode, 200)

      const listed = await app.request({ method: 'GET', url: '/v3/trash' })
      assert.equal(listed.statusCode, 200)
      const [entry] = listed.json().items
      assert.equal(listed.json().items.length, 1)
      assert.equal(entry.id, plant.id)
      assert.equal(entry.version, deleted[0].version)
      assert.equal(entry.trashedBy, 'anonymous')
      assert.match(entry.trashedAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      // The record as it was deleted: its last version, one below the entry's.
      assert.deepEqual(entry.plant, { ...plant, photos: [photo], updatedAt: entry.plant.updatedAt, version: entry.version - 1 })

      const restored = await app.request({ method: 'POST', url: `/v3/trash/${plant.id}/restore` })
      assert.equal(restored.statusCode, 200, restored.body)
      assert.equal(restored.headers.etag, `"${plant.id}.${entry.version + 1}"`)
      assert.equal(restored.headers.location, `/v3/plant/${plant.id}`)
      const back = restored.json()
      assert.deepEqual({ ...back, updatedAt: undefined }, { ...plant, photos: [photo], updatedAt: undefined, version: entry.version + 1 })
      const again = await app.request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      assert.equal(again.statusCode, 200)
      assert.deepEqual(again.json(), back)
      assert.equal(again.headers.etag, restored.headers.etag)
      assert.equal((await app.request({ method: 'GET', url: '/v3/plant?sku=MON-1' })).json().items[0].id, plant.id)
      assert.equal((await app.request({ method: 'GET', url: '/v3/plant?q=monst' })).json().items[0].id, plant.id)
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/${plant.id}/photos/${photo.id}` })).statusCode, 200)
      assert.deepEqual((await app.request({ method: 'GET', url: '/v3/store/inventory' })).json(), { available: 1, pending: 0, sold: 0, units: { onHand: 0, reserved: 0, available: 0 } })
      const created = (await changesAfter(app, deleted[0].seq))
      assert.deepEqual(created.map((c) => [c.kind, c.id, c.version]), [['created', plant.id, entry.version + 1]])
      assert.deepEqual(created[0].plant, back)
      assert.deepEqual((await app.request({ method: 'GET', url: '/v3/trash' })).json(), { items: [], nextCursor: null })
      // Restoring twice: it is no longer in the trash.
      const twice = await app.request({ method: 'POST', url: `/v3/trash/${plant.id}/restore` })
      assert.equal(twice.statusCode, 404)
      assert.match(twice.json().detail, /trash/)
    })

    test('the trash lists newest first, in pages with a cursor; a batch delete trashes too', async (t) => {
      const app = await build(t, engine)
      const ids: number[] = []
      for (let i = 0; i < 5; i++) ids.push((await app.add({ name: `plant ${i}` })).id)
      for (const id of ids.slice(0, 3)) assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${id}` })).statusCode, 204)
      const batch = await app.request({ method: 'POST', url: '/v3/plant/batch', payload: { operations: ids.slice(3).map((id) => ({ op: 'delete', id })) } })
      assert.equal(batch.statusCode, 200, batch.body)
      const seen: number[] = []
      let cursor: string | null = null
      do {
        const res = await app.request({ method: 'GET', url: `/v3/trash?limit=2${cursor ? `&cursor=${cursor}` : ''}` })
        assert.equal(res.statusCode, 200)
        const page = res.json()
        assert.ok(page.items.length <= 2)
        seen.push(...page.items.map((e: { id: number }) => e.id))
        cursor = page.nextCursor
      } while (cursor !== null)
      // Newest first: the times never increase down the list, and ties go by id, highest first.
      assert.deepEqual([...seen].sort((a, b) => a - b), ids)
      const all = (await app.request({ method: 'GET', url: '/v3/trash?limit=100' })).json().items
      for (let i = 1; i < all.length; i++) {
        const [a, b] = [all[i - 1], all[i]]
        assert.ok(a.trashedAt > b.trashedAt || (a.trashedAt === b.trashedAt && a.id > b.id), `${JSON.stringify(a)} before ${JSON.stringify(b)}`)
      }
      assert.deepEqual(all.map((e: { id: number }) => e.id), seen)
      const bad = await app.request({ method: 'GET', url: '/v3/trash?cursor=bm90LWEtY3Vyc29y' })
      assert.equal(bad.statusCode, 400)
      assert.equal((await app.request({ method: 'GET', url: '/v3/trash?limit=101' })).statusCode, 400)
    })

    test('restore with If-Match: the entry\'s ETag restores once; racing restores give one 200 and one 404; a stale one is 412', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Fern' })
      await app.request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })
      const entry = (await app.request({ method: 'GET', url: '/v3/trash' })).json().items[0]
      const etag = `"${plant.id}.${entry.version}"`
      assert.equal((await app.request({ method: 'POST', url: `/v3/trash/${plant.id}/restore`, headers: { 'if-match': `"${plant.id}.1"` } })).statusCode, 412)
      const racing = await Promise.all([1, 2, 3].map(() => app.request({ method: 'POST', url: `/v3/trash/${plant.id}/restore`, headers: { 'if-match': etag } })))
      assert.deepEqual(racing.map((r) => r.statusCode).sort(), [200, 404, 404])
      // Deleted again: the entry has a new version, so the ETag of the first entry is stale.
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })).statusCode, 204)
      const stale = await app.request({ method: 'POST', url: `/v3/trash/${plant.id}/restore`, headers: { 'if-match': etag } })
      assert.equal(stale.statusCode, 412)
      const now = (await app.request({ method: 'GET', url: '/v3/trash' })).json().items[0]
      assert.ok(now.version > entry.version)
      // Like a plant's 412, as far as an entry allows: its current ETag in the detail and the ETag header.
      const entryEtag = `"${plant.id}.${now.version}"`
      assert.equal(stale.headers.etag, entryEtag)
      assert.equal(stale.json().detail, `If-Match does not match the trash entry's current ETag, ${entryEtag}`)
      const bare = await app.request({ method: 'POST', url: `/v3/trash/${plant.id}/restore`, headers: { 'if-match': `${plant.id}.${now.version}` } })
      assert.equal(bare.statusCode, 412)
      assert.equal(bare.json().detail, `If-Match ${plant.id}.${now.version} is not an ETag: an ETag is in double quotes, as the ETag header gives it (If-Match: ${entryEtag}); the trash entry's current ETag is ${entryEtag}`)
      assert.equal((await app.request({ method: 'POST', url: `/v3/trash/${plant.id}/restore`, headers: { 'if-match': `"${plant.id}.${now.version}"` } })).statusCode, 200)
    })

    test('a restore, a purge and every other operation without a body refuse one (400 invalid-input, nothing done); an empty body or none is fine', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Cactus', sku: 'CAC-2' })
      await app.request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })
      const refusedBody = async (method: 'POST' | 'DELETE', url: string, payload: string, contentType = 'application/json') => {
        const res = await app.request({ method, url, payload, headers: { 'content-type': contentType } })
        assert.equal(res.statusCode, 400, `${method} ${url} ${payload}: ${res.body}`)
        assert.deepEqual([res.json().type, res.json().detail], ['/v3/problems/invalid-input', 'This request takes no body: send it without one (an empty body is fine)'])
      }
      // The review's case: the SKU was kept although the body said null.
      await refusedBody('POST', `/v3/trash/${plant.id}/restore`, '{"sku":null}')
      await refusedBody('POST', `/v3/trash/${plant.id}/restore`, 'sku=', 'text/plain')
      await refusedBody('DELETE', `/v3/trash/${plant.id}`, '{}')
      assert.equal((await app.request({ method: 'GET', url: '/v3/trash' })).json().items.length, 1, 'still in the trash')
      const live = await app.add({ name: 'Fern' })
      await refusedBody('DELETE', `/v3/plant/${live.id}`, '{"force":true}')
      await refusedBody('DELETE', `/v3/plant/${live.id}/photos/abc`, '{}')
      await refusedBody('DELETE', '/v3/keys/till-1', '{}')
      await refusedBody('POST', '/v3/webhooks/1/test', '{}')
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/${live.id}` })).statusCode, 200, 'not deleted')
      // An empty body, whatever type a client library declares, is no body.
      const restored = await app.request({ method: 'POST', url: `/v3/trash/${plant.id}/restore`, payload: '', headers: { 'content-type': 'application/json' } })
      assert.equal(restored.statusCode, 200, restored.body)
      assert.equal(restored.json().sku, 'CAC-2')
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${live.id}`, payload: '', headers: { 'content-type': 'text/plain' } })).statusCode, 204)
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/trash/${live.id}` })).statusCode, 204)
      const doc = (await app.request({ method: 'GET', url: '/v3/openapi.json' })).json()
      assert.match(doc.paths['/v3/trash/{id}/restore'].post.responses['400'].description, /or a body sent \(this operation takes none\)$/)
    })

    test('a restore whose SKU another plant took meanwhile is 409 sku-taken, and the plant stays in the trash', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Cactus', sku: 'CAC-1' })
      await app.request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })
      const other = await app.add({ name: 'Other cactus', sku: 'cac-1' })
      const res = await app.request({ method: 'POST', url: `/v3/trash/${plant.id}/restore` })
      assert.equal(res.statusCode, 409, res.body)
      assert.equal(res.json().holder, other.id)
      assert.equal((await app.request({ method: 'GET', url: '/v3/trash' })).json().items.length, 1)
    })

    test('photo bytes stay while the trash names them and go when it is purged; a file another plant names stays', async (t) => {
      const app = await build(t, engine)
      const shared = await picture('png', 5, 320)
      const own = await picture('png', 6, 330)
      const kept = await app.add({ name: 'Keeps its photo' })
      const gone = await app.add({ name: 'Purged' })
      const keptPhoto = await addPhoto(app, kept.id, shared)
      await addPhoto(app, gone.id, shared)
      const ownPhoto = await addPhoto(app, gone.id, own)
      await app.request({ method: 'DELETE', url: `/v3/plant/${gone.id}` })
      for (const url of Object.values(ownPhoto.urls) as string[]) assert.equal((await app.request({ method: 'GET', url })).statusCode, 200, url)

      const purged = await app.request({ method: 'DELETE', url: `/v3/trash/${gone.id}` })
      assert.equal(purged.statusCode, 204)
      for (const url of Object.values(ownPhoto.urls) as string[]) assert.equal((await app.request({ method: 'GET', url })).statusCode, 404, url)
      for (const url of Object.values(keptPhoto.urls) as string[]) assert.equal((await app.request({ method: 'GET', url })).statusCode, 200, url)
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/trash/${gone.id}` })).statusCode, 404)
      assert.equal((await app.request({ method: 'POST', url: `/v3/trash/${gone.id}/restore` })).statusCode, 404)
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/${gone.id}` })).statusCode, 404)
    })

    test('the periodic purge takes plants trashed longer ago than the retention, with their photo bytes, and leaves the rest', async (t) => {
      let now = Date.parse('2026-01-01T00:00:00Z')
      const app = await build(t, engine, {}, { now: () => now })
      const old = await app.add({ name: 'Old' })
      const oldPhoto = await addPhoto(app, old.id, await picture('png', 7, 310))
      await app.request({ method: 'DELETE', url: `/v3/plant/${old.id}` })
      now += 20 * DAY
      const recent = await app.add({ name: 'Recent' })
      await app.request({ method: 'DELETE', url: `/v3/plant/${recent.id}` })
      const live = await app.add({ name: 'Live' })
      now += 10 * DAY + 1 // the old one is 30 days and a moment in the trash, the recent one 10 days
      await (app.app.store as unknown as { purge (): Promise<void> | void }).purge()
      assert.deepEqual((await app.request({ method: 'GET', url: '/v3/trash' })).json().items.map((e: { id: number }) => e.id), [recent.id])
      assert.equal((await app.request({ method: 'GET', url: oldPhoto.urls.full })).statusCode, 404)
      assert.equal((await app.request({ method: 'POST', url: `/v3/trash/${old.id}/restore` })).statusCode, 404)
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/${live.id}` })).statusCode, 200)
      assert.equal((await app.request({ method: 'POST', url: `/v3/trash/${recent.id}/restore` })).statusCode, 200)
    })

    test('a retention that is no whole number of milliseconds (TRASH_RETENTION_DAYS=0.0000001: 8.64 ms) still purges the trash', async (t) => {
      let now = Date.parse('2026-12-02T09:15:30.250Z')
      const app = await build(t, engine, {}, { now: () => now, trashRetentionMs: 0.0000001 * DAY, historyRetentionMs: 0.0000001 * DAY })
      const fern = await app.add({ name: 'Fern' })
      await app.request({ method: 'DELETE', url: `/v3/plant/${fern.id}` })
      now += 9
      await (app.app.store as unknown as { purge (): Promise<void> | void }).purge()
      assert.deepEqual((await app.request({ method: 'GET', url: '/v3/trash' })).json().items, [])
    })

    test('each entry says when the purge takes it: purgeAt is trashedAt plus the store\'s retention', async (t) => {
      let now = Date.parse('2026-12-02T09:15:30.250Z')
      const app = await build(t, engine, {}, { now: () => now, trashRetentionMs: 10 * DAY + 90_000 })
      const first = await app.add({ name: 'Fern' })
      await app.request({ method: 'DELETE', url: `/v3/plant/${first.id}` })
      now += 3 * DAY
      const second = await app.add({ name: 'Ivy' })
      await app.request({ method: 'DELETE', url: `/v3/plant/${second.id}` })
      const listed = (await app.request({ method: 'GET', url: '/v3/trash' })).json().items
      assert.deepEqual(listed.map((e: Record<string, string>) => [e.id, e.trashedAt, e.purgeAt]), [
        [second.id, '2026-12-05T09:15:30.250Z', '2026-12-15T09:17:00.250Z'],
        [first.id, '2026-12-02T09:15:30.250Z', '2026-12-12T09:17:00.250Z']
      ])
      // The purge keeps it until then, and takes it from then on.
      now = Date.parse('2026-12-12T09:17:00.249Z')
      await (app.app.store as unknown as { purge (): Promise<void> | void }).purge()
      assert.equal((await app.request({ method: 'GET', url: '/v3/trash' })).json().items.length, 2)
      now += 1
      await (app.app.store as unknown as { purge (): Promise<void> | void }).purge()
      assert.deepEqual((await app.request({ method: 'GET', url: '/v3/trash' })).json().items.map((e: { id: number }) => e.id), [second.id])
    })
  })
}
