import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { toRecord, type Plant } from '../../src/catalogue/plant.js'
import { pageOf, type PlantQuery } from '../../src/catalogue/query.js'
import { plantQueryOf } from '../../src/plants/query.js'
import type { ListQuery } from '../../src/plants/schemas.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Finding plants, second round: sku, barcode, updatedSince, priceMin and priceMax filters,
// and the price and updated sorts, each paging with cursors bound to its sort and filters.

const START = Date.parse('2026-05-01T12:00:00.000Z')

/** A catalogue with prices (ties, none, the extremes), SKUs, barcodes and update times one second apart. */
async function stocked (t: Parameters<typeof build>[0], engine: (typeof ENGINES)[number]): Promise<{ api: TestApp, plants: Plant[], at: (i: number) => string }> {
  let clock = START
  const api = await build(t, engine, {}, { now: () => clock })
  const prices = ['5', null, '0', '12.50', '5', '999999999.99', null, '0.01', '12.5', '7']
  for (const [i, price] of prices.entries()) {
    clock = START + i * 1000
    await api.add({ name: `Plant ${i}`, price, sku: i % 3 === 0 ? `SKU-${i}` : null, barcode: i % 2 === 0 ? '96385074' : '4006381333931', tags: i % 2 === 0 ? ['even'] : [] })
  }
  // An update moves plant 1 to the latest time: sort=updated is not the id order.
  clock = START + 20_000
  assert.equal((await api.request({ method: 'PATCH', url: '/v3/plant/2', payload: { description: 'moved' } })).statusCode, 200)
  const plants = (await api.app.store.list({ afterId: 0, limit: 100 })).map(toRecord)
  return { api, plants, at: (i) => new Date(START + i * 1000).toISOString() }
}

/** Every page of the query through cursors, `limit` at a time: the plants' ids in order. */
async function walk (api: TestApp, query: string, limit: number): Promise<number[]> {
  const ids: number[] = []
  let cursor = ''
  for (let pages = 0; pages < 100; pages++) {
    const res = await api.request({ method: 'GET', url: `/v3/plant?${query}&limit=${limit}${cursor}` })
    assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
    const page = res.json()
    ids.push(...page.items.map((p: Plant) => p.id))
    if (page.nextCursor === null) return ids
    cursor = `&cursor=${page.nextCursor}`
  }
  throw new Error('the walk did not end')
}

/** What the catalogue's model (catalogue/query.ts) says the query finds, in its order. */
function modelIds (plants: Plant[], query: string): number[] {
  const params = new URLSearchParams(query)
  // Repeatable parameters are arrays, as the query string's schema makes them.
  const parsed: PlantQuery = plantQueryOf({ ...Object.fromEntries(params), status: params.getAll('status'), tag: params.getAll('tag') } as Omit<ListQuery, 'limit' | 'cursor'>)
  return pageOf(plants, parsed, undefined, Infinity).map((p) => p.id)
}

for (const engine of ENGINES) {
  describe(`finding plants by store fields on ${engine.name}`, { skip: engine.skip }, () => {
    test('sku= finds the one plant ignoring case; barcode= every plant with it, exactly', async (t) => {
      const { api } = await stocked(t, engine)
      assert.deepEqual(await walk(api, 'sku=sku-3', 10), [4])
      assert.deepEqual(await walk(api, 'sku=SKU-3&tag=even', 10), [], 'with the other filters')
      assert.deepEqual(await walk(api, 'sku=SKU-4', 10), [])
      assert.deepEqual(await walk(api, 'barcode=96385074', 2), [1, 3, 5, 7, 9])
      assert.deepEqual(await walk(api, 'barcode=96385074&sort=-price', 2), [7, 9, 5, 1, 3], 'unpriced first, then by price down, ties by id down')
      assert.deepEqual(await walk(api, 'barcode=4006381333931&sku=SKU-9', 10), [10])
      assert.deepEqual(await walk(api, 'barcode=10012345678902', 10), [])
    })

    test('updatedSince= finds plants updated at or after it (any RFC 3339 offset); priceMin/priceMax are inclusive and leave unpriced plants out', async (t) => {
      const { api, at } = await stocked(t, engine)
      assert.deepEqual(await walk(api, `updatedSince=${at(7)}`, 10), [2, 8, 9, 10])
      assert.deepEqual(await walk(api, `updatedSince=${encodeURIComponent('2026-05-01T14:00:08.000+02:00')}`, 10), [2, 9, 10])
      assert.deepEqual(await walk(api, 'updatedSince=2026-05-01T12:00:08.0001Z', 10), [2, 10], 'a fraction beyond milliseconds rounds up')
      assert.deepEqual(await walk(api, 'priceMin=5&priceMax=12.5', 10), [1, 4, 5, 9, 10])
      assert.deepEqual(await walk(api, 'priceMin=12.51', 10), [6])
      assert.deepEqual(await walk(api, 'priceMax=0', 10), [3])
      assert.deepEqual(await walk(api, 'priceMin=0&sort=price', 3), [3, 8, 1, 5, 10, 4, 9, 6])
    })

    test('sort=price and -price (unpriced last, then first), updated and -updated, ties by id: every page size walks the model\'s order', async (t) => {
      const { api, plants } = await stocked(t, engine)
      assert.deepEqual(await walk(api, 'sort=price', 100), [3, 8, 1, 5, 10, 4, 9, 6, 2, 7])
      assert.deepEqual(await walk(api, 'sort=-price', 100), [7, 2, 6, 9, 4, 10, 5, 1, 8, 3])
      assert.deepEqual(await walk(api, 'sort=updated', 100), [1, 3, 4, 5, 6, 7, 8, 9, 10, 2])
      assert.deepEqual(await walk(api, 'sort=-updated', 100), [2, 10, 9, 8, 7, 6, 5, 4, 3, 1])
      const queries = ['sort=price', 'sort=-price', 'sort=updated', 'sort=-updated', 'sort=price&tag=even', 'sort=-updated&priceMax=12.5',
        'sort=-price&status=available&q=plant', 'sort=name&priceMin=1', 'sort=-id&updatedSince=2026-05-01T12:00:04Z', 'sort=price&barcode=4006381333931']
      for (const query of queries) {
        const expected = modelIds(plants, query)
        for (const limit of [1, 2, 3, 500]) assert.deepEqual(await walk(api, query, limit), expected, `${query} by ${limit}`)
      }
    })

    test('a cursor is bound to the sort and the new filters: with another one it is 400, without them as before', async (t) => {
      const { api } = await stocked(t, engine)
      const cursorOf = async (query: string): Promise<string> => (await api.request({ method: 'GET', url: `/v3/plant?${query}&limit=1` })).json().nextCursor
      const refused = async (query: string): Promise<void> => {
        const res = await api.request({ method: 'GET', url: `/v3/plant?${query}&limit=1` })
        assert.equal(res.statusCode, 400, query)
        assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), ['/cursor'], query)
      }
      await refused(`sort=updated&cursor=${await cursorOf('sort=price')}`)
      await refused(`sort=-price&cursor=${await cursorOf('sort=price')}`)
      await refused(`priceMin=2&cursor=${await cursorOf('priceMin=1')}`)
      await refused(`barcode=96385074&cursor=${await cursorOf('barcode=4006381333931')}`)
      await refused(`cursor=${await cursorOf('updatedSince=2026-05-01T12:00:00Z')}`)
      await refused(`sort=price&cursor=${await cursorOf('sort=id')}`)
      // The same filters spelt otherwise are the same query: a price with a trailing zero.
      const res = await api.request({ method: 'GET', url: `/v3/plant?barcode=96385074&priceMin=5.0&limit=1&cursor=${await cursorOf('barcode=96385074&priceMin=5')}` })
      assert.equal(res.statusCode, 200, res.body)
    })

    test('malformed filters are 400 naming the parameter', async (t) => {
      const { api } = await stocked(t, engine)
      const cases: Array<[string, string]> = [
        ['updatedSince=yesterday', '/updatedSince'],
        ['updatedSince=2026-05-01', '/updatedSince'],
        ['updatedSince=2026-02-30T00:00:00Z', '/updatedSince'],
        ['priceMin=1e3', '/priceMin'],
        ['priceMax=-1', '/priceMax'],
        ['priceMax=12.345', '/priceMax'],
        ['barcode=96385073', '/barcode'],
        ['barcode=123', '/barcode'],
        ['sku=a%20b', '/sku'],
        ['sort=cost', '/sort'],
        ['sku=a&sku=b', '/sku']
      ]
      for (const [query, path] of cases) {
        const res = await api.request({ method: 'GET', url: `/v3/plant?${query}` })
        assert.equal(res.statusCode, 400, query)
        assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), [path], query)
      }
    })
  })
}
