import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { parseTimestamp } from '../../src/catalogue/price-sku-barcode.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// Finding plants as a new user met it (review findings 16–19): an unencoded + in updatedSince,
// times that do not exist, prices the wrong way round, a cleared search box, a count sent the
// list's paging.

const get = async (api: TestApp, url: string): Promise<{ status: number, body: any }> => {
  const res = await api.request({ method: 'GET', url })
  return { status: res.statusCode, body: res.json() }
}

test('a second 60 exists only at a leap second (23:59:60 UTC at the end of a day the IERS named)', () => {
  assert.equal(parseTimestamp('2016-12-31T23:59:60Z'), Date.parse('2016-12-31T23:59:59Z'))
  assert.equal(parseTimestamp('2017-01-01T00:59:60+01:00'), Date.parse('2016-12-31T23:59:59Z'), 'the same leap second, at an offset')
  assert.equal(parseTimestamp('2026-11-25T23:59:60Z'), undefined)
  assert.equal(parseTimestamp('2016-12-31T12:59:60Z'), undefined, 'not at the end of the day')
  assert.equal(parseTimestamp('2016-12-31T23:59:60+01:00'), undefined, '22:59:60 UTC')
})

for (const engine of ENGINES) {
  describe(`finding plants: answers a new user needs, on ${engine.name}`, { skip: engine.skip }, () => {
    test('updatedSince: a + sent unencoded (read as a space) is the + it was; an impossible time is refused; one wording, with the %2B hint', async (t) => {
      const api = await build(t, engine)
      await api.add({ name: 'Fern' })
      const encoded = await get(api, `/v3/plant/count?updatedSince=${encodeURIComponent('2000-01-01T18:44:00+01:00')}`)
      assert.deepEqual(encoded.body, { count: 1, exact: true })
      // What `curl "...?updatedSince=2000-01-01T18:44:00+01:00"` sends: the + decodes as a space.
      const raw = await get(api, '/v3/plant/count?updatedSince=2000-01-01T18:44:00+01:00')
      assert.equal(raw.status, 200, JSON.stringify(raw.body))
      assert.deepEqual(raw.body, { count: 1, exact: true })
      assert.deepEqual((await get(api, '/v3/plant/count?updatedSince=2999-01-01T18:44:00+01:00')).body, { count: 0, exact: true })
      const leap = await get(api, '/v3/plant?updatedSince=2026-11-25T23:59:60Z')
      assert.equal(leap.status, 400)
      assert.deepEqual(leap.body.errors.map((e: { path: string }) => e.path), ['/updatedSince'])
      assert.match(leap.body.detail, /^querystring \/updatedSince must be an RFC 3339 date-time/)
      const garbled = await get(api, '/v3/plant?updatedSince=2026-11-25T18:44+01:00')
      assert.equal(garbled.status, 400)
      assert.match(garbled.body.detail, /a \+ in the offset must be sent encoded, as %2B/)
    })

    test('priceMin above priceMax is 400 naming both, not an empty list', async (t) => {
      const api = await build(t, engine)
      await api.add({ name: 'Fern', price: '15' })
      for (const url of ['/v3/plant?priceMin=20&priceMax=10', '/v3/plant/count?priceMin=20&priceMax=10']) {
        const { status, body } = await get(api, url)
        assert.equal(status, 400, url)
        assert.deepEqual(body.errors.map((e: { path: string }) => e.path), ['/priceMin', '/priceMax'])
        assert.match(body.detail, /priceMin \(20\) is above priceMax \(10\)/)
      }
      assert.equal((await get(api, '/v3/plant?priceMin=10.00&priceMax=10')).status, 200, 'equal bounds are one price')
    })

    test('an empty q (a cleared search box), or one of white space alone, is no q: every plant', async (t) => {
      const api = await build(t, engine)
      await api.add({ name: 'Fern' })
      await api.add({ name: 'Monstera' })
      for (const q of ['', '%20%20', '%09']) {
        const { status, body } = await get(api, `/v3/plant?q=${q}&sort=name`)
        assert.equal(status, 200, `q=${q}: ${JSON.stringify(body)}`)
        assert.deepEqual(body.items.map((p: { name: string }) => p.name), ['Fern', 'Monstera'])
        assert.deepEqual((await get(api, `/v3/plant/count?q=${q}`)).body, { count: 2, exact: true })
      }
      // A cursor of the list without q serves the list with an empty one: the same query.
      const first = await get(api, '/v3/plant?limit=1')
      const next = await get(api, `/v3/plant?q=&limit=1&cursor=${first.body.nextCursor}`)
      assert.deepEqual(next.body.items.map((p: { name: string }) => p.name), ['Monstera'])
    })

    test('count sent the list\'s sort, limit or cursor says it takes none of them', async (t) => {
      const api = await build(t, engine)
      const { status, body } = await get(api, '/v3/plant/count?q=c&sort=name&limit=5')
      assert.equal(status, 400)
      assert.deepEqual(body.errors, [{ path: '/sort', message: 'count takes no sort, limit or cursor' }, { path: '/limit', message: 'count takes no sort, limit or cursor' }])
      assert.match(body.detail, /count takes no sort, limit or cursor/)
      assert.equal((await get(api, '/v3/plant/count?dryRun=1')).body.errors[0].message, 'is not a known field', 'other unknown parameters as before')
    })
  })
}
