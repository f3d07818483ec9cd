import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import type { PlantFields, PlantStatus } from '../../src/catalogue/plant.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// GET /v3/plant/count: the list's filters, counted exactly up to 10,000 and no further.

/** A plant's fields as the store takes them (store fields left unset). */
const fields = (name: string, over: Partial<PlantFields> = {}): PlantFields =>
  ({ name, category: null, tags: [], status: 'available' as PlantStatus, description: null, price: null, sku: null, barcode: null, ...over }) as PlantFields

/** Adds plants straight through the store: writes sent together share group commits. */
async function fill (store: PlantStore, from: number, to: number, over: Partial<PlantFields>): Promise<void> {
  const group = store.engine === 'sqlite' ? 2_000 : 100
  for (let i = from; i < to; i += group) {
    await Promise.all(Array.from({ length: Math.min(group, to - i) }, (_, j) => store.create(fields(`Fern ${i + j}`, over))))
  }
}

const count = async (api: TestApp, query: string): Promise<{ count: number, exact: boolean }> => {
  const res = await api.request({ method: 'GET', url: `/v3/plant/count?${query}` })
  assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
  return res.json()
}

/** Every plant the list gives for `query`, walking its pages. */
const listed = async (api: TestApp, query: string): Promise<number> => {
  let n = 0
  let cursor: string | null = null
  do {
    const res = await api.request({ method: 'GET', url: `/v3/plant?${query}&limit=500${cursor === null ? '' : `&cursor=${cursor}`}` })
    assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
    n += res.json().items.length
    cursor = res.json().nextCursor
  } while (cursor !== null)
  return n
}

for (const engine of ENGINES) {
  describe(`counting plants (GET /v3/plant/count) on ${engine.name}`, { skip: engine.skip }, () => {
    test('exact at 9,999 and 10,000 matches; at 10,001 it says 10,000, not exact; with each kind of filter', async (t) => {
      const api = await build(t, engine)
      const store = api.app.store
      // Plants that match none of the filters below, first and last, so a count that ignores a filter shows.
      await fill(store, 0, 5, { status: 'sold', category: 'other' })
      await fill(store, 5, 5 + 9_999, { category: 'bulk', tags: ['many'], status: 'pending' })
      const filters = ['category=bulk', 'tag=many', 'status=pending', 'q=fern&status=pending', 'tag=many&category=bulk&status=pending']
      for (const filter of filters) assert.deepEqual(await count(api, filter), { count: 9_999, exact: true }, filter)
      await store.create(fields('Fern last', { category: 'bulk', tags: ['many'], status: 'pending' }))
      for (const filter of filters) assert.deepEqual(await count(api, filter), { count: 10_000, exact: true }, filter)
      await store.create(fields('Fern later', { category: 'bulk', tags: ['many'], status: 'pending' }))
      for (const filter of filters) assert.deepEqual(await count(api, filter), { count: 10_000, exact: false }, filter)
      assert.deepEqual(await count(api, ''), { count: 10_000, exact: false })
      assert.deepEqual(await count(api, 'status=sold'), { count: 5, exact: true })
      assert.deepEqual(await count(api, 'category=bulk&status=sold'), { count: 0, exact: true })
    })

    test("each filter's count is the list's total, searches of names not yet in the search index included", async (t) => {
      const api = await build(t, engine)
      const plants = [
        { name: 'Monstera deliciosa', category: 'Aroids', tags: ['big', 'indoor'], status: 'available' },
        { name: 'Monstera adansonii', category: 'Aroids', tags: ['indoor'], status: 'pending' },
        { name: 'Ficus lyrata', category: 'Trees', tags: ['big'], status: 'sold' },
        { name: 'Ficus elastica', tags: ['indoor', 'big'], status: 'available' },
        { name: 'Snake plant', category: 'Succulents', status: 'available' },
        { name: 'Pothos', category: 'Aroids', tags: ['indoor', 'trailing'], status: 'sold' }
      ]
      for (const plant of plants) await api.add(plant)
      // Renamed: the old name must no longer count, the new one once.
      await api.request({ method: 'PUT', url: '/v3/plant', payload: { id: 6, name: 'Golden pothos', category: 'Aroids', tags: ['indoor', 'trailing'], status: 'sold' } })
      const queries = [
        '', 'status=available', 'status=available&status=sold', 'tag=indoor', 'tag=indoor&tag=big', 'category=Aroids',
        'q=monstera', 'q=ficus%20ela', 'q=pothos', 'q=golden', 'q=stera&status=pending', 'q=ficus&tag=big&status=sold',
        'category=Aroids&tag=indoor&status=sold', 'tag=nobody', 'q=zzzz'
      ]
      const totals: Record<string, number> = {}
      for (const query of queries) {
        const total = await listed(api, query)
        totals[query] = total
        assert.deepEqual(await count(api, query), { count: total, exact: true }, query)
      }
      // The comparison means something: the filters do narrow.
      assert.deepEqual([totals[''], totals['tag=indoor&tag=big'], totals['q=pothos'], totals['q=zzzz']], [6, 2, 1, 0])
    })

    test('takes the list filters only: sort, limit, cursor and unknown parameters are 400; bad filters as the list says', async (t) => {
      const api = await build(t, engine)
      await api.add({ name: 'Monstera' })
      for (const query of ['sort=name', 'limit=5', 'cursor=abc', 'colour=green']) {
        const res = await api.request({ method: 'GET', url: `/v3/plant/count?${query}` })
        assert.equal(res.statusCode, 400, query)
        assert.equal(res.json().type, '/v3/problems/invalid-input', query)
      }
      for (const query of ['status=gone', 'category=a&category=b']) {
        const list = await api.request({ method: 'GET', url: `/v3/plant?${query}` })
        const counted = await api.request({ method: 'GET', url: `/v3/plant/count?${query}` })
        assert.equal(counted.statusCode, 400, query)
        assert.deepEqual([counted.json().detail, counted.json().errors], [list.json().detail, list.json().errors], query)
      }
      const q = await api.request({ method: 'GET', url: '/v3/plant/count?q=' + encodeURIComponent('a b c d e f') })
      assert.equal(q.statusCode, 400)
      assert.deepEqual(q.json().errors.map((e: { path: string }) => e.path), ['/q'])
    })

    test('is a read like the list: Feed-Position, not taken for a plant id, other methods 405', async (t) => {
      const api = await build(t, engine)
      await api.add({ name: 'Monstera' })
      const res = await api.request({ method: 'GET', url: '/v3/plant/count' })
      assert.deepEqual(res.json(), { count: 1, exact: true })
      assert.equal(res.headers['feed-position'], (await api.request({ method: 'GET', url: '/v3/plant' })).headers['feed-position'])
      assert.match(String(res.headers['feed-position']), /^[1-9][0-9]*$/)
      for (const method of ['DELETE', 'PUT', 'PATCH', 'POST'] as const) {
        const refused = await api.request({ method, url: '/v3/plant/count', payload: {} })
        assert.equal(refused.statusCode, 405, method)
        assert.equal(refused.headers.allow, 'GET, HEAD', method)
      }
    })
  })
}
