import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { protectedModeRefusal } from '../../src/http/auth/auth.js'
import { testConfig } from '../../src/config.js'
import { build } from '../helpers/app.js'
import { sqliteEngine } from '../helpers/engines.js'

describe('write authorization', () => {
  test('with API keys, a write without a key is 401 with WWW-Authenticate and changes nothing; reads stay open', async (t) => {
    const { request } = await build(t, sqliteEngine, { apiKeys: ['s3cret-key'] })
    const res = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'a' } })
    assert.equal(res.statusCode, 401)
    assert.match(String(res.headers['www-authenticate']), /^Bearer/)
    assert.match(res.json().type, /unauthorized$/)
    assert.equal((await request({ method: 'GET', url: '/v3/plant' })).statusCode, 200)
    assert.deepEqual((await request({ method: 'GET', url: '/v3/plant' })).json().items, [])
  })

  test('Bearer and the Petstore api_key header both carry a key; a wrong key is 401', async (t) => {
    const { request } = await build(t, sqliteEngine, { apiKeys: ['k-one', 'k-two'] })
    const post = (headers: Record<string, string>) => request({ method: 'POST', url: '/v3/plant', payload: { name: 'a' }, headers })
    assert.equal((await post({ authorization: 'Bearer k-one' })).statusCode, 200)
    assert.equal((await post({ api_key: 'k-two' })).statusCode, 200)
    assert.equal((await post({ authorization: 'Bearer k-three' })).statusCode, 401)
    assert.equal((await post({ authorization: 'Basic k-one' })).statusCode, 401)
    assert.equal((await post({ api_key: 'k-on' })).statusCode, 401)
    const plant = (await post({ authorization: 'Bearer k-one' })).json()
    assert.equal((await request({ method: 'DELETE', url: `/v3/plant/${plant.id}` })).statusCode, 401)
    assert.equal((await request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'b' } })).statusCode, 401)
    assert.equal((await request({ method: 'DELETE', url: `/v3/plant/${plant.id}`, headers: { api_key: 'k-one' } })).statusCode, 204)
  })

  test('Idempotency-Keys are scoped per API key: the same key from another client creates its own plant', async (t) => {
    const { request } = await build(t, sqliteEngine, { apiKeys: ['k-one', 'k-two'] })
    const post = (apiKey: string, name: string) => request({
      method: 'POST', url: '/v3/plant', payload: { name }, headers: { authorization: `Bearer ${apiKey}`, 'idempotency-key': 'order-1' }
    })
    const first = await post('k-one', 'Fern')
    const replay = await post('k-one', 'Fern')
    const other = await post('k-two', 'Cactus')
    assert.equal(first.statusCode, 200)
    assert.deepEqual(replay.json(), first.json())
    assert.equal(other.statusCode, 200)
    assert.notEqual(other.json().id, first.json().id)
    assert.equal(other.json().name, 'Cactus')
    // Within one client the key still refuses another body.
    assert.equal((await post('k-two', 'Palm')).statusCode, 422)
  })

  test('API_KEYS_FILE holds SHA-256 digests of keys, with comments', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'keys-'))
    const file = join(dir, 'keys')
    writeFileSync(file, `# till keys\n${createHash('sha256').update('from-file').digest('hex')}  # shop 1\n`)
    const { request } = await build(t, sqliteEngine, { apiKeysFile: file })
    assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'a' }, headers: { authorization: 'Bearer from-file' } })).statusCode, 200)
    assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'a' }, headers: { authorization: `Bearer ${createHash('sha256').update('from-file').digest('hex')}` } })).statusCode, 401)
  })

  test('the OpenAPI document declares both schemes, each operation\'s scope and 401, with keys or without', async (t) => {
    const keyed = (await (await build(t, sqliteEngine, { apiKeys: ['k'] })).request({ method: 'GET', url: '/v3/openapi.json' })).json()
    const open = (await (await build(t, sqliteEngine)).request({ method: 'GET', url: '/v3/openapi.json' })).json()
    for (const doc of [keyed, open]) {
      assert.deepEqual(Object.keys(doc.components.securitySchemes).sort(), ['apiKeyHeader', 'bearerAuth'])
      for (const op of [doc.paths['/v3/plant'].post, doc.paths['/v3/plant'].put, doc.paths['/v3/plant/{id}'].delete]) {
        assert.deepEqual(op.security, [{ bearerAuth: ['write'] }, { apiKeyHeader: ['write'] }])
        assert.match(op.responses['401'].description, /only when the service has keys/)
        assert.match(op.responses['403'].description, /insufficient-scope/)
      }
      // Reads name `read`, asked for with READS=keys (or checked when a key is sent), and say so.
      const read = doc.paths['/v3/plant/{id}'].get
      assert.deepEqual(read.security, [{ bearerAuth: ['read'] }, { apiKeyHeader: ['read'] }])
      assert.match(read.responses['401'].description, /reads: with READS=keys, or when a key is sent/)
    }
  })

  test('with keys, a method a path does not serve is still 405, not 401', async (t) => {
    const { request } = await build(t, sqliteEngine, { apiKeys: ['k'] })
    assert.equal((await request({ method: 'PATCH', url: '/v3/plant', payload: {} })).statusCode, 405)
  })

  test('protected mode: no keys on a non-loopback address is refused unless anonymous writes are allowed', () => {
    assert.match(String(protectedModeRefusal(testConfig({ host: '0.0.0.0' }), 0)), /ALLOW_ANONYMOUS_WRITES/)
    assert.equal(protectedModeRefusal(testConfig({ host: '0.0.0.0', allowAnonymousWrites: true }), 0), undefined)
    assert.equal(protectedModeRefusal(testConfig({ host: '0.0.0.0' }), 1), undefined)
    assert.equal(protectedModeRefusal(testConfig({ host: '127.0.0.1' }), 0), undefined)
    assert.equal(protectedModeRefusal(testConfig({ host: '::1' }), 0), undefined)
  })
})

describe('abuse limits and headers', () => {
  test('over RATE_LIMIT a client gets 429 with Retry-After and RateLimit headers; health checks are not limited', async (t) => {
    const { request } = await build(t, sqliteEngine, { rateLimit: 4 })
    const codes: number[] = []
    let last
    for (let i = 0; i < 5; i++) {
      last = await request({ method: 'GET', url: '/v3/plant' })
      codes.push(last.statusCode)
    }
    assert.deepEqual(codes, [200, 200, 200, 200, 429])
    assert.ok(Number(last!.headers['retry-after']) > 0)
    assert.equal(last!.headers['ratelimit-limit'], '4')
    assert.match(last!.json().type, /too-many-requests$/)
    assert.equal((await request({ method: 'GET', url: '/healthz' })).statusCode, 200)
    // (the conformance check in build() has already asserted that the document declares these 429s)
  })

  test('no rate limit by default; the document still declares 429, as only when a rate limit is set', async (t) => {
    const { request } = await build(t, sqliteEngine)
    for (let i = 0; i < 30; i++) assert.equal((await request({ method: 'GET', url: '/v3/plant' })).statusCode, 200)
    const doc = (await request({ method: 'GET', url: '/v3/openapi.json' })).json()
    assert.match(doc.paths['/v3/plant'].get.responses['429'].description, /only when a rate limit is set/)
  })

  test('CORS is off by default and on for the listed origins only', async (t) => {
    const off = await build(t, sqliteEngine)
    const plain = await off.request({ method: 'GET', url: '/v3/plant', headers: { origin: 'https://shop.example' } })
    assert.equal(plain.headers['access-control-allow-origin'], undefined)
    const on = await build(t, sqliteEngine, { corsOrigins: ['https://shop.example'] })
    const allowed = await on.request({ method: 'GET', url: '/v3/plant', headers: { origin: 'https://shop.example' } })
    assert.equal(allowed.headers['access-control-allow-origin'], 'https://shop.example')
    const other = await on.request({ method: 'GET', url: '/v3/plant', headers: { origin: 'https://evil.example' } })
    assert.equal(other.headers['access-control-allow-origin'], undefined)
    const preflight = await on.app.inject({
      method: 'OPTIONS', url: '/v3/plant', headers: { origin: 'https://shop.example', 'access-control-request-method': 'PUT' }
    })
    assert.equal(preflight.statusCode, 204)
    assert.equal(preflight.headers['access-control-allow-origin'], 'https://shop.example')
  })

  test('security headers: nosniff everywhere, no server banner, no-store on writes and errors', async (t) => {
    const { request } = await build(t, sqliteEngine)
    const write = await request({ method: 'POST', url: '/v3/plant', payload: { name: 'a' } })
    const error = await request({ method: 'GET', url: '/v3/plant/999' })
    const read = await request({ method: 'GET', url: `/v3/plant/${write.json().id}` })
    for (const res of [write, error, read]) {
      assert.equal(res.headers['x-content-type-options'], 'nosniff')
      assert.equal(res.headers.server, undefined)
      assert.equal(res.headers['x-powered-by'], undefined)
    }
    assert.equal(write.headers['cache-control'], 'no-store')
    assert.equal(error.headers['cache-control'], 'no-store')
  })
})

describe('behind a proxy', () => {
  test('with TRUST_PROXY the rate limit counts the client named by X-Forwarded-For, not the proxy', async (t) => {
    const { request } = await build(t, sqliteEngine, { rateLimit: 2, trustProxy: ['127.0.0.1'] })
    const from = (client: string) => request({ method: 'GET', url: '/v3/plant', remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': client } })
    assert.equal((await from('203.0.113.1')).statusCode, 200)
    assert.equal((await from('203.0.113.1')).statusCode, 200)
    assert.equal((await from('203.0.113.1')).statusCode, 429)
    assert.equal((await from('203.0.113.2')).statusCode, 200, 'another client behind the same proxy has its own budget')
  })
})
