import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { seedView } from '../helpers/records.js'

const mergePatch = { 'content-type': 'application/merge-patch+json' }

for (const engine of ENGINES) {
  describe(`patch-plant (PATCH /v3/plant/{id}) on ${engine.name}`, { skip: engine.skip }, () => {
    test('a merge patch changes only the members sent; category null removes it; tags replace the whole list', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Monstera', category: 'indoor', tags: ['large', 'green'], status: 'available' })
      const sold = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, headers: mergePatch, payload: JSON.stringify({ status: 'sold' }) })
      assert.equal(sold.statusCode, 200, sold.body)
      assert.deepEqual(seedView(sold.json()), seedView({ ...plant, status: 'sold' }))
      assert.equal(sold.headers.location, `/v3/plant/${plant.id}`)
      const read = await request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      assert.equal(read.headers.etag, sold.headers.etag)
      const more = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { category: null, tags: ['small'], name: 'Monstera adansonii' } })
      assert.equal(more.statusCode, 200, more.body)
      assert.deepEqual(seedView(more.json()), { id: plant.id, name: 'Monstera adansonii', category: null, tags: ['small'], status: 'sold', photos: [] })
      // The indexes follow: the tag, the status and the name key.
      const ids = async (query: string): Promise<number[]> => (await request({ method: 'GET', url: `/v3/plant?${query}` })).json().items.map((p: { id: number }) => p.id)
      assert.deepEqual(await ids('tag=large'), [])
      assert.deepEqual(await ids('tag=small&status=sold'), [plant.id])
      assert.deepEqual(await ids('q=adans'), [plant.id])
      assert.deepEqual(await ids('q=monstera&sort=name'), [plant.id])
    })

    test('{} answers the current plant: no new version (same ETag) and no change in the feed', async (t) => {
      const { app, request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      const before = await app.store.changes(0, 100)
      const etag = (await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).headers.etag
      const res = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, headers: mergePatch, payload: '{}' })
      assert.equal(res.statusCode, 200, res.body)
      assert.deepEqual(res.json(), plant)
      assert.equal(res.headers.etag, etag)
      assert.deepEqual(await app.store.changes(0, 100), before)
      // {} still checks If-Match: a stale one is 412.
      const stale = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, headers: { ...mergePatch, 'if-match': '"0.0"' }, payload: '{}' })
      assert.equal(stale.statusCode, 412, stale.body)
      assert.deepEqual(stale.json().current, plant, 'the 412 carries the plant as it is now')
      assert.equal(stale.headers.etag, etag, 'and its ETag')
    })

    test('members equal to what the plant holds are still a write: a new version and one updated change (only {} and an unchanged photo order are not)', async (t) => {
      const { app, request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern', status: 'sold' })
      const before = (await app.store.changes(0, 100)).items.length
      const res = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, headers: mergePatch, payload: '{"status":"sold","name":"Fern"}' })
      assert.equal(res.statusCode, 200, res.body)
      assert.equal(res.headers.etag, `"${plant.id}.2"`)
      assert.equal((await app.store.changes(0, 100)).items.length, before + 1)
    })

    test('one updated change in the feed per patch, with the plant after it', async (t) => {
      const { app, request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern', tags: ['a'] })
      await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { tags: ['b'] } })
      const { items } = await app.store.changes(0, 100)
      assert.deepEqual(items.map((c) => [c.kind, c.version]), [['created', 1], ['updated', 2]])
      assert.deepEqual(seedView(items[1].plant!), seedView({ ...plant, tags: ['b'] }))
    })

    test('checks in order: path id 400 invalid-id, then body 400 invalid-input (with its field path), then 404, then 412', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      const patch = async (id: string, payload: string, headers: Record<string, string> = {}): Promise<[number, string, string[]]> => {
        const res = await request({ method: 'PATCH', url: `/v3/plant/${id}`, headers: { ...mergePatch, ...headers }, payload })
        const body = res.json()
        return [res.statusCode, String(body.type).split('/').pop()!, (body.errors ?? []).map((e: { path: string }) => e.path)]
      }
      // A bad path id wins over a bad body.
      assert.deepEqual(await patch('abc', '{"name":null}'), [400, 'invalid-id', ['/id']])
      assert.deepEqual(await patch('0', 'not json'), [400, 'invalid-id', ['/id']])
      // A bad body wins over an unknown plant; each refusal names its member.
      const unknown = '999999'
      assert.deepEqual(await patch(unknown, 'not json'), [400, 'invalid-input', []])
      assert.deepEqual(await patch(unknown, '[]'), [400, 'invalid-input', ['']])
      for (const [body, path] of [
        ['{"name":null}', '/name'], ['{"tags":null}', '/tags'], ['{"status":null}', '/status'], ['{"id":1}', '/id'],
        ['{"staus":"sold"}', '/staus'], ['{"name":""}', '/name'], ['{"tags":["a","a"]}', '/tags'], ['{"status":"gone"}', '/status'],
        ['{"category":""}', '/category'], [`{"tags":["${'x'.repeat(51)}"]}`, '/tags/0']
      ]) {
        const [status, type, paths] = await patch(unknown, body)
        assert.equal(status, 400, body)
        assert.equal(type, 'invalid-input', body)
        assert.ok(paths.includes(path), `${body}: ${JSON.stringify(paths)}`)
      }
      // Then the plant, then If-Match.
      assert.deepEqual(await patch(unknown, '{"status":"sold"}', { 'if-match': '"0.0"' }), [404, 'not-found', []])
      assert.deepEqual(await patch(String(plant.id), '{"status":"sold"}', { 'if-match': '"0.0"' }), [412, 'precondition-failed', []])
      // Nothing of it changed the plant.
      assert.deepEqual((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json(), plant)
    })

    test('If-Match with the current ETag applies; then the old one is stale', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      const etag = String((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).headers.etag)
      const ok = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, headers: { 'if-match': etag }, payload: { status: 'pending' } })
      assert.equal(ok.statusCode, 200, ok.body)
      const again = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, headers: { 'if-match': etag }, payload: { status: 'sold' } })
      assert.equal(again.statusCode, 412)
    })

    test('a body sent as text/plain is refused; application/json is accepted; merge-patch is not accepted by POST', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      const text = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, headers: { 'content-type': 'text/plain' }, payload: '{"status":"sold"}' })
      assert.equal(text.statusCode, 400, text.body)
      const json = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, headers: { 'content-type': 'application/json; charset=utf-8' }, payload: '{"status":"sold"}' })
      assert.equal(json.statusCode, 200, json.body)
      const post = await request({ method: 'POST', url: '/v3/plant', headers: mergePatch, payload: '{"name":"x"}' })
      assert.equal(post.statusCode, 405, post.body)
    })

    test('patches of different fields sent at the same time all keep their change (merged in the write)', async (t) => {
      const { request, add } = await build(t, engine)
      const plants = await Promise.all(Array.from({ length: 5 }, (_, i) => add({ name: `P${i}`, tags: ['t'] })))
      // Sent together, they share group commits: each merge sees the row as the previous one left it.
      const results = await Promise.all(plants.flatMap((p) => [
        request({ method: 'PATCH', url: `/v3/plant/${p.id}`, payload: { status: 'sold' } }),
        request({ method: 'PATCH', url: `/v3/plant/${p.id}`, payload: { category: 'cat' } }),
        request({ method: 'PATCH', url: `/v3/plant/${p.id}`, payload: { tags: ['u', 'v'] } }),
        request({ method: 'PATCH', url: `/v3/plant/${p.id}`, payload: { name: `renamed ${p.id}` } })
      ]))
      assert.ok(results.every((r) => r.statusCode === 200))
      for (const p of plants) {
        const read = (await request({ method: 'GET', url: `/v3/plant/${p.id}` })).json()
        assert.deepEqual(seedView(read), { id: p.id, name: `renamed ${p.id}`, category: 'cat', tags: ['u', 'v'], status: 'sold', photos: [] })
      }
    })

    test('with API keys configured, PATCH needs one (401 without), as PUT does', async (t) => {
      const { request } = await build(t, engine, { apiKeys: ['k1'] })
      const auth = { authorization: 'Bearer k1' }
      const plant = (await request({ method: 'POST', url: '/v3/plant', headers: auth, payload: { name: 'Fern' } })).json()
      const res = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'sold' } })
      assert.equal(res.statusCode, 401, res.body)
      assert.ok(res.headers['www-authenticate'])
      const ok = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, headers: { api_key: 'k1' }, payload: { status: 'sold' } })
      assert.equal(ok.statusCode, 200, ok.body)
    })
  })
}
