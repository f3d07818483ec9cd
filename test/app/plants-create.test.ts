import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { seedView } from '../helpers/records.js'

const json = { 'content-type': 'application/json' }

for (const engine of ENGINES) {
  describe(`add-plant (POST /v3/plant) on ${engine.name}`, { skip: engine.skip }, () => {
    test('a valid plant is stored and returned with Location and ETag, defaults applied', async (t) => {
      const { request } = await build(t, engine)
      const res = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' } })
      assert.equal(res.statusCode, 200)
      const plant = res.json()
      assert.deepEqual(seedView(plant), { id: plant.id, name: 'Monstera', category: null, tags: [], status: 'available', photos: [] })
      assert.equal(res.headers.location, `/v3/plant/${plant.id}`)
      assert.match(String(res.headers.etag), /^"\d+\.\d+"$/)
      assert.equal(res.headers['content-type'], 'application/json; charset=utf-8')
      const read = await request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      assert.deepEqual(read.json(), plant)
    })

    test('every field is stored as sent, Unicode intact', async (t) => {
      const { request, add } = await build(t, engine)
      const sent = { name: 'Ficus 🌿 «lyrata» 日本語 \u0301e', category: 'intérieur 🪴', tags: ['大', 'ñ', '🌵x'], status: 'pending' }
      const plant = await add(sent)
      assert.deepEqual(seedView(plant), { id: plant.id, ...sent, photos: [] })
      const read = await request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      assert.deepEqual(read.json(), plant)
    })

    test('boundaries: name 200 ok / 201 refused, 20 tags ok / 21 refused, tag 50 / 51, category 100 / 101', async (t) => {
      const { request } = await build(t, engine)
      const post = (payload: object) => request({ method: 'POST', url: '/v3/plant', payload })
      const tags = (n: number) => Array.from({ length: n }, (_, i) => `t${i}`)
      // Characters, not bytes or UTF-16 units: 200 emoji are 200 characters.
      assert.equal((await post({ name: '🌿'.repeat(200) })).statusCode, 200)
      assert.equal((await post({ name: 'n'.repeat(200) })).statusCode, 200)
      assert.equal((await post({ name: 'n'.repeat(201) })).statusCode, 405)
      assert.equal((await post({ name: 'a', tags: tags(20) })).statusCode, 200)
      assert.equal((await post({ name: 'a', tags: tags(21) })).statusCode, 405)
      assert.equal((await post({ name: 'a', tags: ['x'.repeat(50)] })).statusCode, 200)
      const long = await post({ name: 'a', tags: ['ok', 'x'.repeat(51)] })
      assert.equal(long.statusCode, 405)
      assert.deepEqual(long.json().errors.map((e: { path: string }) => e.path), ['/tags/1'])
      assert.equal((await post({ name: 'a', category: 'c'.repeat(100) })).statusCode, 200)
      assert.equal((await post({ name: 'a', category: 'c'.repeat(101) })).statusCode, 405)
    })

    const invalid: Array<[string, unknown, string]> = [
      ['a missing name', { category: 'indoor' }, '/name'],
      ['an empty name', { name: '' }, '/name'],
      ['a name of white space only', { name: ' \t\n ' }, '/name'],
      ['a name that is a number', { name: 12 }, '/name'],
      ['a category that is empty', { name: 'a', category: '' }, '/category'],
      ['a category that is a number', { name: 'a', category: 3 }, '/category'],
      ['tags that are not an array', { name: 'a', tags: 'big' }, '/tags'],
      ['a tag that is not a string', { name: 'a', tags: [1] }, '/tags/0'],
      ['an empty tag', { name: 'a', tags: [''] }, '/tags/0'],
      ['duplicate tags', { name: 'a', tags: ['x', 'x'] }, '/tags'],
      ['an unknown status', { name: 'a', status: 'lost' }, '/status'],
      ['a null status', { name: 'a', status: null }, '/status'],
      ['a misspelt member', { name: 'a', staus: 'sold' }, '/staus'],
      ['an id', { id: 5, name: 'a' }, '/id']
    ]
    for (const [what, payload, path] of invalid) {
      test(`${what} is invalid input: 405 naming ${path}, nothing stored`, async (t) => {
        const { request } = await build(t, engine)
        const res = await request({ method: 'POST', url: '/v3/plant', payload: payload as object })
        assert.equal(res.statusCode, 405)
        assert.equal(res.headers.allow, 'GET, POST, PUT, HEAD')
        const body = res.json()
        assert.match(body.type, /invalid-input$/)
        assert.equal(body.title, 'Invalid input')
        assert.equal(body.status, 405)
        assert.ok(body.errors.some((e: { path: string }) => e.path === path), JSON.stringify(body.errors))
        assert.equal(body.requestId, res.headers['x-request-id'])
        const list = await request({ method: 'GET', url: '/v3/plant' })
        assert.deepEqual(list.json().items, [])
      })
    }

    const badBodies: Array<[string, string | undefined, Record<string, string>]> = [
      ['malformed JSON', '{"name": "a",', json],
      ['a JSON array', '[{"name":"a"}]', json],
      ['a JSON string', '"Monstera"', json],
      ['JSON null', 'null', json],
      ['an empty body', '', json],
      ['no body at all', undefined, {}],
      ['a __proto__ member', '{"name":"a","__proto__":{"admin":true}}', json],
      ['a constructor.prototype member', '{"name":"a","constructor":{"prototype":{"x":1}}}', json],
      ['a text/plain Content-Type', '{"name":"a"}', { 'content-type': 'text/plain' }],
      ['a form Content-Type', 'name=a', { 'content-type': 'application/x-www-form-urlencoded' }],
      ['no Content-Type', '{"name":"a"}', {}]
    ]
    for (const [what, payload, headers] of badBodies) {
      test(`${what} is invalid input: 405 in the contract's shape, nothing stored`, async (t) => {
        const { request } = await build(t, engine)
        const res = await request({ method: 'POST', url: '/v3/plant', payload, headers })
        assert.equal(res.statusCode, 405, res.body)
        assert.equal(res.headers.allow, 'GET, POST, PUT, HEAD')
        assert.match(res.json().type, /invalid-input$/)
        assert.ok(!/at .*\.(ts|js):\d+/.test(res.body), 'no stack trace')
        assert.deepEqual((await request({ method: 'GET', url: '/v3/plant' })).json().items, [])
      })
    }

    test('a charset parameter on application/json is accepted', async (t) => {
      const { request } = await build(t, engine)
      const res = await request({ method: 'POST', url: '/v3/plant', payload: '{"name":"a"}', headers: { 'content-type': 'application/json; charset=utf-8' } })
      assert.equal(res.statusCode, 200)
    })

    test('a body over 64 KiB answers 413 and stores nothing', async (t) => {
      const { request } = await build(t, engine)
      const res = await request({ method: 'POST', url: '/v3/plant', payload: JSON.stringify({ name: 'a', pad: 'x'.repeat(70_000) }), headers: json })
      assert.equal(res.statusCode, 413)
      assert.match(res.json().type, /payload-too-large$/)
      assert.deepEqual((await request({ method: 'GET', url: '/v3/plant' })).json().items, [])
    })

    test('a retry with the same Idempotency-Key and body returns the first response, marked a replay, and creates nothing', async (t) => {
      const { request } = await build(t, engine)
      const send = (payload: object, key = 'order-7f3a') =>
        request({ method: 'POST', url: '/v3/plant', payload, headers: { 'idempotency-key': key } })
      const before = Date.now()
      const first = await send({ name: 'Fern', tags: ['green'] })
      const after = Date.now()
      assert.equal(first.statusCode, 200)
      assert.equal(first.headers['idempotent-replayed'], undefined, 'an answer written now is not a replay')
      const again = await send({ name: 'Fern', tags: ['green'] })
      assert.equal(again.statusCode, 200)
      assert.equal(again.headers['idempotent-replayed'], 'true')
      assert.deepEqual(again.json(), first.json())
      assert.equal(again.headers.etag, first.headers.etag)
      assert.equal(again.headers.location, first.headers.location)
      const other = await send({ name: 'Cactus' })
      assert.equal(other.statusCode, 422)
      assert.match(other.json().type, /idempotency-key-reused$/)
      // The refusal says the key served another request, when, and until when it is kept.
      const said = /^This Idempotency-Key was used for another request \(another method or path, or the same one with a different body\) at (\S+), and is kept until (\S+) \(24 hours from that use\): send a new request with a new key$/.exec(other.json().detail)
      assert.ok(said, other.json().detail)
      const [usedAt, keptUntil] = [Date.parse(said[1]), Date.parse(said[2])]
      assert.ok(usedAt >= before && usedAt <= after, `${said[1]} is when the first request was written`)
      assert.equal(keptUntil - usedAt, 24 * 3_600_000)
      assert.equal(other.headers['idempotent-replayed'], undefined)
      const doc = (await request({ method: 'GET', url: '/v3/openapi.json' })).json()
      for (const path of ['/v3/plant', '/v3/plant/batch']) {
        assert.match(doc.paths[path].post.responses['200'].headers['idempotent-replayed'].description, /^`true` when this is the answer to an earlier request/)
      }
      const fresh = await send({ name: 'Fern', tags: ['green'] }, 'another-key')
      assert.notEqual(fresh.json().id, first.json().id)
      assert.equal((await request({ method: 'GET', url: '/v3/plant' })).json().items.length, 2)
    })

    test('concurrent retries with one Idempotency-Key create one plant', async (t) => {
      const { request } = await build(t, engine)
      const answers = await Promise.all(Array.from({ length: 10 }, () =>
        request({ method: 'POST', url: '/v3/plant', payload: { name: 'Once' }, headers: { 'idempotency-key': 'k1' } })))
      assert.deepEqual(new Set(answers.map((r) => r.statusCode)), new Set([200]))
      assert.equal(new Set(answers.map((r) => r.json().id)).size, 1)
      assert.equal((await request({ method: 'GET', url: '/v3/plant' })).json().items.length, 1)
    })

    test('an Idempotency-Key that is not 1–255 visible ASCII characters is invalid input', async (t) => {
      const { request } = await build(t, engine)
      for (const key of ['has space', 'x'.repeat(256), 'é']) {
        const res = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'a' }, headers: { 'idempotency-key': key } })
        assert.equal(res.statusCode, 405, key)
      }
      assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'a' }, headers: { 'idempotency-key': 'x'.repeat(255) } })).statusCode, 200)
    })

    test('200 concurrent POSTs get 200 distinct ids', async (t) => {
      const { request } = await build(t, engine)
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) =>
        request({ method: 'POST', url: '/v3/plant', payload: { name: `p${i}` } })))
      assert.ok(answers.every((r) => r.statusCode === 200))
      assert.equal(new Set(answers.map((r) => r.json().id)).size, 200)
    })
  })
}
