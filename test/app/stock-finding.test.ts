import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Finding by stock: inStock, lowStock (list and count, paging with cursors) and sort=available.

async function stocked (api: TestApp, name: string, onHand: number | null, lowStockAt: number | null = null): Promise<number> {
  const { id } = await api.add({ name, lowStockAt })
  if (onHand !== null) {
    const res = await api.request({ method: 'POST', url: `/v3/plant/${id}/stock/movements`, payload: { set: onHand, reason: 'count' } })
    assert.equal(res.statusCode, 201, res.body)
  }
  return id
}

for (const engine of ENGINES) {
  describe(`finding by stock on ${engine.name}`, { skip: engine.skip }, () => {
    test('inStock=true|false and lowStock=true filter the list and the count; untracked plants match neither inStock value', async (t) => {
      const api = await build(t, engine)
      const untracked = await stocked(api, 'Untracked', null, 5)
      const none = await stocked(api, 'None', 0, 2)
      const few = await stocked(api, 'Few', 2, 2)
      const many = await stocked(api, 'Many', 9, 2)
      const noThreshold = await stocked(api, 'No threshold', 1)
      const ids = async (query: string): Promise<number[]> => (await api.request({ method: 'GET', url: `/v3/plant?${query}` })).json().items.map((p: { id: number }) => p.id)
      const count = async (query: string): Promise<number> => (await api.request({ method: 'GET', url: `/v3/plant/count?${query}` })).json().count
      assert.deepEqual(await ids('inStock=true'), [few, many, noThreshold])
      assert.deepEqual(await ids('inStock=false'), [none])
      assert.deepEqual(await ids('lowStock=true'), [none, few])
      assert.deepEqual(await ids('lowStock=true&inStock=true'), [few])
      assert.deepEqual([await count('inStock=true'), await count('inStock=false'), await count('lowStock=true')], [3, 1, 2])
      assert.ok(!(await ids('inStock=true')).includes(untracked))
      assert.equal((await api.request({ method: 'GET', url: '/v3/plant?lowStock=false' })).statusCode, 400)
      // Paged with a cursor bound to the filter.
      const first = (await api.request({ method: 'GET', url: '/v3/plant?inStock=true&limit=2' })).json()
      const second = (await api.request({ method: 'GET', url: `/v3/plant?inStock=true&limit=2&cursor=${String(first.nextCursor)}` })).json()
      assert.deepEqual([...first.items, ...second.items].map((p: { id: number }) => p.id), [few, many, noThreshold])
      assert.equal((await api.request({ method: 'GET', url: `/v3/plant?limit=2&cursor=${String(first.nextCursor)}` })).statusCode, 400)
      // A sale moves a plant across the filters.
      await api.request({ method: 'POST', url: `/v3/plant/${many}/stock/movements`, payload: { delta: -7, reason: 'sale' } })
      assert.deepEqual(await ids('lowStock=true'), [none, few, many])
    })

    test('sort=available orders by available stock, untracked plants last (first for -available), ties by id; pages with cursors', async (t) => {
      const api = await build(t, engine)
      const a = await stocked(api, 'A', 5)
      const b = await stocked(api, 'B', null)
      const c = await stocked(api, 'C', 0)
      const d = await stocked(api, 'D', 5)
      const e = await stocked(api, 'E', 12)
      const walk = async (sort: string): Promise<number[]> => {
        const seen: number[] = []
        let cursor: string | null = null
        do {
          const page: { items: Array<{ id: number }>, nextCursor: string | null } = (await api.request({ method: 'GET', url: `/v3/plant?sort=${sort}&limit=2${cursor === null ? '' : `&cursor=${cursor}`}` })).json()
          seen.push(...page.items.map((p) => p.id))
          cursor = page.nextCursor
        } while (cursor !== null)
        return seen
      }
      assert.deepEqual(await walk('available'), [c, a, d, e, b])
      assert.deepEqual(await walk('-available'), [b, e, d, a, c])
    })
  })
}
