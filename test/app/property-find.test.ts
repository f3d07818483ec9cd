import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { toRecord, type Plant, type PlantStatus } from '../../src/catalogue/plant.js'
import { pageOf, type PlantQuery, type Sort } from '../../src/catalogue/query.js'
import { parseTerms, plantQueryOf } from '../../src/plants/query.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Finding plants against the model in src/catalogue/query.ts: random catalogues, random queries, every
// page walked, on each engine. Names come from a small alphabet with the cases that tell engines and
// naive implementations apart: upper and lower case, accents (ignored by q), compatibility forms (folded
// by q: full-width letters, a ligature), ß and İ (whose lower case is longer), numbers (by value in sort=name),
// a character above U+FFFF (UTF-16 order is not code point order), spaces and repeated letters.

const RUNS = Number(process.env.PROPERTY_RUNS ?? 150)
const STATUSES: PlantStatus[] = ['available', 'pending', 'sold']
const SORTS: Sort[] = ['id', '-id', 'name', '-name', 'price', '-price', 'updated', '-updated']
// Prices with ties ("5" and "5.00" are one price), the extremes, and none.
const PRICES = [null, '0', '5', '5.00', '5.5', '12.5', '999999999.99']
// Barcodes at several GTIN lengths: '00000096385074' is '96385074', '04006381333931' is '4006381333931'.
const BARCODES = [null, '96385074', '4006381333931', '00000096385074', '04006381333931', '000096385074']
// Accents precomposed and decomposed (e + U+0301), letters without a decomposition (ø), digits and
// signs between words (where a short term's word starts).
// Compatibility forms fold to plain letters in q (full-width Ａ and ａ are "a", the ligature ﬁ is "fi").
// Numbers that sort=name orders by value ("9" before "10"), with leading zeros ("02" after "2") and a
// full-width digit (the digit itself).
const LETTERS = ['a', 'b', 'A', 'B', 'é', 'É', 'e', 'e\u0301', 'ß', 'İ', 'i', 'ø', '😀', '\uff21', '\uff41', 'ﬁ', 'f', ' ', 'ab', 'ba', '1', '-', ',', '2', '02', '9', '10', '\uff12']

// Spaces inside only: the API refuses white space at either end of a name.
const name = fc.array(fc.constantFrom(...LETTERS), { minLength: 1, maxLength: 8 }).map((parts) => parts.join('')).filter((s) => s !== '' && s.trim() === s)
const plantFields = fc.record({
  name,
  // Categories and tags in mixed case: filters ignore the case of A–Z, not of É; a plant may not
  // hold both "t1" and "T1" (one tag to the filters, so refused), but may hold "é" and "É".
  category: fc.constantFrom(null, 'indoor', 'Indoor', 'outdoor', 'été', 'Été'),
  tags: fc.uniqueArray(fc.constantFrom('t1', 'T1', 't2', 't3', 't4', 'é', 'É'), { maxLength: 3, selector: (t) => t.replace(/[A-Z]/g, (c) => c.toLowerCase()) }),
  status: fc.constantFrom(...STATUSES),
  price: fc.constantFrom(...PRICES),
  barcode: fc.constantFrom(...BARCODES)
})
/** The SKU of the i-th plant of a catalogue (unique ignoring case; some plants have none). */
const skuOf = (i: number): string | null => i % 3 === 2 ? null : i % 3 === 0 ? `SK-${i}` : `sk-${i}`
// Terms of 1–2 characters (word starts) as well as longer ones (anywhere), in mixed case and accents.
const term = fc.array(fc.constantFrom('a', 'b', 'A', 'É', 'é', 'E\u0301', 'e', 'ß', 'İ', 'i', 'ø', '😀', 'ab', '1', '-', '\uff21', 'ﬁ', 'f'), { minLength: 1, maxLength: 4 }).map((p) => p.join(''))
const queryArb = fc.record({
  statuses: fc.uniqueArray(fc.constantFrom(...STATUSES), { maxLength: 3 }),
  category: fc.option(fc.constantFrom('indoor', 'INDOOR', 'outdoor', 'été', 'ÉTÉ'), { nil: undefined }),
  tags: fc.uniqueArray(fc.constantFrom('t1', 'T1', 't2', 'T3', 't4', 'é', 'never'), { maxLength: 2 }),
  q: fc.option(fc.array(term, { minLength: 1, maxLength: 2 }).map((ts) => ts.join(' ')), { nil: undefined }),
  sort: fc.option(fc.constantFrom(...SORTS), { nil: undefined }),
  limit: fc.integer({ min: 1, max: 7 }),
  ...storeFilters()
}).filter((c) => priceRange(c))

/** A priceMin above priceMax is refused (400), not an empty page: the queries keep to ranges. */
function priceRange (c: { priceMin?: string, priceMax?: string }): boolean {
  return c.priceMin === undefined || c.priceMax === undefined || Number(c.priceMin) <= Number(c.priceMax)
}

/** Absent three times in four: a query with every filter set finds nothing, and tests little. */
function rarely<T> (arbitrary: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> {
  return fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary, weight: 1 })
}

/**
 * The store fields' filters: a SKU in either case, a barcode, a price range, and updatedSince as the
 * updatedAt of one of the catalogue's plants (`since`, resolved once the catalogue exists).
 */
function storeFilters () {
  return {
    sku: rarely(fc.integer({ min: 0, max: 30 }).map((i) => i % 2 === 0 ? `sk-${i}` : `SK-${i}`)),
    barcode: rarely(fc.constantFrom('96385074', '4006381333931', '0000096385074', '04006381333931')),
    priceMin: rarely(fc.constantFrom('0', '5', '5.5', '13')),
    priceMax: rarely(fc.constantFrom('0', '5.00', '12.5', '999999999.99')),
    since: rarely(fc.nat()),
    updatedSince: fc.constant(undefined as string | undefined)
  }
}

/** Queries of the store fields' filters and sorts alone (with a status now and then): pages that are seldom empty. */
const storeQueryArb: fc.Arbitrary<QueryCase> = fc.record({
  statuses: rarely(fc.uniqueArray(fc.constantFrom(...STATUSES), { minLength: 1, maxLength: 2 })).map((s) => s ?? []),
  category: fc.constant(undefined),
  tags: fc.constant([]),
  q: fc.constant(undefined),
  sort: fc.constantFrom('price', '-price', 'updated', '-updated', 'id') as fc.Arbitrary<Sort>,
  limit: fc.integer({ min: 1, max: 7 }),
  ...storeFilters()
}).filter((c) => priceRange(c)) as unknown as fc.Arbitrary<QueryCase>
type QueryCase = typeof queryArb extends fc.Arbitrary<infer T> ? T : never

function url (c: QueryCase, cursor?: string): string {
  const params = new URLSearchParams()
  for (const s of c.statuses) params.append('status', s)
  for (const t of c.tags) params.append('tag', t)
  if (c.category !== undefined) params.set('category', c.category)
  if (c.q !== undefined) params.set('q', c.q)
  if (c.sort !== undefined) params.set('sort', c.sort)
  for (const name of ['sku', 'barcode', 'priceMin', 'priceMax', 'updatedSince'] as const) {
    const value = c[name]
    if (value !== undefined) params.set(name, value)
  }
  params.set('limit', String(c.limit))
  if (cursor !== undefined) params.set('cursor', cursor)
  return `/v3/plant?${params.toString()}`
}

/** Every page of the query, walked with its cursors. */
async function walk (api: TestApp, c: QueryCase): Promise<Plant[][]> {
  const pages: Plant[][] = []
  let cursor: string | undefined
  for (let i = 0; i < 1000; i++) {
    const res = await api.request({ method: 'GET', url: url(c, cursor) })
    assert.equal(res.statusCode, 200, `${url(c, cursor)}: ${res.body}`)
    const page = res.json() as { items: Plant[], nextCursor: string | null }
    pages.push(page.items)
    if (page.nextCursor === null) return pages
    cursor = page.nextCursor
  }
  throw new Error('the walk did not end')
}

const toQuery = (c: QueryCase): PlantQuery => ({
  ...plantQueryOf({ sku: c.sku, barcode: c.barcode, priceMin: c.priceMin, priceMax: c.priceMax, updatedSince: c.updatedSince }),
  statuses: c.statuses,
  category: c.category,
  tags: c.tags,
  terms: parseTerms(c.q),
  sort: c.sort ?? 'id'
})

/** The case with updatedSince set from the catalogue: the updatedAt of one of its plants. */
const resolved = (c: QueryCase, plants: Plant[]): QueryCase =>
  c.since === undefined || plants.length === 0 ? c : { ...c, updatedSince: plants[c.since % plants.length].updatedAt }

/** What the model says the pages are. */
function modelPages (plants: Plant[], c: QueryCase): Plant[][] {
  const query = toQuery(c)
  const all = pageOf(plants, query, undefined, Infinity)
  const pages: Plant[][] = []
  for (let i = 0; i < all.length; i += c.limit) pages.push(all.slice(i, i + c.limit))
  // The last full page is followed by an empty one only when it was not known to be the last.
  if (pages.length === 0) pages.push([])
  return pages
}

async function listAll (api: TestApp): Promise<Plant[]> {
  return (await api.app.store.list({ afterId: 0, limit: 1_000_000 })).map(toRecord)
}

async function inventoryMatches (api: TestApp): Promise<void> {
  const counted = { available: 0, pending: 0, sold: 0, units: { onHand: 0, reserved: 0, available: 0 } }
  for (const p of await listAll(api)) {
    counted[p.status as PlantStatus]++
    for (const unit of ['onHand', 'reserved', 'available'] as const) counted.units[unit] += p.stock?.[unit] ?? 0
  }
  const res = await api.request({ method: 'GET', url: '/v3/store/inventory' })
  assert.equal(res.statusCode, 200)
  assert.deepEqual(res.json(), counted)
}

for (const engine of ENGINES) {
  describe(`finding plants, properties on ${engine.name}`, { skip: engine.skip }, () => {
    for (const [what, arbitrary] of [['random queries', queryArb], ['store-field filters and sorts', storeQueryArb]] as const) {
      test(`${what} over random catalogues walk exactly the model's pages, in its order (${RUNS} queries)`, async (t) => {
        const api = await build(t, engine)
        let catalogue: Plant[] = []
        let queries = 0
        await fc.assert(fc.asyncProperty(fc.array(plantFields, { maxLength: 30 }), fc.array(arbitrary, { minLength: 1, maxLength: 5 }), async (fields, cases) => {
          // A new catalogue every run (ids keep growing: they are never reused).
          for (const p of catalogue) await api.app.store.remove(p.id)
          catalogue = []
          for (const [i, f] of fields.entries()) catalogue.push(await api.add({ ...f, sku: skuOf(i) }) as Plant)
          for (const raw of cases) {
            const c = resolved(raw, catalogue)
            queries++
            const pages = await walk(api, c)
            const flat = pages.flat()
            const expected = modelPages(catalogue, c).flat()
            assert.deepEqual(flat, expected, url(c))
            // Pages are full until the last one, and never larger than the limit.
            pages.slice(0, -1).forEach((p) => assert.equal(p.length, c.limit, url(c)))
            assert.ok(pages.at(-1)!.length <= c.limit)
          }
        }), { numRuns: Math.ceil(RUNS / 5) })
        t.diagnostic(`${queries} queries walked page by page`)
      })
    }

    test('after a random mix of creates, puts, patches and deletes the inventory equals the catalogue counted by listing', async (t) => {
      const api = await build(t, engine)
      const write = fc.oneof(
        plantFields.map((f) => ({ kind: 'create' as const, f })),
        fc.tuple(fc.nat(), plantFields).map(([pick, f]) => ({ kind: 'put' as const, pick, f })),
        fc.tuple(fc.nat(), fc.constantFrom(...STATUSES)).map(([pick, status]) => ({ kind: 'patch' as const, pick, status })),
        fc.nat().map((pick) => ({ kind: 'delete' as const, pick }))
      )
      await fc.assert(fc.asyncProperty(fc.array(write, { maxLength: 40 }), async (writes) => {
        // Sent together, so they share group commits.
        const ids = (await listAll(api)).map((p) => p.id)
        const pick = (n: number): number => ids.length === 0 ? 1 : ids[n % ids.length]
        await Promise.all(writes.map((w) => {
          if (w.kind === 'create') return api.request({ method: 'POST', url: '/v3/plant', payload: w.f })
          if (w.kind === 'put') return api.request({ method: 'PUT', url: '/v3/plant', payload: { id: pick(w.pick), ...w.f } })
          if (w.kind === 'patch') return api.request({ method: 'PATCH', url: `/v3/plant/${pick(w.pick)}`, payload: { status: w.status } })
          return api.request({ method: 'DELETE', url: `/v3/plant/${pick(w.pick)}` })
        }))
        await inventoryMatches(api)
      }), { numRuns: Math.ceil(RUNS / 5) })
    })

    test('paging while another client renames, adds and deletes: every plant unchanged for the whole walk is seen exactly once', async (t) => {
      const api = await build(t, engine)
      await fc.assert(fc.asyncProperty(
        fc.array(plantFields, { minLength: 5, maxLength: 25 }), queryArb, fc.array(fc.tuple(fc.constantFrom('rename', 'add', 'delete'), fc.nat(), name), { maxLength: 30 }),
        async (fields, raw, edits) => {
          for (const p of await listAll(api)) await api.app.store.remove(p.id)
          const start = [] as Plant[]
          for (const [i, f] of fields.entries()) start.push(await api.add({ ...f, sku: skuOf(i) }) as Plant)
          const c = resolved(raw, start)
          const touched = new Set<number>()
          const seen = new Map<number, number>()
          let cursor: string | undefined
          let e = 0
          for (let i = 0; i < 1000; i++) {
            const res = await api.request({ method: 'GET', url: url(c, cursor) })
            assert.equal(res.statusCode, 200, res.body)
            const page = res.json() as { items: Plant[], nextCursor: string | null }
            for (const p of page.items) seen.set(p.id, (seen.get(p.id) ?? 0) + 1)
            // Between pages, another client changes the catalogue.
            for (const [kind, n, newName] of edits.slice(e, e + 3)) {
              const target = start[n % start.length]
              touched.add(target.id)
              if (kind === 'rename') await api.request({ method: 'PATCH', url: `/v3/plant/${target.id}`, payload: { name: newName } })
              else if (kind === 'delete') await api.request({ method: 'DELETE', url: `/v3/plant/${target.id}` })
              else await api.add({ name: newName, tags: target.tags, status: target.status, category: target.category })
            }
            e += 3
            if (page.nextCursor === null) break
            cursor = page.nextCursor
          }
          const stayed = pageOf(start.filter((p) => !touched.has(p.id)), toQuery(c), undefined, Infinity)
          for (const p of stayed) assert.equal(seen.get(p.id), 1, `${url(c)}: plant ${p.id} "${p.name}" seen ${seen.get(p.id) ?? 0} times`)
        }), { numRuns: Math.ceil(RUNS / 5) })
    })
  })
}
