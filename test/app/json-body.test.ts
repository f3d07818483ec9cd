import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { findMembers, MAX_DEPTH } from '../../src/http/input/json-text-scan.js'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

const json = { 'content-type': 'application/json' }

test('findMembers names the first duplicate member and every number written with a fraction or exponent, as JSON pointers', () => {
  assert.deepEqual(findMembers('{"a":1,"b":[1,2.5,{"c":1e3}],"d/~":-0.0}'), { fractional: ['/b/1', '/b/2/c', '/d~1~0'] })
  assert.deepEqual(findMembers('{"a":{"x":1},"b":[{"x":1,"y":2,"x":3}]}'), { duplicate: '/b/0/x', fractional: [] })
  // Escapes in names are compared decoded; quotes, colons and numbers inside strings are text.
  assert.equal(findMembers('{"tags":1,"t\\u0061gs":2}').duplicate, '/tags')
  assert.deepEqual(findMembers('{"s":"\\"id\\": 1.0, \\\\","id":1,"t":"\\\\"}'), { fractional: [] })
  // The same name in sibling objects is no duplicate.
  assert.deepEqual(findMembers('[{"id":1},{"id":2}]'), { fractional: [] })
})

/** The abuse review's body: `depth` brackets around `count` fractional numbers (64 KB at 8,000 and 12,000). */
const bracketBomb = (depth: number, count: number): string =>
  '['.repeat(depth) + Array(count).fill('1.0').join(',') + ']'.repeat(depth)

test(`findMembers stops at ${MAX_DEPTH} levels of nesting, so its cost is linear in the text (a 4x body costs at most 12x, not 16x)`, () => {
  assert.deepEqual(findMembers('['.repeat(MAX_DEPTH) + '1.5' + ']'.repeat(MAX_DEPTH)), { fractional: ['/0'.repeat(MAX_DEPTH)] })
  assert.equal(findMembers('['.repeat(MAX_DEPTH + 1) + ']'.repeat(MAX_DEPTH + 1)).tooDeep, true)
  assert.equal(findMembers('{"a":'.repeat(MAX_DEPTH + 1) + '1' + '}'.repeat(MAX_DEPTH + 1)).tooDeep, true)
  // Before the bound, pointers cost depth x count: the 2x body took 4-5x as long (15 s for 64 KB), so
  // a 4x body would take 16x or more.
  // Numbers just inside the bound as well, so the walk does real work at both sizes.
  const inside = (n: number): string => '['.repeat(MAX_DEPTH - 1) + Array(n).fill('[1.0]').join(',') + ']'.repeat(MAX_DEPTH - 1)
  // The fastest of 11 runs: a busy machine (the suite runs files side by side) only ever adds time,
  // so the fastest is the closest to the walk's own cost; a median moved with the load.
  const cost = (text: string): number => {
    let fastest = Infinity
    for (let i = 0; i < 11; i++) {
      const start = process.hrtime.bigint()
      findMembers(text)
      fastest = Math.min(fastest, Number(process.hrtime.bigint() - start))
    }
    return fastest
  }
  for (const make of [(k: number) => bracketBomb(1000 * k, 1500 * k), (k: number) => inside(3000 * k)]) {
    cost(make(4)) // warm up
    const ratio = cost(make(4)) / cost(make(1))
    // Quadratic is 16x; linear is 4x, measured up to 9.2x in a shard beside other files (its larger
    // heap makes the 4x body's collections dearer): 12x tells the two apart with room for that.
    assert.ok(ratio <= 12, `a body four times as long cost ${ratio.toFixed(2)}x`)
  }
})

describe('bodies nobody reads', () => {
  test('an unknown path and a method a path does not serve are answered before the body is parsed: not-JSON and a bracket bomb get 404 and 405, not a parse error', async (t) => {
    const { app } = await build(t, ENGINES[0])
    for (const payload of ['{not json', bracketBomb(8000, 12000)]) {
      const unknown = await app.inject({ method: 'POST', url: '/nope', headers: json, payload })
      assert.equal(unknown.statusCode, 404)
      assert.equal(unknown.json().type, '/v3/problems/route-not-found')
      assert.ok(unknown.headers['x-request-id'])
      const other = await app.inject({ method: 'POST', url: '/v3/plant/1', headers: json, payload })
      assert.equal(other.statusCode, 405)
      assert.equal(other.json().type, '/v3/problems/method-not-allowed')
      assert.equal(other.headers.allow, 'GET, DELETE, PATCH, HEAD')
    }
  })

  test(`a body nested deeper than ${MAX_DEPTH} levels is invalid input naming the limit, on a route that reads it`, async (t) => {
    const { request } = await build(t, ENGINES[0])
    const res = await request({ method: 'POST', url: '/v3/plant', headers: json, payload: `{"name":"A","tags":${bracketBomb(8000, 12000)}}` })
    assert.equal(res.statusCode, 405)
    assert.equal(res.json().type, '/v3/problems/invalid-input')
    assert.match(res.json().detail, new RegExp(`deeper than ${MAX_DEPTH} levels`))
    const put = await request({ method: 'PUT', url: '/v3/plant', headers: json, payload: `{"id":1,"tags":${'['.repeat(MAX_DEPTH)}${']'.repeat(MAX_DEPTH)}}` })
    assert.equal(put.statusCode, 400)
    assert.match(put.json().detail, /deeper than/)
  })
})

for (const engine of ENGINES) {
  describe(`JSON bodies on ${engine.name}`, { skip: engine.skip }, () => {
    test('a JSON body without Content-Type (or with another) is invalid input on every route that takes one, saying which type to send; add-plant\'s is its 405', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      const routes: Array<['POST' | 'PUT' | 'PATCH', string, string, number]> = [
        ['POST', '/v3/plant', '{"name":"x"}', 405],
        ['PUT', '/v3/plant', `{"id":${plant.id},"name":"x"}`, 400],
        ['POST', `/v3/plant/${plant.id}/revert`, '{"version":1}', 400],
        ['POST', '/v3/plant/batch', '{"operations":[{"op":"delete","id":1}]}', 400],
        ['PUT', `/v3/plant/${plant.id}/photos/order`, '{"order":[]}', 400],
        ['POST', '/v3/keys', '{"name":"till-9","scope":"sell"}', 400],
        ['POST', '/v3/webhooks', '{"url":"https://shop.example/hooks"}', 400]
      ]
      for (const [method, url, payload, status] of routes) {
        for (const headers of [{}, { 'content-type': 'text/plain' }]) {
          const res = await request({ method, url, payload, headers })
          const what = `${method} ${url} ${JSON.stringify(headers)}: ${res.statusCode} ${res.body}`
          assert.equal(res.statusCode, status, what)
          assert.deepEqual([res.json().type, res.json().detail], ['/v3/problems/invalid-input', 'The body must be sent as Content-Type: application/json'], what)
        }
      }
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().name, 'Fern', 'nothing changed')
    })

    test('PUT with the id given twice is refused as invalid input naming /id, and neither plant changes', async (t) => {
      const { request, add } = await build(t, engine)
      const first = await add({ name: 'First' })
      const second = await add({ name: 'Second' })
      const res = await request({ method: 'PUT', url: '/v3/plant', headers: json, payload: `{"id":${first.id},"name":"Changed","id":${second.id}}` })
      assert.equal(res.statusCode, 400)
      assert.equal(res.json().type, '/v3/problems/invalid-input')
      assert.deepEqual(res.json().errors, [{ path: '/id', message: 'is given more than once' }])
      for (const plant of [first, second]) {
        const now = await request({ method: 'GET', url: `/v3/plant/${plant.id}` })
        assert.deepEqual(now.json(), plant)
        assert.equal(now.headers.etag, `"${plant.id}.1"`)
      }
    })

    test('POST with a member given twice (spelt with an escape or not) is refused 405 and creates nothing', async (t) => {
      const { request } = await build(t, engine)
      for (const body of ['{"name":"A","name":"B"}', '{"name":"A","tags":["x"],"t\\u0061gs":["y"]}']) {
        const res = await request({ method: 'POST', url: '/v3/plant', headers: json, payload: body })
        assert.equal(res.statusCode, 405, body)
        assert.equal(res.json().type, '/v3/problems/invalid-input')
        assert.match(res.json().detail, /is given more than once/)
      }
      assert.deepEqual((await request({ method: 'GET', url: '/v3/plant' })).json().items, [])
    })

    test('PUT with an id written 1.0, 1e0 or 1E0 is "Invalid ID supplied" and changes nothing', async (t) => {
      const { request, add } = await build(t, engine)
      const plant = await add({ name: 'Fern' })
      assert.equal(plant.id, 1)
      for (const id of ['1.0', '1e0', '1E0', '0.1e1']) {
        const res = await request({ method: 'PUT', url: '/v3/plant', headers: json, payload: `{"id":${id},"name":"Changed"}` })
        assert.equal(res.statusCode, 400, id)
        assert.equal(res.json().type, '/v3/problems/invalid-id', id)
        assert.deepEqual(res.json().errors, [{ path: '/id', message: 'must be an integer, written without a fraction or exponent' }])
      }
      assert.deepEqual((await request({ method: 'GET', url: '/v3/plant/1' })).json(), plant)
      // 1e2 names no plant either way: still refused as an id, never looked up.
      const hundred = await request({ method: 'PUT', url: '/v3/plant', headers: json, payload: '{"id":1e2,"name":"Changed"}' })
      assert.equal(hundred.json().type, '/v3/problems/invalid-id')
    })

    test('integers in the query string are written in decimal digits: limit=1.0, 1e1, 0x10 and after=1e1 are invalid input', async (t) => {
      const { request, add } = await build(t, engine)
      await add({ name: 'Fern' })
      for (const url of ['/v3/plant?limit=1.0', '/v3/plant?limit=1e1', '/v3/plant?limit=0x10', '/v3/plant/changes?after=1e1']) {
        const res = await request({ method: 'GET', url })
        assert.equal(res.statusCode, 400, url)
        assert.equal(res.json().type, '/v3/problems/invalid-input', url)
        assert.match(res.json().detail, /must be an integer written in decimal digits/, url)
      }
      assert.equal((await request({ method: 'GET', url: '/v3/plant?limit=10' })).json().items.length, 1)
      assert.equal((await request({ method: 'GET', url: '/v3/plant/changes?after=0' })).json().items.length, 1)
    })

    test('text that looks like JSON inside a string is stored as sent', async (t) => {
      const { request } = await build(t, engine)
      const name = 'say "id": 1.0, "name": 2 \\'
      const res = await request({ method: 'POST', url: '/v3/plant', payload: { name, tags: ['a', 'b'] } })
      assert.equal(res.statusCode, 200)
      assert.equal(res.json().name, name)
    })
  })
}
