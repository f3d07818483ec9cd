import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import { plants } from '../../scripts/lib/cli-harness.js'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import type { PlantInput } from '../../src/catalogue/plant.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { CLI_TARGETS } from '../helpers/cli-targets.js'

// plants export takes every filter of GET /v3/plant, by its name, and finds what the API finds,
// from a data folder, from PostgreSQL and through a running service.

const CATEGORIES = ['Indoor', 'outdoor', null]
const TAGS = [['Big', 'green'], ['big'], ['green', 'shade'], []]

/** 90 plants over every field a filter reads; returns the time between the first half's writes and the second's. */
async function seed (store: PlantStore): Promise<string> {
  let between = ''
  for (let i = 0; i < 90; i++) {
    if (i === 45) {
      await new Promise((resolve) => setTimeout(resolve, 5))
      between = new Date().toISOString()
      await new Promise((resolve) => setTimeout(resolve, 5))
    }
    const plant: PlantInput = {
      name: `Plant ${i}`,
      category: CATEGORIES[i % 3],
      tags: TAGS[i % 4],
      status: i % 5 === 0 ? 'sold' : 'available',
      price: i % 7 === 0 ? null : `${i}.50`,
      sku: i % 2 === 0 ? `SKU-${i}` : null,
      // A UPC-A and the same code as a GTIN-14: one barcode to the filter.
      barcode: i === 10 ? '036000291452' : i === 11 ? '00036000291452' : null
    }
    await store.create(plant)
  }
  return between
}

/** What GET /v3/plant answers for these parameters, every page of it, as JSON Lines. */
async function listed (store: PlantStore, params: URLSearchParams): Promise<string> {
  const app = await buildApp(testConfig({}), { store })
  try {
    let lines = ''
    let cursor: string | undefined
    for (;;) {
      const query = new URLSearchParams(params)
      query.set('limit', '7')
      if (cursor !== undefined) query.set('cursor', cursor)
      const page = await app.inject({ method: 'GET', url: `/v3/plant?${query}` })
      assert.equal(page.statusCode, 200, page.body)
      const body = page.json<{ items: object[], nextCursor: string | null }>()
      lines += body.items.map((p) => `${JSON.stringify(p)}\n`).join('')
      if (body.nextCursor === null) return lines
      cursor = body.nextCursor
    }
  } finally {
    await app.close()
  }
}

/** An export's JSON Lines without a tracked plant's stock.<location> members, which the API's record does not have. */
const withoutCounts = (lines: string): string => lines.split('\n').map((line) => line === ''
  ? line
  : JSON.stringify(Object.fromEntries(Object.entries(JSON.parse(line) as object).filter(([member]) => !member.startsWith('stock.'))))).join('\n')

for (const [where, target] of Object.entries(CLI_TARGETS)) {
  describe(`plants export's filters (${where})`, { skip: target.skip }, () => {
    test('none, each of category, tag, sku, barcode, priceMin, priceMax, updatedSince, inStock and lowStock, and all together, export what GET /v3/plant lists, also through --url', async (t) => {
      const { env, args, open } = await target.make(t)
      const store = await open()
      t.after(() => store.close())
      const between = await seed(store)
      // Stock for the stock filters: plants 1-6 tracked (3 and 4 with none left, 5 and 6 low), the rest untracked.
      for (const [id, received, sold] of [[1, 9, 0], [2, 4, 1], [3, 2, 2], [4, 1, 1], [5, 3, 1], [6, 5, 3]]) {
        await store.stock.move(id, { delta: received, reason: 'received' })
        if (sold > 0) await store.stock.move(id, { delta: -sold, reason: 'sale' })
      }
      for (const id of [5, 6]) await store.patch(id, { lowStockAt: 2 })
      const cases: Array<Array<[string, string]>> = [
        [],
        [['category', 'indoor']],
        [['tag', 'BIG']],
        [['tag', 'big'], ['tag', 'Green']],
        [['sku', 'sku-12']],
        [['barcode', '0036000291452']],
        [['priceMin', '20'], ['priceMax', '40.5']],
        [['priceMax', '9.99'], ['sort', '-price']],
        [['updatedSince', between], ['sort', '-updated']],
        [['category', 'Indoor'], ['tag', 'green'], ['status', 'available'], ['priceMin', '1'], ['updatedSince', between], ['sort', 'name']],
        [['inStock', 'true']],
        [['inStock', 'false']],
        [['lowStock', 'true'], ['sort', '-id']],
        [['inStock', 'true'], ['lowStock', 'true'], ['priceMin', '1']]
      ]
      const service = await buildApp(testConfig({}), { store })
      await service.listen({ host: '127.0.0.1', port: 0 })
      t.after(() => service.close())
      const url = `http://127.0.0.1:${(service.server.address() as AddressInfo).port}`
      for (const filters of cases) {
        const expected = await listed(store, new URLSearchParams(filters))
        assert.ok(expected !== '', `${JSON.stringify(filters)} finds some plants`)
        if (filters.length === 0) assert.equal(expected.split('\n').length, 91, 'no filter: every plant')
        const options = filters.map(([name, value]) => `--${name}=${value}`)
        const exported = await plants(['export', '--format', 'jsonl', ...options, ...args], env)
        assert.equal(exported.code, 0, exported.stderr)
        assert.equal(withoutCounts(exported.stdout), expected, `export ${options.join(' ')}`)
        const viaService = await plants(['export', '--format', 'jsonl', '--url', url, ...options])
        assert.equal(viaService.code, 0, viaService.stderr)
        assert.equal(withoutCounts(viaService.stdout), expected, `export --url … ${options.join(' ')}`)
      }
      // Two plants share the barcode: both are found, whichever length is asked for.
      assert.equal((await listed(store, new URLSearchParams({ barcode: '0036000291452' }))).trim().split('\n').length, 2)
    })

    test('a filter the API refuses is refused as a usage error naming the option, with the API\'s reason', async (t) => {
      const { env, args, open } = await target.make(t)
      const store = await open()
      await store.create({ name: 'Fern', category: null, tags: [], status: 'available' })
      await store.close()
      for (const [bad, message] of [
        [['--barcode', '036000291453'], /^plants export: --barcode must end in a valid GTIN check digit/],
        [['--priceMin', '12.505'], /^plants export: --priceMin /],
        [['--priceMin', '30', '--priceMax', '20'], /^plants export: --priceMin must be at most priceMax \(20\)/],
        [['--updatedSince', '2026-02-30T00:00:00Z'], /^plants export: --updatedSince must be an RFC 3339 date-time/],
        [['--sku', 'no spaces'], /^plants export: --sku /],
        [['--category', ' padded'], /^plants export: --category /],
        [['--status', 'gone'], /^plants export: --status must be one of available, pending, sold/],
        [['--price-min', '3'], /unknown option --price-min: did you mean --priceMin\?/],
        [['--inStock', 'maybe'], /^plants export: --inStock must be true or false/],
        [['--lowStock', 'false'], /^plants export: --lowStock /],
        [['--in-stock', 'true'], /unknown option --in-stock: did you mean --inStock\?/],
        [['--lowstock=true'], /unknown option --lowstock: did you mean --lowStock\?/]
      ] as const) {
        const refused = await plants(['export', ...bad, ...args], env)
        assert.equal(refused.code, 2, `${bad.join(' ')}: ${refused.stderr}`)
        assert.match(refused.stderr, message)
        assert.equal(refused.stdout, '')
      }
    })
  })
}
