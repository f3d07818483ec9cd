import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { isGtin, timestamp } from '../../src/catalogue/price-sku-barcode.js'
import { ConfigError, loadConfig } from '../../src/config.js'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { picture } from '../helpers/pictures.js'

// Store fields: description, price, sku, barcode on every write; createdAt and updatedAt
// set by the service; the catalogue's currency at GET /v3.

const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

// GTINs: the check digit is the GS1 one (weights 3, 1, 3, … from the right, before the check digit).
const GTINS: Array<[string, boolean, string]> = [
  ['96385074', true, 'EAN-8'],
  ['036000291452', true, 'UPC-A (GTIN-12)'],
  ['4006381333931', true, 'EAN-13'],
  ['10012345678902', true, 'GTIN-14'],
  ['00000000', true, 'all zeros: check digit 0'],
  ['96385073', false, 'EAN-8, wrong check digit'],
  ['036000291453', false, 'GTIN-12, wrong check digit'],
  ['4006381333932', false, 'EAN-13, wrong check digit'],
  ['10012345678903', false, 'GTIN-14, wrong check digit'],
  ['123456789', false, '9 digits'],
  ['1234567890', false, '10 digits'],
  ['400638133393', false, '12 digits of an EAN-13 without its check digit'],
  ['4006381333931a', false, 'a letter'],
  ['4006381333931 ', false, 'a space'],
  ['１２３４５６７０', false, 'fullwidth digits']
]

test('a record\'s time is written exactly as toISOString writes it', () => {
  const edges = [0, 1, 999, 1000, 86_399_999, 86_400_000, Date.UTC(2024, 1, 29, 23, 59, 59, 999), Date.UTC(2026, 10, 25, 9, 5, 7, 40),
    253_402_300_799_999, 253_402_300_800_000, -1, -86_400_001, 1.5]
  // And a spread of times from 1970 to 2100, each day's prefix and each field's padding.
  const spread = Array.from({ length: 20_000 }, (_, i) => Math.floor((i * 4_102_444_800_000) / 20_000) + (i * 7919) % 1000)
  for (const ms of [...edges, ...spread]) assert.equal(timestamp(ms), new Date(ms).toISOString(), String(ms))
})

describe('GTIN check digits', () => {
  for (const [code, valid, what] of GTINS) {
    test(`${JSON.stringify(code)} (${what}) is ${valid ? 'valid' : 'invalid'}`, () => {
      assert.equal(isGtin(code), valid)
    })
  }
})

test('CURRENCY is three capital letters (ISO 4217), EUR by default', () => {
  assert.equal(loadConfig({}).currency, 'EUR')
  assert.equal(loadConfig({ CURRENCY: 'USD' }).currency, 'USD')
  for (const bad of ['eur', 'EURO', 'E1R']) assert.throws(() => loadConfig({ CURRENCY: bad }), ConfigError, bad)
})

test('CURRENCY refuses a code no one knows, and one whose minor unit is not the 2 fraction digits every price is shown with', () => {
  assert.throws(() => loadConfig({ CURRENCY: 'ABC' }), /CURRENCY="ABC" is not a known ISO 4217 currency code/)
  assert.throws(() => loadConfig({ CURRENCY: 'JPY' }), /CURRENCY="JPY" has 0 fraction digits, but the catalogue keeps and shows prices with 2/)
  assert.throws(() => loadConfig({ CURRENCY: 'KWD' }), /CURRENCY="KWD" has 3 fraction digits/)
  for (const good of ['GBP', 'CHF', 'SEK']) assert.equal(loadConfig({ CURRENCY: good }).currency, good)
})

for (const engine of ENGINES) {
  describe(`store fields on ${engine.name}`, { skip: engine.skip }, () => {
    test('a plant with every field is stored and returned; the price always with 2 fraction digits; times set by the service', async (t) => {
      const { request } = await build(t, engine)
      const sent = { name: 'Monstera', description: 'Large leaves, slow to grow.\nKeep out of direct sun.', price: '12.5', sku: 'MON-001', barcode: '4006381333931' }
      const res = await request({ method: 'POST', url: '/v3/plant', payload: sent })
      assert.equal(res.statusCode, 200, res.body)
      const plant = res.json()
      assert.deepEqual({ ...plant, createdAt: undefined, updatedAt: undefined }, {
        id: plant.id, name: 'Monstera', category: null, tags: [], status: 'available', description: sent.description, price: '12.50', sku: 'MON-001', barcode: '4006381333931', stock: null, lowStockAt: null, photos: [], createdAt: undefined, updatedAt: undefined, version: 1
      })
      assert.match(plant.createdAt, TIME)
      assert.equal(plant.updatedAt, plant.createdAt)
      assert.deepEqual((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json(), plant)
      assert.deepEqual((await request({ method: 'GET', url: '/v3/plant' })).json().items, [plant])
    })

    test('a client sending only the seed\'s fields gets them back, the store fields null', async (t) => {
      const { add } = await build(t, engine)
      const plant = await add({ name: 'Fern', category: 'indoor', tags: ['shade'], status: 'pending' })
      assert.deepEqual([plant.description, plant.price, plant.sku, plant.barcode], [null, null, null, null])
    })

    test('prices at the edges: "0", "0.01", "999999999.99" are kept; "1e3", "12.345", "-0", "1000000000", 3, " 1" are refused naming /price', async (t) => {
      const { request, add } = await build(t, engine)
      for (const [sent, shown] of [['0', '0.00'], ['0.01', '0.01'], ['999999999.99', '999999999.99'], ['7', '7.00'], ['10.1', '10.10']]) {
        assert.equal((await add({ name: `priced ${sent}`, price: sent })).price, shown, sent)
      }
      const plant = await add({ name: 'Fern' })
      for (const price of ['1e3', '12.345', '-0', '1000000000', 3, ' 1', '', '01', '1.', '.5', '12,50', 12.5]) {
        const post = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Bad', price } })
        assert.equal(post.statusCode, 405, `POST ${JSON.stringify(price)}`)
        assert.deepEqual(post.json().errors.map((e: { path: string }) => e.path), ['/price'], JSON.stringify(price))
        const put = await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Fern', price } })
        assert.equal(put.statusCode, 400, `PUT ${JSON.stringify(price)}`)
        const patch = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { price } })
        assert.equal(patch.statusCode, 400, `PATCH ${JSON.stringify(price)}`)
      }
      const number = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Bad', price: 3 } })
      assert.match(number.json().detail, /\/price must be a string or null/)
      const listed = (await request({ method: 'GET', url: '/v3/plant?limit=500' })).json().items
      assert.equal(listed.length, 6, 'nothing refused was stored')
    })

    test('a barcode with a wrong check digit, or not of 8, 12, 13 or 14 digits, is refused naming /barcode; a barcode is not unique', async (t) => {
      const { request, add } = await build(t, engine)
      for (const [code, valid] of GTINS) {
        const res = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Scanned', barcode: code } })
        assert.equal(res.statusCode, valid ? 200 : 405, `${code}: ${res.body}`)
        if (!valid) assert.deepEqual(res.json().errors.map((e: { path: string }) => e.path), ['/barcode'])
      }
      assert.match((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'x', barcode: '96385073' } })).json().detail, /check digit/)
      const twin = await add({ name: 'Twin', barcode: '96385074' })
      assert.equal(twin.barcode, '96385074')
    })

    test('sku: 1–64 characters of A–Z a–z 0–9 . _ -; description: 1–2,000 characters', async (t) => {
      const { request, add } = await build(t, engine)
      assert.equal((await add({ name: 'a', sku: 'A'.repeat(64) })).sku, 'A'.repeat(64))
      assert.equal((await add({ name: 'b', sku: 'a.b_c-9' })).sku, 'a.b_c-9')
      for (const sku of ['A'.repeat(65), '', 'a b', 'é', 'a/b', 5]) {
        const res = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'x', sku } })
        assert.equal(res.statusCode, 405, JSON.stringify(sku))
      }
      assert.equal((await add({ name: 'c', description: 'd'.repeat(2000) })).description.length, 2000)
      for (const description of ['d'.repeat(2001), '', '  ']) {
        assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'x', description } })).statusCode, 405)
      }
    })

    test('a second plant with a SKU ignoring case is 409 sku-taken naming the holder, on POST, PUT and PATCH; the holder may change its case', async (t) => {
      const { request, add } = await build(t, engine)
      const holder = await add({ name: 'Holder', sku: 'Fern-01' })
      const other = await add({ name: 'Other', sku: 'OTHER' })
      const refused = (res: { statusCode: number, json: () => any }, what: string): void => {
        assert.equal(res.statusCode, 409, what)
        const body = res.json()
        assert.equal(body.type, '/v3/problems/sku-taken', what)
        assert.equal(body.holder, holder.id, what)
        assert.match(body.detail, new RegExp(`plant ${holder.id}\\b`), what)
        assert.deepEqual(body.errors.map((e: { path: string }) => e.path), ['/sku'], what)
      }
      refused(await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Copy', sku: 'FERN-01' } }), 'POST')
      refused(await request({ method: 'PUT', url: '/v3/plant', payload: { id: other.id, name: 'Other', sku: 'fern-01' } }), 'PUT')
      refused(await request({ method: 'PATCH', url: `/v3/plant/${other.id}`, payload: { sku: 'Fern-01' } }), 'PATCH')
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${other.id}` })).json().sku, 'OTHER', 'the refused writes changed nothing')
      assert.equal((await request({ method: 'GET', url: '/v3/plant?limit=500' })).json().items.length, 2)
      const recased = await request({ method: 'PATCH', url: `/v3/plant/${holder.id}`, payload: { sku: 'FERN-01' } })
      assert.equal(recased.statusCode, 200, recased.body)
      // Given up (PUT omits it: null), it may be taken by another.
      assert.equal((await request({ method: 'PUT', url: '/v3/plant', payload: { id: holder.id, name: 'Holder' } })).json().sku, null)
      assert.equal((await request({ method: 'PATCH', url: `/v3/plant/${other.id}`, payload: { sku: 'fern-01' } })).statusCode, 200)
      // A deleted plant's SKU is free.
      await request({ method: 'DELETE', url: `/v3/plant/${other.id}` })
      assert.equal((await add({ name: 'Next', sku: 'FERN-01' })).sku, 'FERN-01')
    })

    test('createdAt and updatedAt are read-only: in a POST, PUT or PATCH body they are 400 naming them', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      const writes = [
        { method: 'POST' as const, url: '/v3/plant', payload: { name: 'Fern', createdAt: plant.createdAt } },
        { method: 'PUT' as const, url: '/v3/plant', payload: { ...plant, photos: undefined } },
        { method: 'PATCH' as const, url: `/v3/plant/${plant.id}`, payload: { updatedAt: '2030-01-01T00:00:00.000Z' } }
      ]
      for (const write of writes) {
        const res = await request(write)
        assert.equal(res.statusCode, 400, `${write.method}: ${res.body}`)
        const named = res.json().errors.map((e: { path: string, message: string }) => `${e.path} ${e.message}`)
        assert.ok(named.some((e: string) => /^\/(createdAt|updatedAt) is read-only/.test(e)), named.join('; '))
      }
      assert.equal((await request({ method: 'GET', url: '/v3/plant' })).json().items.length, 1)
    })

    test('updatedAt moves with every version (PUT, PATCH, a photo added or removed); createdAt never; {} moves neither', async (t) => {
      let clock = Date.parse('2026-05-01T12:00:00.000Z')
      const { request, add } = await build(t, engine, {}, { now: () => clock })
      const plant = await add({ name: 'Fern', price: '3' })
      assert.deepEqual([plant.createdAt, plant.updatedAt], ['2026-05-01T12:00:00.000Z', '2026-05-01T12:00:00.000Z'])
      const later = async (write: () => Promise<{ json: () => any }>): Promise<any> => {
        clock += 1_001
        const after = (await write()).json()
        assert.equal(after.createdAt, plant.createdAt)
        assert.equal(after.updatedAt, new Date(clock).toISOString())
        return after
      }
      await later(() => request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Fern', price: '4' } }))
      const patched = await later(() => request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { description: 'Soft fronds' } }))
      assert.deepEqual([patched.price, patched.description], ['4.00', 'Soft fronds'], 'PATCH kept the price PUT set')
      clock += 1_001
      assert.equal((await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: {} })).json().updatedAt, patched.updatedAt)
      const photo = (await later(async () => {
        const res = await request({ method: 'POST', url: `/v3/plant/${plant.id}/photos`, payload: await picture('png'), headers: { 'content-type': 'image/png' } })
        assert.equal(res.statusCode, 201, res.body)
        return await request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      })).photos[0]
      await later(async () => {
        assert.equal((await request({ method: 'DELETE', url: `/v3/plant/${plant.id}/photos/${photo.id}` })).statusCode, 204)
        return await request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      })
    })

    test('the feed\'s records carry the store fields and times', async (t) => {
      const { app, add } = await build(t, engine)
      const plant = await add({ name: 'Fern', price: '9.9', sku: 'F-1', barcode: '96385074', description: 'Green' })
      const { items } = await app.store.changes(0, 10)
      assert.deepEqual(items.map((c) => c.plant), [plant])
    })

    test('an Idempotency-Key replays the first answer; the same key with another price is 422', async (t) => {
      const { request } = await build(t, engine)
      const headers = { 'idempotency-key': 'store-fields-1' }
      const first = await request({ method: 'POST', url: '/v3/plant', headers, payload: { name: 'Fern', price: '5' } })
      const again = await request({ method: 'POST', url: '/v3/plant', headers, payload: { price: '5.00', name: 'Fern' } })
      assert.deepEqual(again.json(), first.json(), '"5" and "5.00" are the same price')
      assert.equal((await request({ method: 'POST', url: '/v3/plant', headers, payload: { name: 'Fern', price: '6' } })).statusCode, 422)
      // A create refused for its SKU keeps nothing under its key: once the SKU is free, the retry creates.
      const holder = (await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Holder', sku: 'K-1' } })).json()
      const retried = { 'idempotency-key': 'store-fields-2' }
      assert.equal((await request({ method: 'POST', url: '/v3/plant', headers: retried, payload: { name: 'Fern', sku: 'k-1' } })).statusCode, 409)
      assert.equal((await request({ method: 'POST', url: '/v3/plant', headers: retried, payload: { name: 'Fern', sku: 'k-1' } })).statusCode, 409)
      await request({ method: 'DELETE', url: `/v3/plant/${holder.id}` })
      const created = await request({ method: 'POST', url: '/v3/plant', headers: retried, payload: { name: 'Fern', sku: 'k-1' } })
      assert.equal(created.statusCode, 200, created.body)
      assert.deepEqual((await request({ method: 'POST', url: '/v3/plant', headers: retried, payload: { name: 'Fern', sku: 'k-1' } })).json(), created.json())
    })

    test('GET /v3 names the catalogue\'s currency (CURRENCY)', async (t) => {
      assert.equal((await (await build(t, engine)).request({ method: 'GET', url: '/v3' })).json().currency, 'EUR')
      assert.equal((await (await build(t, engine, { currency: 'CHF' })).request({ method: 'GET', url: '/v3' })).json().currency, 'CHF')
    })
  })
}
