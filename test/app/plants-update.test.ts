import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { seedView } from '../helpers/records.js'

const json = { 'content-type': 'application/json' }

for (const engine of ENGINES) {
  describe(`update-plant (PUT /v3/plant) on ${engine.name}`, { skip: engine.skip }, () => {
    test('PUT replaces the whole plant: omitted optional fields take their defaults', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Monstera', category: 'indoor', tags: ['large'], status: 'pending' })
      const res = await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Monstera deliciosa' } })
      assert.equal(res.statusCode, 200)
      const expected = { id: plant.id, name: 'Monstera deliciosa', category: null, tags: [], status: 'available', photos: [] }
      assert.deepEqual(seedView(res.json()), expected)
      assert.equal(res.headers.location, `/v3/plant/${plant.id}`)
      assert.deepEqual(seedView((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json()), expected)
    })

    test('the list filters follow an update: tags that go, stay and come, status and category changed or kept', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern', category: 'indoor', tags: ['gone', 'kept'], status: 'available' })
      const other = await add({ name: 'Other', category: 'indoor', tags: ['kept'], status: 'available' })
      const ids = async (query: string): Promise<number[]> =>
        (await request({ method: 'GET', url: `/v3/plant?${query}` })).json().items.map((p: { id: number }) => p.id)
      const put = async (fields: Record<string, unknown>): Promise<void> => {
        assert.equal((await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Fern', ...fields } })).statusCode, 200)
      }
      // Tags change, status and category stay.
      await put({ category: 'indoor', tags: ['kept', 'new'], status: 'available' })
      assert.deepEqual(await ids('tag=gone'), [])
      assert.deepEqual(await ids('tag=kept'), [plant.id, other.id])
      assert.deepEqual(await ids('tag=new'), [plant.id])
      assert.deepEqual(await ids('tag=kept&tag=new&status=available&category=indoor'), [plant.id])
      // Status changes alone, then category alone, then both, then neither with the same tags.
      await put({ category: 'indoor', tags: ['kept', 'new'], status: 'sold' })
      assert.deepEqual(await ids('status=available'), [other.id])
      assert.deepEqual(await ids('status=sold&category=indoor'), [plant.id])
      await put({ category: 'outdoor', tags: ['kept', 'new'], status: 'sold' })
      assert.deepEqual(await ids('category=indoor'), [other.id])
      assert.deepEqual(await ids('category=outdoor&status=sold'), [plant.id])
      await put({ category: null, tags: ['new', 'kept'], status: 'pending' })
      assert.deepEqual(await ids('category=outdoor'), [])
      assert.deepEqual(await ids('status=sold'), [])
      assert.deepEqual(await ids('status=pending&tag=new'), [plant.id])
      await put({ category: null, tags: [], status: 'pending' })
      assert.deepEqual(await ids('tag=new'), [])
      assert.deepEqual(await ids('tag=kept'), [other.id])
      assert.deepEqual(await ids('status=pending'), [plant.id])
      assert.deepEqual(seedView((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json()),
        { id: plant.id, name: 'Fern', category: null, tags: [], status: 'pending', photos: [] })
    })

    test('each update gives a new ETag; GET returns the same ETag', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add()
      const first = (await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).headers.etag
      const res = await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'B' } })
      assert.notEqual(res.headers.etag, first)
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).headers.etag, res.headers.etag)
    })

    test('order of checks 1: a body that is not a JSON object is invalid-input, even without an id', async (t) => {
      const { request } = await build(t, engine)
      for (const [payload, headers] of [['{oops', json], ['[1,2]', json], ['{"id":1,"name":"a"}', { 'content-type': 'text/plain' }], ['', json]] as const) {
        const res = await request({ method: 'PUT', url: '/v3/plant', payload, headers })
        assert.equal(res.statusCode, 400, String(payload))
        assert.match(res.json().type, /invalid-input$/)
      }
    })

    test('order of checks 2: a missing or bad id is 400 "Invalid ID supplied", before other field errors', async (t) => {
      const { request } = await build(t, engine)
      for (const id of [undefined, 0, -1, 1.5, '7', null, 2 ** 53, 1e300]) {
        const res = await request({ method: 'PUT', url: '/v3/plant', payload: { id, name: '', staus: 'x' } })
        assert.equal(res.statusCode, 400, `id ${id}`)
        const body = res.json()
        assert.match(body.type, /invalid-id$/)
        assert.equal(body.title, 'Invalid ID supplied')
        assert.ok(body.errors.every((e: { path: string }) => e.path === '/id'))
      }
    })

    test('order of checks 3: with a valid id, a broken field is 400 invalid-input, even for an unknown id', async (t) => {
      const { request } = await build(t, engine)
      const res = await request({ method: 'PUT', url: '/v3/plant', payload: { id: 999, name: 'a', tags: 'x' } })
      assert.equal(res.statusCode, 400)
      assert.match(res.json().type, /invalid-input$/)
      assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), ['/tags'])
    })

    test('order of checks 4: an unknown id is 404 "Plant not found", even with a stale If-Match', async (t) => {
      const { request } = await build(t, engine)
      const res = await request({ method: 'PUT', url: '/v3/plant', payload: { id: 424242, name: 'a' }, headers: { 'if-match': '"424242.9"' } })
      assert.equal(res.statusCode, 404)
      assert.equal(res.json().title, 'Plant not found')
    })

    test('order of checks 5: a stale If-Match answers 412 and changes nothing', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Original' })
      const etag = (await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).headers.etag as string
      await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Second' } })
      const stale = await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Lost update' }, headers: { 'if-match': etag } })
      assert.equal(stale.statusCode, 412)
      assert.match(stale.json().type, /precondition-failed$/)
      const now = await request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      assert.equal(now.json().name, 'Second')
      // The 412 saves the client a read: the plant as it is now, and its ETag to retry with.
      assert.deepEqual(stale.json().current, now.json())
      assert.equal(stale.headers.etag, now.headers.etag)
      const retry = await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Merged' }, headers: { 'if-match': stale.headers.etag as string } })
      assert.equal(retry.statusCode, 200)
    })

    test('If-Match with the current ETag, or *, or a list holding it, applies the update; a weak tag never does', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add()
      const put = async (ifMatch: string) => request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: ifMatch }, headers: { 'if-match': ifMatch } })
      let etag = (await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).headers.etag as string
      assert.equal((await put(`W/${etag}`)).statusCode, 412)
      const ok = await put(etag)
      assert.equal(ok.statusCode, 200)
      etag = ok.headers.etag as string
      assert.equal((await put(`"1.999", ${etag}`)).statusCode, 200)
      assert.equal((await put('*')).statusCode, 200)
    })

    test('20 concurrent PUTs with one If-Match give exactly one 200 and nineteen 412', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add()
      const etag = (await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).headers.etag as string
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
        request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: `writer ${i}` }, headers: { 'if-match': etag } })))
      const codes = answers.map((r) => r.statusCode).sort()
      assert.deepEqual(codes, [200, ...Array(19).fill(412)])
      const winner = answers.find((r) => r.statusCode === 200)!.json().name
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().name, winner)
    })

    test('a refused update leaves the stored plant unchanged', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Keep', tags: ['a'] })
      for (const payload of [{ id: plant.id, name: '' }, { id: plant.id, name: 'x', extra: 1 }, { id: plant.id, name: 'x', tags: ['a', 'a'] }]) {
        assert.equal((await request({ method: 'PUT', url: '/v3/plant', payload })).statusCode, 400)
      }
      assert.deepEqual((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json(), plant)
    })

    test('PUT on a deleted plant is 404', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add()
      assert.equal((await request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })).statusCode, 204)
      assert.equal((await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'back' } })).statusCode, 404)
    })
  })
}
