import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import { chromium } from 'playwright-core'
import { listenOn } from '../../scripts/lib/listening-service.js'
import { build } from '../helpers/app.js'
import { sqliteEngine } from '../helpers/engines.js'
import { SseClient } from '../helpers/sse.js'

// Debian's Chromium, installed by .ci/run when missing. Without it the browser test says so as a skip.
const CHROMIUM = '/usr/bin/chromium'
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync']
const SHOP = 'https://shop.example'
const headerList = (value: unknown): string[] => String(value ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean)

test('a CORS preflight allows every method and request header the API uses, and answers expose the headers clients read', async (t) => {
  const { app } = await build(t, sqliteEngine, { corsOrigins: [SHOP] })
  for (const url of ['/v3/plant', '/v3/plant/1']) {
    const preflight = await app.inject({
      method: 'OPTIONS',
      url,
      headers: { origin: SHOP, 'access-control-request-method': 'DELETE', 'access-control-request-headers': 'if-match, authorization' }
    })
    assert.equal(preflight.statusCode, 204)
    assert.equal(preflight.headers['access-control-allow-origin'], SHOP)
    const methods = headerList(preflight.headers['access-control-allow-methods'])
    for (const method of ['get', 'head', 'post', 'put', 'patch', 'delete']) assert.ok(methods.includes(method), `${url}: preflight allows ${method}`)
    const allowed = headerList(preflight.headers['access-control-allow-headers'])
    for (const name of ['if-match', 'if-none-match', 'idempotency-key', 'authorization', 'api_key', 'content-type', 'last-event-id']) {
      assert.ok(allowed.includes(name), `${url}: preflight allows the ${name} header`)
    }
    assert.ok(Number(preflight.headers['access-control-max-age']) > 0, 'browsers may cache the preflight')
  }
  const read = await app.inject({ method: 'GET', url: '/v3/plant', headers: { origin: SHOP } })
  const exposed = headerList(read.headers['access-control-expose-headers'])
  for (const name of ['etag', 'location', 'feed-position', 'retry-after', 'x-request-id', 'idempotent-replayed']) assert.ok(exposed.includes(name), `exposes ${name}`)
})

test('the event stream carries the same CORS headers as every other answer, so EventSource works from an allowed origin', async (t) => {
  const service = await listenOn(':memory:', { corsOrigins: [SHOP] })
  t.after(() => service.close())
  const plain = await fetch(`${service.url}/v3/plant`, { headers: { origin: SHOP } })
  const stream = await SseClient.connect(`${service.url}/v3/plant/events`, { origin: SHOP })
  t.after(() => stream.close())
  assert.equal(stream.status, 200)
  assert.equal(stream.headers['content-type'], 'text/event-stream; charset=utf-8')
  for (const name of ['access-control-allow-origin', 'access-control-expose-headers', 'vary']) {
    assert.equal(stream.headers[name], plain.headers.get(name) ?? undefined, `the stream's ${name} is the list's`)
  }
  assert.equal(stream.headers['access-control-allow-origin'], SHOP)
})

/** A page served from its own origin (another port of the loopback), as a shop front would be. */
async function pageOrigin (t: TestContext): Promise<string> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<!doctype html><title>Shop front</title>'))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

test('a page on another origin adds, updates and deletes a plant with If-Match and Authorization, and reads the ETag, in a real browser', {
  skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed (apt-get install chromium)`,
  timeout: 120_000
}, async (t) => {
  const shop = await pageOrigin(t)
  const stranger = await pageOrigin(t)
  const service = await listenOn(':memory:', { corsOrigins: [shop], apiKeys: ['till-key'] })
  t.after(() => service.close())
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS })
  t.after(() => browser.close())
  const page = await browser.newPage()
  await page.goto(shop)

  // Runs in the page: every request below is cross-origin, so each write is preceded by a preflight.
  const seen = await page.evaluate(async (api) => {
    const auth = { authorization: 'Bearer till-key' }
    const added = await fetch(`${api}/v3/plant`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': 'shop-1' },
      body: JSON.stringify({ name: 'Monstera', tags: ['large'] })
    })
    const plant = await added.json()
    const etag = added.headers.get('etag')
    const read = await fetch(`${api}/v3/plant/${String(plant.id)}`)
    const put = await fetch(`${api}/v3/plant`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/json', 'if-match': etag ?? '' },
      body: JSON.stringify({ id: plant.id, name: 'Monstera deliciosa', tags: ['large'], status: 'sold' })
    })
    const stale = await fetch(`${api}/v3/plant`, {
      method: 'PUT',
      headers: { ...auth, 'content-type': 'application/json', 'if-match': etag ?? '' },
      body: JSON.stringify({ id: plant.id, name: 'Lost update' })
    })
    const del = await fetch(`${api}/v3/plant/${String(plant.id)}`, { method: 'DELETE', headers: { ...auth, 'if-match': put.headers.get('etag') ?? '' } })
    return {
      added: { status: added.status, etag, location: added.headers.get('location'), requestId: added.headers.get('x-request-id') },
      feedPosition: read.headers.get('feed-position'),
      put: { status: put.status, etag: put.headers.get('etag'), body: await put.json() },
      stale: { status: stale.status, requestId: stale.headers.get('x-request-id') },
      deleted: del.status
    }
  }, service.url)

  assert.equal(seen.added.status, 200)
  assert.match(seen.added.etag ?? '', /^"\d+\.1"$/, 'the page reads the ETag')
  assert.match(seen.added.location ?? '', /^\/v3\/plant\/\d+$/)
  assert.ok(seen.added.requestId)
  assert.equal(seen.feedPosition, '1', 'the page reads Feed-Position')
  assert.equal(seen.put.status, 200)
  assert.match(seen.put.etag ?? '', /^"\d+\.2"$/)
  assert.equal(seen.put.body.status, 'sold')
  assert.equal(seen.stale.status, 412, 'the stale If-Match reached the service')
  assert.ok(seen.stale.requestId)
  assert.equal(seen.deleted, 204)
  assert.equal((await fetch(`${service.url}/v3/plant/1`)).status, 404, 'the delete really happened')

  // An origin that is not configured gets nothing: the browser refuses to hand over the answer.
  await page.goto(stranger)
  const refused = await page.evaluate(async (api) => {
    try {
      await fetch(`${api}/v3/plant`)
      return 'answered'
    } catch (err) {
      return (err as Error).name
    }
  }, service.url)
  assert.equal(refused, 'TypeError')
})
