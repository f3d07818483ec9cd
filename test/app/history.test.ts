import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { InjectOptions } from 'fastify'
import { createKey } from '../../src/keys/manage.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { picture } from '../helpers/pictures.js'

// A plant's history and its revert: every write records a version in the same
// transaction (its fields' before and after), readable newest first in pages, for a plant in the
// trash too; a revert gives a version's fields back as a new version.

const DAY = 86_400_000
const AT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

type Entry = { version: number, at: string, actor: string, kind: string, changes: Record<string, [unknown, unknown]> }

/** Every page of a plant's history, `limit` a page, following nextCursor. */
async function historyOf (app: TestApp, id: number, limit = 100): Promise<Entry[]> {
  const entries: Entry[] = []
  let cursor: string | null = null
  do {
    const res = await app.request({ method: 'GET', url: `/v3/plant/${id}/history?limit=${limit}${cursor === null ? '' : `&cursor=${cursor}`}` })
    assert.equal(res.statusCode, 200, res.body)
    entries.push(...res.json().items)
    cursor = res.json().nextCursor
  } while (cursor !== null)
  for (const e of entries) assert.match(e.at, AT)
  return entries
}

const brief = (entries: Entry[]): Array<[number, string, Entry['changes']]> => entries.map((e) => [e.version, e.kind, e.changes])

async function addPhoto (app: TestApp, id: number, body: Buffer): Promise<Record<string, any>> {
  const res = await app.request({ method: 'POST', url: `/v3/plant/${id}/photos`, payload: body, headers: { 'content-type': 'image/png' } })
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

const purge = async (store: PlantStore): Promise<void> => { await (store as unknown as { purge (): Promise<void> | void }).purge() }

for (const engine of ENGINES) {
  describe(`history and revert (${engine.name})`, { skip: engine.skip }, () => {
    test('every kind of write records its version with the fields it changed, newest first, in pages', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Monstera', tags: ['large'], price: '12.5' })
      const id = plant.id
      assert.equal((await app.request({ method: 'PUT', url: '/v3/plant', payload: { id, name: 'Monstera deliciosa', tags: ['large'], price: '12.50', category: 'indoor' } })).statusCode, 200)
      assert.equal((await app.request({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { status: 'sold', tags: ['large', 'rare'] } })).statusCode, 200)
      // {} changes nothing: no version.
      assert.equal((await app.request({ method: 'PATCH', url: `/v3/plant/${id}`, payload: {} })).statusCode, 200)
      const first = await addPhoto(app, id, await picture('png', 1, 60))
      const second = await addPhoto(app, id, await picture('png', 2, 60))
      assert.equal((await app.request({ method: 'PUT', url: `/v3/plant/${id}/photos/order`, payload: { order: [second.id, first.id] } })).statusCode, 200)
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${id}/photos/${first.id}` })).statusCode, 204)
      const batch = await app.request({ method: 'POST', url: '/v3/plant/batch', payload: { operations: [{ op: 'patch', id, patch: { price: null } }, { op: 'create', plant: { name: 'Fern', sku: 'F-1' } }] } })
      assert.equal(batch.statusCode, 200, batch.body)
      const fern = batch.json().results[1].plant
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${id}` })).statusCode, 204)
      assert.equal((await app.request({ method: 'POST', url: `/v3/trash/${id}/restore` })).statusCode, 200)

      const entries = await historyOf(app, id)
      assert.deepEqual(brief(entries), [
        [10, 'restored', {}],
        [9, 'deleted', {}],
        [8, 'updated', { price: ['12.50', null] }],
        [7, 'updated', { photos: [[second.id, first.id], [second.id]] }],
        [6, 'updated', { photos: [[first.id, second.id], [second.id, first.id]] }],
        [5, 'updated', { photos: [[first.id], [first.id, second.id]] }],
        [4, 'updated', { photos: [[], [first.id]] }],
        [3, 'updated', { tags: [['large'], ['large', 'rare']], status: ['available', 'sold'] }],
        [2, 'updated', { name: ['Monstera', 'Monstera deliciosa'], category: [null, 'indoor'] }],
        [1, 'created', { name: [null, 'Monstera'], tags: [null, ['large']], status: [null, 'available'], price: [null, '12.50'] }]
      ])
      assert.ok(entries.every((e) => e.actor === 'anonymous'))
      // Pages of 3 with the cursor: the same versions, in the same order.
      assert.deepEqual(await historyOf(app, id, 3), entries)
      assert.deepEqual(brief(await historyOf(app, fern.id)), [[1, 'created', { name: [null, 'Fern'], status: [null, 'available'], sku: [null, 'F-1'] }]])
      // Each version's `at` is its change's in the feed, whose kinds are the feed's own (a restore is `created` there).
      const feed = (await app.request({ method: 'GET', url: '/v3/plant/changes?after=0&limit=1000' })).json().items.filter((c: any) => c.id === id)
      const feedKind = (kind: string): string => ({ restored: 'created', reverted: 'updated' })[kind] ?? kind
      assert.deepEqual(feed.map((c: any) => [c.version, c.kind, c.at]).reverse(), entries.map((e) => [e.version, feedKind(e.kind), e.at]))
    })

    test('the actor is the key that made the change; history needs read, revert write', async (t) => {
      const app = await build(t, engine, { apiKeys: ['env-admin-key-0123456789'] })
      const till = (await createKey(app.app.store.keys, 'till-3', 'sell', null, Date.now())).secret
      const staff = (await createKey(app.app.store.keys, 'staff-1', 'write', null, Date.now())).secret
      const as = (secret: string): Record<string, string> => ({ authorization: `Bearer ${secret}` })
      const plant = (await app.request({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' }, headers: as(staff) })).json()
      assert.equal((await app.request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'sold' }, headers: as(till) })).statusCode, 200)
      assert.equal((await app.request({ method: 'POST', url: `/v3/plant/${plant.id}/revert`, payload: { version: 1, status: true }, headers: as(till) })).statusCode, 403)
      assert.equal((await app.request({ method: 'POST', url: `/v3/plant/${plant.id}/revert`, payload: { version: 1, status: true }, headers: as(staff) })).statusCode, 200)
      const entries = await historyOf(app, plant.id)
      assert.deepEqual(entries.map((e) => [e.version, e.actor, e.changes]), [
        [3, 'staff-1', { status: ['sold', 'available'] }],
        [2, 'till-3', { status: ['available', 'sold'] }],
        [1, 'staff-1', { name: [null, 'Monstera'], status: [null, 'available'] }]
      ])
    })

    test('readable while the plant is in the trash; 404 for an unknown id and once purged; a bad or another plant\'s cursor is 400', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Monstera' })
      const other = await app.add({ name: 'Fern' })
      await app.request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'pending' } })
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })).statusCode, 204)
      assert.deepEqual((await historyOf(app, plant.id)).map((e) => e.kind), ['deleted', 'updated', 'created'])
      const unknown = await app.request({ method: 'GET', url: '/v3/plant/999999/history' })
      assert.equal(unknown.statusCode, 404)
      assert.match(unknown.json().type, /\/not-found$/)
      const page = (await app.request({ method: 'GET', url: `/v3/plant/${plant.id}/history?limit=1` })).json()
      const elsewhere = await app.request({ method: 'GET', url: `/v3/plant/${other.id}/history?cursor=${page.nextCursor}` })
      assert.equal(elsewhere.statusCode, 400)
      assert.deepEqual(elsewhere.json().errors, [{ path: '/cursor', message: 'is for another plant' }])
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/${plant.id}/history?cursor=bm9wZQ` })).statusCode, 400)
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/${plant.id}/history?limit=0` })).statusCode, 400)
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/trash/${plant.id}` })).statusCode, 204)
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/${plant.id}/history` })).statusCode, 404)
      assert.equal((await historyOf(app, other.id)).length, 1, 'another plant\'s history stays')
    })

    test('revert gives back a version\'s fields (photos stay, and the status unless asked) as a new version: one updated change; the same fields change nothing', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Monstera', category: 'indoor', tags: ['large'], price: '12.50', sku: 'MON-1', description: 'by the window' })
      const id = plant.id
      await app.request({ method: 'PUT', url: '/v3/plant', payload: { id, name: 'Swiss cheese plant', tags: ['rare'], status: 'pending', sku: 'MON-2' } })
      const photo = await addPhoto(app, id, await picture('png', 3, 60))
      await app.request({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { status: 'sold' } })
      const head = Number((await app.request({ method: 'GET', url: `/v3/plant/${id}` })).headers['feed-position'])

      const res = await app.request({ method: 'POST', url: `/v3/plant/${id}/revert`, payload: { version: 1 }, headers: { 'if-match': `"${id}.4"` } })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.headers.etag, `"${id}.5"`)
      assert.equal(res.headers.location, `/v3/plant/${id}`)
      const reverted = res.json() as Record<string, unknown>
      // The plant was sold meanwhile: that stays so (a sale happened in the world).
      assert.deepEqual({ ...reverted, updatedAt: undefined }, { ...plant, status: 'sold', photos: [photo], updatedAt: undefined, version: 5 })
      assert.deepEqual((await app.request({ method: 'GET', url: `/v3/plant/${id}` })).json(), reverted)
      const changes = (await app.request({ method: 'GET', url: `/v3/plant/changes?after=${head}` })).json().items
      assert.deepEqual(changes.map((c: any) => [c.kind, c.id, c.version, c.actor]), [['updated', id, 5, 'anonymous']])
      assert.deepEqual(changes[0].plant, reverted)
      // The feed says updated; the history says what it was.
      assert.deepEqual((await historyOf(app, id)).map((e) => e.kind), ['reverted', 'updated', 'updated', 'updated', 'created'])
      assert.deepEqual((await historyOf(app, id))[0].changes, {
        name: ['Swiss cheese plant', 'Monstera'],
        category: [null, 'indoor'],
        tags: [['rare'], ['large']],
        description: [null, 'by the window'],
        price: [null, '12.50'],
        sku: ['MON-2', 'MON-1']
      })
      // The SKU a revert gives back is free again, and searches follow the fields.
      assert.equal((await app.request({ method: 'GET', url: '/v3/plant?sku=mon-1' })).json().items[0]?.id, id)
      assert.equal((await app.request({ method: 'GET', url: '/v3/plant?q=swiss' })).json().items.length, 0)

      // A revert to the fields the plant has (version 5's: now) changes nothing: no version, no change.
      const same = await app.request({ method: 'POST', url: `/v3/plant/${id}/revert`, payload: { version: 5 } })
      assert.equal(same.statusCode, 200)
      assert.equal(same.headers.etag, `"${id}.5"`)
      assert.deepEqual(same.json(), reverted)
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/changes?after=${head}` })).json().items.length, 1)
      assert.equal((await historyOf(app, id)).length, 5)

      // Asked for, the status goes back too: only it differs now, so only it changes.
      const withStatus = await app.request({ method: 'POST', url: `/v3/plant/${id}/revert`, payload: { version: 1, status: true } })
      assert.equal(withStatus.statusCode, 200, withStatus.body)
      assert.equal(withStatus.headers.etag, `"${id}.6"`)
      assert.deepEqual({ ...(withStatus.json() as Record<string, unknown>), updatedAt: undefined }, { ...reverted, status: 'available', updatedAt: undefined, version: 6 })
      assert.deepEqual((await historyOf(app, id))[0].changes, { status: ['sold', 'available'] })
      // false is the same as leaving it out: back to version 4's fields, the status kept.
      const without = await app.request({ method: 'POST', url: `/v3/plant/${id}/revert`, payload: { version: 4, status: false } })
      assert.equal(without.json().status, 'available')
      assert.equal(without.json().name, 'Swiss cheese plant')
    })

    test('revert refusals: unknown plant 404, version not kept 404 version-not-kept, stale If-Match 412 with the plant, SKU taken 409, a plant in the trash 404', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Monstera', sku: 'MON-1' })
      const id = plant.id
      await app.request({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { sku: 'MON-2' } })
      const revert = (body: unknown, headers: Record<string, string> = {}) => app.request({ method: 'POST', url: `/v3/plant/${id}/revert`, payload: body as object, headers })

      assert.equal((await app.request({ method: 'POST', url: '/v3/plant/999999/revert', payload: { version: 1 } })).statusCode, 404)
      // A version the plant never reached is said to be that, not blamed on the retention (this one is at version 2).
      for (const version of [3, 1000]) {
        const notKept = await revert({ version })
        assert.equal(notKept.statusCode, 404)
        assert.match(notKept.json().type, /\/version-not-kept$/)
        assert.equal(notKept.json().detail, `plant ${id} has no version ${version}; its current version is 2`)
      }
      const stale = await revert({ version: 1 }, { 'if-match': `"${id}.1"` })
      assert.equal(stale.statusCode, 412)
      assert.equal(stale.headers.etag, `"${id}.2"`)
      assert.equal(stale.json().current.sku, 'MON-2')
      for (const body of [{}, { version: 0 }, { version: 1.5 }, { version: 1, extra: true }]) {
        assert.equal((await revert(body)).statusCode, 400, JSON.stringify(body))
      }
      // A member of a plant sent along is not a plant's read-only field here: a revert takes only version and status.
      for (const member of ['photos', 'createdAt', 'extra']) {
        const res = await revert({ version: 1, [member]: true })
        assert.deepEqual([res.json().detail, res.json().errors], [`/${member} is not a known field (a revert takes only version and status)`, [{ path: `/${member}`, message: 'is not a known field (a revert takes only version and status)' }]])
      }
      await app.add({ name: 'Usurper', sku: 'mon-1' })
      const taken = await revert({ version: 1 })
      assert.equal(taken.statusCode, 409)
      assert.match(taken.json().type, /\/sku-taken$/)
      assert.equal((await app.request({ method: 'GET', url: `/v3/plant/${id}` })).json().sku, 'MON-2', 'nothing changed')
      assert.equal((await historyOf(app, id)).length, 2)
      await app.request({ method: 'DELETE', url: `/v3/plant/${id}` })
      assert.equal((await revert({ version: 1 })).statusCode, 404)
    })

    test('two reverts, or a revert and a PUT, sent with the same ETag at once: exactly one wins, the other is 412', async (t) => {
      const app = await build(t, engine)
      for (let round = 0; round < 6; round++) {
        const plant = await app.add({ name: 'Monstera', status: 'available' })
        const id = plant.id
        await app.request({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { name: 'Renamed', status: 'pending' } })
        await app.request({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { status: 'sold', category: 'indoor' } })
        const etag = `"${id}.3"`
        const other = round % 2 === 0
          ? app.request({ method: 'POST', url: `/v3/plant/${id}/revert`, payload: { version: 2 }, headers: { 'if-match': etag } })
          : app.request({ method: 'PUT', url: '/v3/plant', payload: { id, name: 'Put' }, headers: { 'if-match': etag } })
        const results = await Promise.all([app.request({ method: 'POST', url: `/v3/plant/${id}/revert`, payload: { version: 1 }, headers: { 'if-match': etag } }), other])
        assert.deepEqual(results.map((r) => r.statusCode).sort(), [200, 412], results.map((r) => r.body).join('\n'))
        const winner = results.find((r) => r.statusCode === 200)!
        const now = await app.request({ method: 'GET', url: `/v3/plant/${id}` })
        assert.equal(now.headers.etag, `"${id}.4"`)
        assert.deepEqual(now.json(), winner.json())
        assert.equal(results.find((r) => r.statusCode === 412)!.json().current.name, winner.json().name)
        assert.deepEqual((await historyOf(app, id)).map((e) => e.version), [4, 3, 2, 1])
      }
    })

    test('versions older than HISTORY_RETENTION_DAYS are purged by the periodic purge; a revert to one is 404', async (t) => {
      let now = Date.parse('2026-01-01T00:00:00.000Z')
      const store = await engine.open({ historyRetentionMs: 10 * DAY, now: () => now })
      const { buildApp } = await import('../../src/app.js')
      const { testConfig } = await import('../../src/config.js')
      const app = await buildApp(testConfig(), { store })
      t.after(async () => { await app.close(); await store.close() })
      const send = async (options: InjectOptions): Promise<any> => (await app.inject(options)).json()
      const plant = await send({ method: 'POST', url: '/v3/plant', payload: { name: 'v1' } })
      const kept = await send({ method: 'POST', url: '/v3/plant', payload: { name: 'kept' } })
      now += 6 * DAY
      await send({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { name: 'v2' } })
      now += 6 * DAY
      await send({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { name: 'v3' } })
      await purge(store)
      const versions = async (id: number): Promise<number[]> => (await send({ method: 'GET', url: `/v3/plant/${id}/history` })).items.map((e: Entry) => e.version)
      assert.deepEqual(await versions(plant.id), [3, 2], 'version 1 is 12 days old')
      assert.deepEqual(await versions(kept.id), [], 'a plant whose only version went is still known: an empty history')
      const gone = await app.inject({ method: 'POST', url: `/v3/plant/${plant.id}/revert`, payload: { version: 1 } })
      assert.equal(gone.statusCode, 404)
      assert.match(gone.json().type, /\/version-not-kept$/)
      assert.match(gone.json().detail, /no longer keeps that version \(older than HISTORY_RETENTION_DAYS/, 'a version dropped by the retention says so')
      const back = await app.inject({ method: 'POST', url: `/v3/plant/${plant.id}/revert`, payload: { version: 2 } })
      assert.equal(back.statusCode, 200)
      assert.equal(back.json().name, 'v2')
      now += 7 * DAY
      await purge(store)
      assert.deepEqual(await versions(plant.id), [4, 3], 'version 2 went once 13 days old')
    })
  })
}
