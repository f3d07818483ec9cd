import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

const names = async (api: TestApp, query: string): Promise<string[]> => {
  const res = await api.request({ method: 'GET', url: `/v3/plant?${query}` })
  assert.equal(res.statusCode, 200, `${query}: ${res.body}`)
  return res.json().items.map((p: { name: string }) => p.name)
}

const refusal = async (api: TestApp, query: string): Promise<[number, string, string[]]> => {
  const res = await api.request({ method: 'GET', url: `/v3/plant?${query}` })
  const body = res.json()
  return [res.statusCode, String(body.type).split('/').pop()!, (body.errors ?? []).map((e: { path: string }) => e.path)]
}

for (const engine of ENGINES) {
  describe(`finding plants (GET /v3/plant, GET /v3/store/inventory) on ${engine.name}`, { skip: engine.skip }, () => {
    test('status may repeat: plants with any of the statuses given', async (t) => {
      const api = await build(t, engine)
      await api.add({ name: 'A', status: 'available' })
      await api.add({ name: 'P', status: 'pending' })
      await api.add({ name: 'S', status: 'sold' })
      assert.deepEqual(await names(api, 'status=pending&status=sold'), ['P', 'S'])
      assert.deepEqual(await names(api, 'status=sold'), ['S'])
      assert.deepEqual(await names(api, 'status=sold&status=available&status=pending'), ['A', 'P', 'S'])
      assert.deepEqual(await refusal(api, 'status=sold&status=gone'), [400, 'invalid-input', ['/status/1']])
    })

    test('q: the name contains every term, ignoring case, substrings included', async (t) => {
      const api = await build(t, engine)
      await api.add({ name: 'Monstera deliciosa' })
      await api.add({ name: 'Monstera adansonii' })
      await api.add({ name: 'Ficus' })
      assert.deepEqual(await names(api, 'q=MONST%20era'), ['Monstera deliciosa', 'Monstera adansonii'])
      assert.deepEqual(await names(api, 'q=stera'), ['Monstera deliciosa', 'Monstera adansonii'])
      assert.deepEqual(await names(api, 'q=monstera%20DELI'), ['Monstera deliciosa'])
      assert.deepEqual(await names(api, 'q=%20%20deli%20%20'), ['Monstera deliciosa'])
      assert.deepEqual(await names(api, 'q=monstera%20ficus'), [])
      // LIKE and FTS syntax mean nothing: they are characters of a name.
      await api.add({ name: '100% "pure" a_b' })
      assert.deepEqual(await names(api, 'q=00%25%20%22pure%22'), ['100% "pure" a_b'])
      assert.deepEqual(await names(api, 'q=a_b'), ['100% "pure" a_b'])
      assert.deepEqual(await names(api, 'q=a%25b'), [])
    })

    test('q ignores accents: "cafe" and "CAFÉ" find "Café" and "Cafe"; a decomposed accent too; "ø" is a letter of its own', async (t) => {
      const api = await build(t, engine)
      await api.add({ name: 'Café plant' })
      await api.add({ name: 'Cafe plant' })
      await api.add({ name: 'Cafe\u0301 decomposed' })
      await api.add({ name: 'Søren\'s fern' })
      const both = ['Café plant', 'Cafe plant', 'Cafe\u0301 decomposed']
      assert.deepEqual(await names(api, 'q=cafe'), both)
      assert.deepEqual(await names(api, 'q=CAF%C3%89'), both)
      assert.deepEqual(await names(api, 'q=cafe%CC%81'), both)
      assert.deepEqual(await names(api, 'q=d%C3%A9c'), ['Cafe\u0301 decomposed'])
      assert.deepEqual(await names(api, 'q=%C3%89%20caf'), []) // "é" is short: no word starts with e
      assert.deepEqual(await names(api, 'q=%C3%A9'), []) // "é" is short: no word starts with e
      assert.deepEqual(await names(api, 'q=s%C3%B8r'), ["Søren's fern"])
      assert.deepEqual(await names(api, 'q=sor'), [])
    })

    test('q refusals name the rule and /q: a term of accents alone, too many terms, too long', async (t) => {
      const api = await build(t, engine)
      // A term of accents alone folds to nothing.
      assert.deepEqual(await refusal(api, 'q=%CC%81'), [400, 'invalid-input', ['/q']])
      assert.deepEqual(await refusal(api, 'q=abc%20%CC%81%CC%88'), [400, 'invalid-input', ['/q']])
      assert.deepEqual(await refusal(api, 'q=aaa%20bbb%20ccc%20ddd%20eee%20fff'), [400, 'invalid-input', ['/q']])
      assert.deepEqual(await refusal(api, `q=${'a'.repeat(101)}`), [400, 'invalid-input', ['/q']])
      const res = await api.request({ method: 'GET', url: '/v3/plant?q=%CC%81' })
      assert.match(res.json().detail, /other than an accent/)
      // Five terms of three characters, 100 characters: accepted.
      assert.equal((await api.request({ method: 'GET', url: '/v3/plant?q=aaa%20bbb%20ccc%20ddd%20eee' })).statusCode, 200)
      assert.equal((await api.request({ method: 'GET', url: `/v3/plant?q=${'a'.repeat(100)}` })).statusCode, 200)
    })

    test('sort=name orders names folded (case, accents, compatibility forms) by code point, ties by id; -name reverses both', async (t) => {
      const api = await build(t, engine)
      // U+1F33F sorts after U+00F8 by code point, though its UTF-16 units (D83C) sort before; the
      // full-width Ａ is "a", Ä is "a", ø has no decomposition and stays after z.
      const added = []
      for (const name of ['banana', 'Apple', '\u{1F33F} herb', '\uff21 wide', 'apple', 'Äpfel', 'cherry', 'ørsted']) added.push(await api.add({ name }))
      assert.deepEqual(await names(api, 'sort=name'), ['\uff21 wide', 'Äpfel', 'Apple', 'apple', 'banana', 'cherry', 'ørsted', '\u{1F33F} herb'])
      assert.deepEqual(await names(api, 'sort=-name'), ['\u{1F33F} herb', 'ørsted', 'cherry', 'banana', 'apple', 'Apple', 'Äpfel', '\uff21 wide'])
      assert.deepEqual(await names(api, 'sort=-id'), [...added].reverse().map((p) => p.name))
      // Paged one plant at a time, the walk is the same.
      const walked: string[] = []
      let cursor = ''
      for (;;) {
        const page = (await api.request({ method: 'GET', url: `/v3/plant?sort=name&limit=1${cursor}` })).json()
        walked.push(...page.items.map((p: { name: string }) => p.name))
        if (page.nextCursor === null) break
        cursor = `&cursor=${page.nextCursor}`
      }
      assert.deepEqual(walked, await names(api, 'sort=name'))
      assert.deepEqual(await refusal(api, 'sort=cost'), [400, 'invalid-input', ['/sort']])
    })

    test('every filter combines with q and sort', async (t) => {
      const api = await build(t, engine)
      await api.add({ name: 'Fern b', tags: ['shade', 'small'], category: 'indoor', status: 'available' })
      await api.add({ name: 'Fern a', tags: ['shade'], category: 'indoor', status: 'pending' })
      await api.add({ name: 'Fern c', tags: ['shade', 'small'], category: 'outdoor', status: 'sold' })
      await api.add({ name: 'Palm', tags: ['shade', 'small'], category: 'indoor', status: 'available' })
      assert.deepEqual(await names(api, 'q=fern&tag=shade&sort=name'), ['Fern a', 'Fern b', 'Fern c'])
      assert.deepEqual(await names(api, 'q=fern&tag=small&tag=shade&sort=-name'), ['Fern c', 'Fern b'])
      assert.deepEqual(await names(api, 'q=fern&category=indoor&status=pending&status=available&sort=name'), ['Fern a', 'Fern b'])
      assert.deepEqual(await names(api, 'tag=small&status=available&sort=-id'), ['Palm', 'Fern b'])
    })

    test('a cursor is bound to its sort and filters: with others it is refused 400 naming /cursor', async (t) => {
      const api = await build(t, engine)
      for (let i = 0; i < 4; i++) await api.add({ name: `Fern ${i}`, tags: ['t'], status: 'sold' })
      const first = (await api.request({ method: 'GET', url: '/v3/plant?q=fern&sort=name&tag=t&limit=2' })).json()
      assert.equal(typeof first.nextCursor, 'string')
      const cursor = `cursor=${first.nextCursor}`
      assert.equal((await api.request({ method: 'GET', url: `/v3/plant?tag=t&sort=name&q=FERN&limit=3&${cursor}` })).statusCode, 200)
      for (const other of ['q=fern&sort=-name&tag=t', 'q=fern&sort=name', 'q=fern&sort=name&tag=t&status=sold', 'sort=name&tag=t', 'q=fern&tag=t', 'q=fern&sort=name&tag=t&category=x']) {
        const [status, type, paths] = await refusal(api, `${other}&${cursor}`)
        assert.deepEqual([status, type, paths], [400, 'invalid-input', ['/cursor']], other)
      }
      assert.deepEqual(await refusal(api, 'cursor=bm9wZQ'), [400, 'invalid-input', ['/cursor']])
      assert.deepEqual(await refusal(api, `cursor=${'x'.repeat(2049)}`), [400, 'invalid-input', ['/cursor']])
      assert.deepEqual(await refusal(api, 'search=fern'), [400, 'invalid-input', ['/search']])
    })

    test('the inventory counts each status, all three keys and the units always present, and follows every kind of write', async (t) => {
      const api = await build(t, engine)
      const inventory = async (): Promise<unknown> => (await api.request({ method: 'GET', url: '/v3/store/inventory' })).json()
      assert.deepEqual(await inventory(), { available: 0, pending: 0, sold: 0, units: { onHand: 0, reserved: 0, available: 0 } })
      const a = await api.add({ name: 'A' })
      // Like every read of plants, it says which change of the feed it reflects.
      assert.equal((await api.request({ method: 'GET', url: '/v3/store/inventory' })).headers['feed-position'], '1')
      const b = await api.add({ name: 'B', status: 'pending' })
      assert.deepEqual(await inventory(), { available: 1, pending: 1, sold: 0, units: { onHand: 0, reserved: 0, available: 0 } })
      await api.request({ method: 'PUT', url: '/v3/plant', payload: { id: a.id, name: 'A', status: 'sold' } })
      await api.request({ method: 'PATCH', url: `/v3/plant/${b.id}`, payload: { status: 'sold' } })
      assert.deepEqual(await inventory(), { available: 0, pending: 0, sold: 2, units: { onHand: 0, reserved: 0, available: 0 } })
      await api.request({ method: 'DELETE', url: `/v3/plant/${a.id}` })
      // Refused writes change nothing.
      await api.request({ method: 'PATCH', url: `/v3/plant/${a.id}`, payload: { status: 'pending' } })
      await api.request({ method: 'PUT', url: '/v3/plant', headers: { 'if-match': '"0.0"' }, payload: { id: b.id, name: 'B', status: 'pending' } })
      assert.deepEqual(await inventory(), { available: 0, pending: 0, sold: 1, units: { onHand: 0, reserved: 0, available: 0 } })
      // Each new route has its own latency series in /metrics.
      const metrics = (await api.request({ method: 'GET', url: '/metrics' })).body
      assert.match(metrics, /http_request_duration_seconds_count\{method="GET",route="\/v3\/store\/inventory",status_code="200"\} \d+/)
      assert.match(metrics, /http_request_duration_seconds_count\{method="PATCH",route="\/v3\/plant\/:id",status_code="200"\} 1/)
    })
  })
}
