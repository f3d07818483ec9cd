import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

for (const engine of ENGINES) {
  describe(`reading and deleting plants on ${engine.name}`, { skip: engine.skip }, () => {
    test('GET by id returns the record with its ETag; If-None-Match with it answers 304', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Aloe', tags: ['succulent'] })
      const res = await request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      assert.equal(res.statusCode, 200)
      assert.deepEqual(res.json(), plant)
      const etag = res.headers.etag as string
      const cached = await request({ method: 'GET', url: `/v3/plant/${plant.id}`, headers: { 'if-none-match': etag } })
      assert.equal(cached.statusCode, 304)
      assert.equal(cached.body, '')
      assert.equal(cached.headers.etag, etag)
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${plant.id}`, headers: { 'if-none-match': 'W/"1.0", "9.9"' } })).statusCode, 200)
      await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Aloe vera' } })
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${plant.id}`, headers: { 'if-none-match': etag } })).statusCode, 200)
    })

    test('GET of an unknown id is 404; a malformed id is 400 "Invalid ID supplied"', async (t) => {
      const { request } = await build(t, engine)
      assert.equal((await request({ method: 'GET', url: '/v3/plant/77' })).statusCode, 404)
      for (const id of ['abc', '0', '-3', '1.5', '9007199254740992', '1e3']) {
        const res = await request({ method: 'GET', url: `/v3/plant/${id}` })
        assert.equal(res.statusCode, 400, id)
        assert.equal(res.json().title, 'Invalid ID supplied')
      }
    })

    test('DELETE answers 204, then the plant is 404 everywhere, and its id is never reused', async (t) => {
      const { request, add } = await build(t, engine)
      await add({ name: 'first' })
      const last = await add({ name: 'last' })
      const del = await request({ method: 'DELETE', url: `/v3/plant/${last.id}` })
      assert.equal(del.statusCode, 204)
      assert.equal(del.body, '')
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${last.id}` })).statusCode, 404)
      assert.equal((await request({ method: 'DELETE', url: `/v3/plant/${last.id}` })).statusCode, 404)
      const next = await add({ name: 'after delete' })
      assert.ok(next.id > last.id, `id ${next.id} must be greater than the deleted ${last.id}`)
      assert.deepEqual((await request({ method: 'GET', url: '/v3/plant' })).json().items.map((p: { name: string }) => p.name), ['first', 'after delete'])
    })

    test('DELETE with a stale If-Match answers 412 with the plant as it is now and deletes nothing; with the current one it deletes', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      const patched = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'sold' } })
      const stale = await request({ method: 'DELETE', url: `/v3/plant/${plant.id}`, headers: { 'if-match': `"${plant.id}.1"` } })
      assert.equal(stale.statusCode, 412)
      assert.equal(stale.headers.etag, patched.headers.etag)
      assert.deepEqual(stale.json().current, patched.json())
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).statusCode, 200)
      const current = await request({ method: 'DELETE', url: `/v3/plant/${plant.id}`, headers: { 'if-match': String(patched.headers.etag) } })
      assert.equal(current.statusCode, 204)
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).statusCode, 404)
    })

    test('the list filters by status, category and every repeated tag', async (t) => {
      const { request, add } = await build(t, engine)
      await add({ name: 'a', status: 'sold', category: 'indoor', tags: ['big', 'green'] })
      await add({ name: 'b', status: 'available', category: 'indoor', tags: ['big'] })
      await add({ name: 'c', status: 'sold', category: 'outdoor', tags: ['green'] })
      await add({ name: 'd', status: 'sold', category: 'indoor', tags: ['green'] })
      const names = async (query: string) =>
        (await request({ method: 'GET', url: `/v3/plant?${query}` })).json().items.map((p: { name: string }) => p.name)
      assert.deepEqual(await names(''), ['a', 'b', 'c', 'd'])
      assert.deepEqual(await names('status=sold'), ['a', 'c', 'd'])
      assert.deepEqual(await names('category=indoor'), ['a', 'b', 'd'])
      assert.deepEqual(await names('tag=big'), ['a', 'b'])
      assert.deepEqual(await names('tag=big&tag=green'), ['a'])
      assert.deepEqual(await names('tag=green&status=sold&category=indoor'), ['a', 'd'])
      assert.deepEqual(await names('tag=none'), [])
    })

    test('bad list parameters answer 400 naming the parameter', async (t) => {
      const { request } = await build(t, engine)
      for (const query of ['limit=0', 'limit=501', 'limit=ten', 'status=lost', 'cursor=%%%', 'cursor=bm90LWEtY3Vyc29y', 'colour=red']) {
        const res = await request({ method: 'GET', url: `/v3/plant?${query}` })
        assert.equal(res.statusCode, 400, query)
        assert.match(res.json().type, /invalid-input$/)
        assert.ok(res.json().errors.length > 0)
      }
      assert.equal((await request({ method: 'GET', url: '/v3/plant?limit=500' })).statusCode, 200)
    })

    test('pagination returns every matching plant exactly once while other plants are being added', async (t) => {
      const { request, add } = await build(t, engine)
      for (let i = 0; i < 45; i++) await add({ name: `p${i}`, tags: i % 3 === 0 ? ['x'] : [] })
      const seen: number[] = []
      let cursor: string | null = null
      let added = 0
      do {
        const url: string = `/v3/plant?limit=2&tag=x${cursor ? `&cursor=${cursor}` : ''}`
        const page = (await request({ method: 'GET', url })).json()
        assert.ok(page.items.length <= 2)
        seen.push(...page.items.map((p: { id: number }) => p.id))
        cursor = page.nextCursor
        // Writers keep adding matching and other plants between page reads.
        if (cursor && added < 6) { await add({ name: `late${added}`, tags: ['x'] }); await add({ name: `other${added}` }); added++ }
      } while (cursor)
      assert.equal(new Set(seen).size, seen.length, 'no plant twice')
      assert.deepEqual(seen, [...seen].sort((a, b) => a - b), 'in id order')
      const all = (await request({ method: 'GET', url: '/v3/plant?tag=x&limit=500' })).json().items.map((p: { id: number }) => p.id)
      assert.deepEqual(seen, all, 'every matching plant, including those added meanwhile')
      assert.equal(added, 6)
      assert.equal(all.length, 15 + 6)
    })

    test('the default page is 50 and the last page has nextCursor null', async (t) => {
      const { request, add } = await build(t, engine)
      for (let i = 0; i < 51; i++) await add({ name: `p${i}` })
      const first = (await request({ method: 'GET', url: '/v3/plant' })).json()
      assert.equal(first.items.length, 50)
      assert.equal(typeof first.nextCursor, 'string')
      const second = (await request({ method: 'GET', url: `/v3/plant?cursor=${first.nextCursor}` })).json()
      assert.equal(second.items.length, 1)
      assert.equal(second.nextCursor, null)
    })
  })
}

describe('HTTP behaviour shared by every route', () => {
  const engine = ENGINES[0]

  test('a method a path does not serve answers 405 with Allow', async (t) => {
    const { request } = await build(t, engine)
    const cases: Array<[string, string, string]> = [
      ['PATCH', '/v3/plant', 'GET, POST, PUT, HEAD'],
      ['DELETE', '/v3/plant', 'GET, POST, PUT, HEAD'],
      ['POST', '/v3/plant/1', 'GET, DELETE, PATCH, HEAD'],
      ['PUT', '/v3/plant/1', 'GET, DELETE, PATCH, HEAD'],
      ['POST', '/v3/store/inventory', 'GET, HEAD'],
      ['DELETE', '/v3/plant/changes', 'GET, HEAD']
    ]
    for (const [method, url, allow] of cases) {
      const res = await request({ method: method as 'GET', url })
      assert.equal(res.statusCode, 405, `${method} ${url}`)
      assert.equal(res.headers.allow, allow)
      assert.match(res.json().type, /method-not-allowed$/)
    }
  })

  test('an unknown path answers 404 in JSON', async (t) => {
    const { request } = await build(t, engine)
    // Not '/': the staff page answers there once it is built (npm run build, npm pack).
    for (const url of ['/nowhere', '/v2/plant', '/v3/plants', '/v3/plant/1/x']) {
      const res = await request({ method: 'GET', url })
      assert.equal(res.statusCode, 404, url)
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
      assert.match(res.json().type, /route-not-found$/)
    }
  })

  test('every response carries X-Request-Id: a sane one is echoed, an insane one replaced', async (t) => {
    const { request } = await build(t, engine)
    const echoed = await request({ method: 'GET', url: '/v3/plant', headers: { 'x-request-id': 'till-42.abc' } })
    assert.equal(echoed.headers['x-request-id'], 'till-42.abc')
    const replaced = await request({ method: 'GET', url: '/v3/plant/0', headers: { 'x-request-id': 'bad id <script>' } })
    assert.match(String(replaced.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    assert.equal(replaced.json().requestId, replaced.headers['x-request-id'])
  })

  test('HEAD on a plant answers like GET without a body', async (t) => {
    const { request, add } = await build(t, engine)
    const plant = await add()
    const res = await request({ method: 'HEAD', url: `/v3/plant/${plant.id}` })
    assert.equal(res.statusCode, 200)
    assert.equal(res.body, '')
    assert.ok(res.headers.etag)
  })
})
