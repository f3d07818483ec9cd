import assert from 'node:assert/strict'
import sharp from 'sharp'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { describe, test } from 'node:test'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

const engine = ENGINES[0]

describe('findings of a shop-front developer trying the API by hand', () => {
  test('a one-value query parameter given twice is named as given twice, not as a bad value', async (t) => {
    const { request } = await build(t, engine)
    for (const [url, path] of [['/v3/plant?sort=name&sort=id', '/sort'], ['/v3/plant?limit=10&limit=20', '/limit'],
      ['/v3/plant?q=fern&q=palm', '/q'], ['/v3/plant/changes?after=0&after=1', '/after']]) {
      const res = await request({ method: 'GET', url })
      assert.equal(res.statusCode, 400, url)
      assert.deepEqual(res.json().errors, [{ path, message: 'is given more than once' }], url)
    }
    // Repeatable parameters still repeat.
    const listed = await request({ method: 'GET', url: '/v3/plant?status=sold&status=pending&tag=a&tag=b' })
    assert.equal(listed.statusCode, 200)
  })
})

describe('Last-Event-ID mistakes are answered like every other field', () => {
  test('not digits, or too large: a message that says the fix, with the field in errors', async (t) => {
    const { request } = await build(t, engine)
    const bad = await request({ method: 'GET', url: '/v3/plant/events', headers: { 'last-event-id': 'abc' } })
    assert.equal(bad.statusCode, 400)
    assert.deepEqual(bad.json().errors, [{ path: '/last-event-id', message: 'must be a sequence number written in decimal digits, without leading zeros' }])
    const large = await request({ method: 'GET', url: '/v3/plant/events', headers: { 'last-event-id': '9999999999999999' } })
    assert.equal(large.statusCode, 400)
    assert.equal(large.json().detail, `headers /last-event-id must be at most ${Number.MAX_SAFE_INTEGER}`)
    assert.deepEqual(large.json().errors, [{ path: '/last-event-id', message: `must be at most ${Number.MAX_SAFE_INTEGER}` }])
  })
})

describe('a position is spelt one way, in the header and the query alike', () => {
  test('Last-Event-ID: 00017 and ?after=00017 are both refused for the leading zeros; 17 and 0 are taken by both', async (t) => {
    const { request } = await build(t, engine)
    const byHeader = await request({ method: 'HEAD', url: '/v3/plant/events', headers: { 'last-event-id': '00017' } })
    const byQuery = await request({ method: 'HEAD', url: '/v3/plant/events?after=00017' })
    assert.deepEqual([byHeader.statusCode, byQuery.statusCode], [400, 400])
    const header = await request({ method: 'GET', url: '/v3/plant/events', headers: { 'last-event-id': '00017' } })
    assert.match(header.json().detail, /last-event-id must be a sequence number written in decimal digits, without leading zeros/)
    const query = await request({ method: 'GET', url: '/v3/plant/changes?after=00017' })
    assert.match(query.json().detail, /after must be an integer written in decimal digits, without leading zeros/)
    for (const position of ['0', '17']) {
      // 17 is beyond the head of an empty feed: 410 by header and by query, the same answer.
      const expected = position === '0' ? 200 : 410
      assert.equal((await request({ method: 'HEAD', url: '/v3/plant/events', headers: { 'last-event-id': position } })).statusCode, expected)
      assert.equal((await request({ method: 'HEAD', url: `/v3/plant/events?after=${position}` })).statusCode, expected)
    }
  })
})

describe('unknown query parameters are refused on every operation', () => {
  test('a write, a read by id, the inventory and the index refuse ?x=1 and do nothing', async (t) => {
    const { request, add } = await build(t, engine)
    const plant = await add({ name: 'Fern' })
    const json = { 'content-type': 'application/json' }
    const cases: Array<[string, string, string | undefined, number]> = [
      ['DELETE', `/v3/plant/${plant.id}?dryRun=true`, undefined, 400],
      ['POST', '/v3/plant?dryRun=true', '{"name":"Palm"}', 405], // add-plant answers invalid input 405
      ['PATCH', `/v3/plant/${plant.id}?x=1`, '{"status":"sold"}', 400],
      ['GET', `/v3/plant/${plant.id}?x=1`, undefined, 400],
      ['GET', '/v3/store/inventory?x=1', undefined, 400],
      ['GET', '/v3?x=1', undefined, 400]
    ]
    for (const [method, url, payload, status] of cases) {
      const res = await request({ method: method as 'GET', url, payload, headers: payload ? json : {} })
      assert.equal(res.statusCode, status, `${method} ${url}`)
      assert.deepEqual(res.json().errors, [{ path: `/${url.split('?')[1].split('=')[0]}`, message: 'is not a known field' }], `${method} ${url}`)
    }
    const after = await request({ method: 'GET', url: `/v3/plant/${plant.id}` })
    assert.equal(after.statusCode, 200)
    assert.equal(after.json().status, 'available')
    assert.equal((await request({ method: 'GET', url: '/v3/plant' })).json().items.length, 1)
  })
})

describe('docs/tools.md', () => {
  test('the typed client example compiles against the generated client', async () => {
    const ts = (await import('typescript')).default
    const text = await readFile(new URL('../../docs/tools.md', import.meta.url), 'utf8')
    const snippet = /```ts\n([\s\S]*?)```/.exec(text)![1]
      .replace("'./src/client/plant-client.js'", "'../../src/client/plant-client.js'") + '\nexport {}\n'
    const file = fileURLToPath(new URL('./tools-md-snippet.generated.ts', import.meta.url))
    await writeFile(file, snippet)
    try {
      const program = ts.createProgram([file], {
        target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, strict: true, skipLibCheck: true, noEmit: true
      })
      const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))
      assert.deepEqual(errors, [])
    } finally {
      await rm(file)
    }
  })
})

describe('PATCH with the wrong Content-Type', () => {
  test('names the merge patch type it takes', async (t) => {
    const { request, add } = await build(t, engine)
    const plant = await add({ name: 'Fern' })
    const res = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: '{"status":"sold"}', headers: { 'content-type': 'text/plain' } })
    assert.equal(res.statusCode, 400)
    assert.equal(res.json().detail, 'The body must be sent as Content-Type: application/merge-patch+json (or application/json)')
    const post = await request({ method: 'POST', url: '/v3/plant', payload: '{"name":"Palm"}', headers: { 'content-type': 'text/plain' } })
    assert.equal(post.json().detail, 'The body must be sent as Content-Type: application/json')
  })
})

describe('the Location of an uploaded photo', () => {
  test('can be read: GET answers the photo, 404 once it is deleted', async (t) => {
    const { request, add } = await build(t, engine)
    const plant = await add({ name: 'Fern' })
    const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: { r: 0, g: 128, b: 0 } } }).png().toBuffer()
    const up = await request({ method: 'POST', url: `/v3/plant/${plant.id}/photos`, payload: png, headers: { 'content-type': 'image/png' } })
    assert.equal(up.statusCode, 201)
    const location = up.headers.location as string
    const got = await request({ method: 'GET', url: location })
    assert.equal(got.statusCode, 200)
    assert.deepEqual(got.json(), up.json())
    assert.equal((await request({ method: 'DELETE', url: location })).statusCode, 204)
    const gone = await request({ method: 'GET', url: location })
    assert.equal(gone.statusCode, 404)
    assert.match(gone.json().type, /photo-not-found$/)
  })
})

describe('the docs page', () => {
  test('is titled after the service, not "Swagger UI"', async (t) => {
    const { app } = await build(t, engine)
    const page = await app.inject({ method: 'GET', url: '/v3/docs/' })
    assert.equal(page.statusCode, 200)
    assert.match(page.body, /<title>Plant catalogue API<\/title>/)
  })
})

describe('a bad Idempotency-Key', () => {
  test('is answered with the rule in words, not a regular expression', async (t) => {
    const { request } = await build(t, engine)
    for (const key of ['a'.repeat(256), 'till 7', 'café']) {
      const res = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern' }, headers: { 'idempotency-key': key } })
      assert.equal(res.statusCode, 405, key)
      assert.deepEqual(res.json().errors, [{ path: '/idempotency-key', message: 'must be 1–255 printable ASCII characters, without spaces' }], key)
    }
  })
})

describe('a query on probes and photo files', () => {
  test('is ignored: a health check or an image loader adding one still gets its answer', async (t) => {
    const { request } = await build(t, engine)
    assert.equal((await request({ method: 'GET', url: '/healthz?probe=1' })).statusCode, 200)
    assert.equal((await request({ method: 'GET', url: '/readyz?probe=1' })).statusCode, 200)
  })
})
