import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { loadConfig } from '../../src/config.js'
import { sqliteEngine } from '../helpers/engines.js'

async function service (t: import('node:test').TestContext, env: Record<string, string>) {
  const store = await sqliteEngine.open()
  const app = await buildApp({ ...loadConfig({ DATA_DIR: ':memory:', ...env }), logLevel: 'silent' }, { store })
  t.after(async () => { await app.close(); await store.close() })
  return app
}

describe('TRUST_PROXY and the rate limit', () => {
  test('behind a trusted proxy, a client rotating its own X-Forwarded-For is still one client: the proxy appends the real address on the right', async (t) => {
    const app = await service(t, { TRUST_PROXY: '127.0.0.1', RATE_LIMIT: '3' })
    const statuses: number[] = []
    for (let i = 0; i < 5; i++) {
      // What the client wrote, then what the proxy (127.0.0.1, the injected peer) appended.
      const res = await app.inject({ method: 'GET', url: '/v3/plant/1', headers: { 'x-forwarded-for': `10.0.${i}.1, 203.0.113.9` } })
      statuses.push(res.statusCode)
    }
    assert.deepEqual(statuses, [404, 404, 404, 429, 429])
    // Another real client behind the same proxy has a budget of its own.
    const other = await app.inject({ method: 'GET', url: '/v3/plant/1', headers: { 'x-forwarded-for': '10.0.0.1, 203.0.113.10' } })
    assert.equal(other.statusCode, 404)
  })

  test('a peer that is not a named proxy is the client, whatever X-Forwarded-For it sends', async (t) => {
    const app = await service(t, { TRUST_PROXY: '10.0.0.0/8', RATE_LIMIT: '2' })
    const statuses: number[] = []
    for (let i = 0; i < 4; i++) {
      const res = await app.inject({ method: 'GET', url: '/v3/plant/1', remoteAddress: '198.51.100.4', headers: { 'x-forwarded-for': `192.0.2.${i}` } })
      statuses.push(res.statusCode)
    }
    assert.deepEqual(statuses, [404, 404, 429, 429])
  })
})

describe('what the rate limit counts', () => {
  test('a refused key (401) and an unknown path (404) count like any request: guessing either is throttled', async (t) => {
    const app = await service(t, { RATE_LIMIT: '3', API_KEYS: 'k'.repeat(32) })
    const guesses: number[] = []
    for (let i = 0; i < 5; i++) {
      const res = await app.inject({ method: 'POST', url: '/v3/plant', remoteAddress: '198.51.100.1', headers: { authorization: `Bearer guess-${i}-${'g'.repeat(24)}` }, payload: { name: 'x' } })
      guesses.push(res.statusCode)
    }
    assert.deepEqual(guesses, [401, 401, 401, 429, 429])
    const paths: number[] = []
    for (const [method, url] of [['GET', '/v3/nope'], ['GET', '/admin'], ['POST', '/v3/plants'], ['GET', '/.env'], ['DELETE', '/x']] as const) {
      paths.push((await app.inject({ method, url, remoteAddress: '198.51.100.2' })).statusCode)
    }
    assert.deepEqual(paths, [404, 404, 404, 429, 429])
    const refused = await app.inject({ method: 'GET', url: '/v3/anything', remoteAddress: '198.51.100.2' })
    assert.match(refused.json().type, /too-many-requests$/)
    assert.ok(Number(refused.headers['retry-after']) > 0)
    // The probes stay outside the limit.
    assert.equal((await app.inject({ method: 'GET', url: '/healthz', remoteAddress: '198.51.100.2' })).statusCode, 200)
  })
})

describe('the docs page', () => {
  test('/v3/docs and its assets carry a Content-Security-Policy of their own origin only and X-Frame-Options: DENY', async (t) => {
    const app = await service(t, {})
    for (const url of ['/v3/docs/', '/v3/docs/static/swagger-initializer.js', '/v3/docs/static/index.css']) {
      const res = await app.inject({ method: 'GET', url })
      assert.equal(res.statusCode, 200, url)
      assert.equal(res.headers['x-frame-options'], 'DENY', url)
      const csp = String(res.headers['content-security-policy'])
      for (const directive of ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'"]) {
        assert.ok(csp.includes(directive), `${url}: ${csp} lacks ${directive}`)
      }
      const script = csp.split(';').find((d) => d.trim().startsWith('script-src '))
      assert.equal(script?.trim(), "script-src 'self'", url)
      assert.doesNotMatch(csp, /unsafe-eval|https:|\*/, url)
    }
  })
})
