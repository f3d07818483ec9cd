import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { describe, test } from 'node:test'
import fc from 'fast-check'
import { nameOrderKey } from '../../src/catalogue/name-order.js'
import { compareCodePoints } from '../../src/catalogue/query.js'
import { BACKLOG } from '../../src/store/sqlite/search-backlog.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// sort=name as people read a list: case and accents ignored, numbers by value, ties by id; the same
// order on both engines, and cursors that walk it showing every plant once.

const names = async (api: TestApp, query: string): Promise<string[]> => {
  const res = await api.request({ method: 'GET', url: `/v3/plant?${query}` })
  assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
  return res.json().items.map((p: { name: string }) => p.name)
}

/** Every page of `query` walked with its cursors, `limit` at a time: the ids in the order shown. */
async function walk (api: TestApp, query: string, limit: number): Promise<number[]> {
  const ids: number[] = []
  let cursor = ''
  for (let pages = 0; pages < 1000; pages++) {
    const res = await api.request({ method: 'GET', url: `/v3/plant?${query}&limit=${limit}${cursor}` })
    assert.equal(res.statusCode, 200, res.body)
    const page = res.json()
    ids.push(...page.items.map((p: { id: number }) => p.id))
    if (page.nextCursor === null) return ids
    cursor = `&cursor=${page.nextCursor}`
  }
  throw new Error('the walk did not end')
}

const before = (a: string, b: string): boolean => compareCodePoints(nameOrderKey(a), nameOrderKey(b)) < 0

describe('the name order key (catalogue/name-order.ts)', () => {
  test('numbers compare by value, whatever their length and the text around them', () => {
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.constantFrom('', 'Pot ', 'a-'), fc.constantFrom('', ' cm', 'x', '.5'),
      (a, b, head, tail) => {
        fc.pre(a !== b)
        assert.equal(before(`${head}${a}${tail}`, `${head}${b}${tail}`), a < b)
      }))
  })

  test('a number sorts where a digit would among other characters; leading zeros break ties only, fewer first', () => {
    assert.ok(before('Pot -1', 'Pot 0'), 'a sign before the digits, as by code point')
    assert.ok(before('Pot 99', 'Pot a'), 'digits before letters, as by code point')
    assert.ok(before('Pot', 'Pot 1'))
    assert.ok(before('Pot 7 b', 'Pot 007 b') && before('Pot 007 b', 'Pot 7 c'), 'zeros decide only when all else is equal')
    assert.ok(before('Pot 0', 'Pot 00'))
    assert.ok(before('Pot 7 cm 01', 'Pot 07 cm 1'), "the first run's zeros decide first")
    assert.equal(nameOrderKey('Pot ６'), nameOrderKey('pot 6'), 'a full-width digit is the digit')
  })

  test('case, accents and compatibility forms are folded as q folds them', () => {
    assert.equal(nameOrderKey('Bégonia Rex'), nameOrderKey('begonia rex'))
    assert.equal(nameOrderKey('Be\u0301gonia'), nameOrderKey('Bégonia'))
    assert.equal(nameOrderKey('\uff26icus'), nameOrderKey('ficus'))
    assert.ok(before('begonia maculata', 'Bégonia rex') && before('Bégonia rex', 'Calathea'))
  })
})

for (const engine of ENGINES) {
  describe(`sort=name as people read a list on ${engine.name}`, { skip: engine.skip }, () => {
    test('accents and case are ignored: "Bégonia rex" sits beside "Begonia maculata", equal keys by id', async (t) => {
      const api = await build(t, engine)
      for (const name of ['Calathea', 'Bégonia rex', 'Éucalyptus', 'Begonia maculata', 'BEGONIA boliviensis', 'begonia rex', 'Be\u0301gonia rex', 'Zamioculcas', 'begonia Alba']) await api.add({ name })
      const expected = ['begonia Alba', 'BEGONIA boliviensis', 'Begonia maculata', 'Bégonia rex', 'begonia rex', 'Be\u0301gonia rex', 'Calathea', 'Éucalyptus', 'Zamioculcas']
      assert.deepEqual(await names(api, 'sort=name'), expected)
      assert.deepEqual(await names(api, 'sort=-name'), [...expected].reverse())
    })

    test('numbers in names order by value: "6 cm" before "14 cm"; leading zeros after the same value', async (t) => {
      const api = await build(t, engine)
      for (const name of ['Pot 14 cm', 'Pot 6 cm', 'Pot 100 cm', 'Pot 007 cm', 'Pot 7 cm', 'Pot 0 cm', 'Pot \uff16 cm', 'Pot 2.5 cm', 'Pot 12345678901234567890 cm']) await api.add({ name })
      const expected = ['Pot 0 cm', 'Pot 2.5 cm', 'Pot 6 cm', 'Pot \uff16 cm', 'Pot 7 cm', 'Pot 007 cm', 'Pot 14 cm', 'Pot 100 cm', 'Pot 12345678901234567890 cm']
      assert.deepEqual(await names(api, 'sort=name'), expected)
      assert.deepEqual(await names(api, 'sort=-name'), [...expected].reverse())
    })

    test('cursors walk such names, with and without q (the search index and its backlog), every plant once in order', async (t) => {
      const api = await build(t, engine)
      const heads = ['Pot', 'pot', 'Pöt', 'Pot 0', 'POT 00']
      // More than the SQLite search index's backlog: some names are in its index, the last ones still in the backlog.
      for (let i = 0; i < BACKLOG + 22; i++) await api.add({ name: `${heads[i % heads.length]} ${(i * 37) % 23} cm` })
      for (const name of ['Bégonia rex', 'Begonia maculata', 'begonia 9', 'Begonia 10']) await api.add({ name })
      for (const query of ['sort=name', 'sort=-name', 'sort=name&q=pot', 'sort=-name&q=cm', 'sort=name&q=o']) {
        const whole = await walk(api, query, 500)
        for (const limit of [1, 7]) assert.deepEqual(await walk(api, query, limit), whole, `${query}, ${limit} a page`)
        assert.equal(new Set(whole).size, whole.length)
      }
      const all = await names(api, 'sort=name&limit=500')
      assert.equal(all.length, BACKLOG + 26)
      for (let i = 1; i < all.length; i++) assert.ok(!before(all[i], all[i - 1]), `${all[i - 1]} before ${all[i]}`)
      assert.deepEqual(all.slice(0, 4), ['begonia 9', 'Begonia 10', 'Begonia maculata', 'Bégonia rex'])
      assert.deepEqual(await names(api, 'sort=name&q=pot&limit=500'), all.filter((n) => /^p[oö]t/iu.test(n)))
    })

    test('every write of a name keeps its place: create, PUT, PATCH, revert, restore from the trash', async (t) => {
      const api = await build(t, engine)
      const send = async (method: 'PUT' | 'PATCH' | 'POST', url: string, payload?: Record<string, unknown>): Promise<void> => {
        const res = await api.request({ method, url, ...(payload === undefined ? {} : { payload }) })
        assert.equal(res.statusCode, 200, `${method} ${url}: ${res.body}`)
      }
      const [six, fourteen, twenty] = [await api.add({ name: 'Pot 6 cm' }), await api.add({ name: 'Pot 14 cm' }), await api.add({ name: 'Pot 20 cm' })]
      await send('PUT', '/v3/plant', { id: fourteen.id, name: 'Pot 30 cm' })
      assert.deepEqual(await names(api, 'sort=name'), ['Pot 6 cm', 'Pot 20 cm', 'Pot 30 cm'])
      await send('PATCH', `/v3/plant/${six.id}`, { name: 'Pot 100 cm' })
      assert.deepEqual(await names(api, 'sort=name'), ['Pot 20 cm', 'Pot 30 cm', 'Pot 100 cm'])
      await send('POST', `/v3/plant/${fourteen.id}/revert`, { version: 1 })
      assert.deepEqual(await names(api, 'sort=name'), ['Pot 14 cm', 'Pot 20 cm', 'Pot 100 cm'])
      assert.equal((await api.request({ method: 'DELETE', url: `/v3/plant/${twenty.id}` })).statusCode, 204)
      assert.deepEqual(await names(api, 'sort=name'), ['Pot 14 cm', 'Pot 100 cm'])
      await send('POST', `/v3/trash/${twenty.id}/restore`)
      assert.deepEqual(await names(api, 'sort=-name'), ['Pot 100 cm', 'Pot 20 cm', 'Pot 14 cm'])
    })

    test('a cursor from before names were ordered this way is refused 400 naming /cursor: the walk starts again', async (t) => {
      const api = await build(t, engine)
      for (const name of ['Pot 6 cm', 'Pot 14 cm', 'Pot 20 cm']) await api.add({ name })
      // As the release before made them: its fingerprint of the query, the id, the lower-cased name.
      const fingerprint = createHash('sha256').update(JSON.stringify(['name', [], null, [], []])).digest('base64url').slice(0, 11)
      const old = Buffer.from(JSON.stringify([fingerprint, 2, 'pot 14 cm'])).toString('base64url')
      const res = await api.request({ method: 'GET', url: `/v3/plant?sort=name&limit=1&cursor=${old}` })
      assert.equal(res.statusCode, 400)
      const body = res.json()
      assert.equal(body.type.split('/').pop(), 'invalid-input')
      assert.deepEqual(body.errors.map((e: { path: string }) => e.path), ['/cursor'])
      assert.match(body.detail, /start again without a cursor/)
      // A cursor of this release continues.
      const first = (await api.request({ method: 'GET', url: '/v3/plant?sort=name&limit=1' })).json()
      assert.deepEqual(await names(api, `sort=name&limit=5&cursor=${first.nextCursor}`), ['Pot 14 cm', 'Pot 20 cm'])
    })
  })
}
