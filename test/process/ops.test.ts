import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { ConfigError, loadConfig, testConfig } from '../../src/config.js'
import { StorageUnavailable } from '../../src/catalogue/errors.js'
import { overriding } from '../helpers/overriding.js'
import { build } from '../helpers/app.js'
import { sqliteEngine } from '../helpers/engines.js'
import { freePort, ROOT, serviceCommand, serviceEnv } from '../helpers/process.js'

describe('operations', () => {
  test('/healthz answers 200 while the process lives', async (t) => {
    const { request } = await build(t, sqliteEngine)
    const res = await request({ method: 'GET', url: '/healthz' })
    assert.equal(res.statusCode, 200)
    assert.deepEqual(res.json(), { status: 'ok' })
  })

  test('/readyz answers 200 when storage answers, 503 with Retry-After when it does not, and 503 while draining', async (t) => {
    const store = await sqliteEngine.open()
    let down = false
    const flaky = overriding(store, {
      ping: async () => { if (down) throw new StorageUnavailable('down'); return store.ping() }
    })
    const app = await buildApp(testConfig(), { store: flaky })
    t.after(async () => { await app.close(); await store.close() })
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
    down = true
    const res = await app.inject({ method: 'GET', url: '/readyz' })
    assert.equal(res.statusCode, 503)
    assert.equal(res.headers['retry-after'], '1')
    assert.match(res.json().type, /storage-unavailable$/)
    down = false
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
    app.readiness.draining = true
    assert.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 503)
  })

  test('a storage outage on a write answers 503 with Retry-After in the contract shape, never a 500', async (t) => {
    const store = await sqliteEngine.open()
    const broken = overriding(store, {
      create: async () => { throw new StorageUnavailable('disk full') }
    })
    const app = await buildApp(testConfig(), { store: broken })
    t.after(async () => { await app.close(); await store.close() })
    const res = await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'a' } })
    assert.equal(res.statusCode, 503)
    assert.equal(res.headers['retry-after'], '1')
    assert.equal(res.json().status, 503)
    assert.ok(!res.body.includes('disk full'), 'storage detail is not sent')
  })

  test('an unexpected error answers 500 without its message, stack or SQL', async (t) => {
    const store = await sqliteEngine.open()
    const broken = overriding(store, {
      get: async () => { throw new Error('SELECT secret FROM plants at /srv/app/store.ts:12') }
    })
    const app = await buildApp(testConfig(), { store: broken })
    t.after(async () => { await app.close(); await store.close() })
    const res = await app.inject({ method: 'GET', url: '/v3/plant/1' })
    assert.equal(res.statusCode, 500)
    assert.match(res.json().type, /internal$/)
    assert.ok(!/SELECT|store\.ts|secret/.test(res.body), res.body)
  })

  test('/metrics serves Prometheus text with request counts and latency by route and status', async (t) => {
    const { request } = await build(t, sqliteEngine)
    await request({ method: 'POST', url: '/v3/plant', payload: { name: 'a' } })
    await request({ method: 'GET', url: '/v3/plant/999' })
    await request({ method: 'GET', url: '/v3/plant/999' })
    await request({ method: 'GET', url: '/no/such/path' })
    const res = await request({ method: 'GET', url: '/metrics' })
    assert.equal(res.statusCode, 200)
    assert.match(String(res.headers['content-type']), /^text\/plain/)
    assert.match(res.body, /http_request_duration_seconds_count\{method="POST",route="\/v3\/plant",status_code="200"\} 1/)
    assert.match(res.body, /http_request_duration_seconds_bucket\{le="0.005",method="GET",route="\/v3\/plant\/:id",status_code="404"\} \d/)
    assert.match(res.body, /http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/v3\/plant\/:id",status_code="404"\} 2\n/)
    assert.match(res.body, /http_request_duration_seconds_sum\{method="GET",route="\/v3\/plant\/:id",status_code="404"\} 0\.\d+/)
    assert.match(res.body, /http_request_duration_seconds_count\{method="GET",route="unmatched",status_code="404"\} 1\n/)
    // Buckets are cumulative: each le counts at least what the one before it does.
    const buckets = [...res.body.matchAll(/_bucket\{le="([^"]+)",method="GET",route="\/v3\/plant\/:id",status_code="404"\} (\d+)/g)].map((m) => Number(m[2]))
    assert.equal(buckets.length, 13)
    assert.deepEqual(buckets, [...buckets].sort((a, b) => a - b))
    assert.match(res.body, /process_resident_memory_bytes/)
  })

  test('the OpenAPI document: 3.1, version 1.0.0, the seed operation ids and tag', async (t) => {
    const { request } = await build(t, sqliteEngine)
    const doc = (await request({ method: 'GET', url: '/v3/openapi.json' })).json()
    assert.equal(doc.openapi, '3.1.0')
    assert.equal(doc.info.version, '1.0.0')
    assert.equal(doc.paths['/v3/plant'].post.operationId, 'add-plant')
    assert.equal(doc.paths['/v3/plant'].put.operationId, 'update-plant')
    assert.deepEqual(doc.paths['/v3/plant'].post.tags, ['plant'])
    assert.deepEqual(Object.keys(doc.paths['/v3/plant'].post.responses).sort(), ['200', '400', '401', '403', '405', '409', '413', '422', '429', '503'])
    assert.equal(doc.paths['/v3/plant'].post.responses['405'].description, 'Invalid input')
    assert.equal(doc.paths['/v3/plant'].put.responses['404'].description, 'Plant not found')
    const ids = Object.values(doc.paths).flatMap((p: any) => Object.values(p).map((o: any) => o.operationId))
    assert.equal(new Set(ids).size, ids.length, 'operation ids are unique')
    assert.ok(ids.every((id) => typeof id === 'string'), 'every operation is named')
  })

  test('the docs page and every asset it loads are served by the service itself (works offline)', async (t) => {
    const { app } = await build(t, sqliteEngine)
    const page = await app.inject({ method: 'GET', url: '/v3/docs/' })
    assert.equal(page.statusCode, 200)
    assert.match(String(page.headers['content-type']), /text\/html/)
    const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1])
    assert.ok(assets.length >= 3, `assets: ${assets}`)
    for (const asset of assets) {
      assert.ok(!/^(https?:)?\/\//.test(asset), `${asset} is not fetched from another host`)
      const url = new URL(asset, 'http://local/v3/docs/').pathname
      assert.equal((await app.inject({ method: 'GET', url })).statusCode, 200, url)
    }
    const init = await app.inject({ method: 'GET', url: '/v3/docs/static/swagger-initializer.js' })
    assert.equal(init.statusCode, 200)
  })
})

describe('configuration', () => {
  test('defaults: 127.0.0.1:8080, ./data, info, no keys', () => {
    const config = loadConfig({})
    assert.equal(config.host, '127.0.0.1')
    assert.equal(config.port, 8080)
    assert.equal(config.dataDir, './data')
    assert.equal(config.logLevel, 'info')
    assert.deepEqual(config.apiKeys, [])
  })

  test('values are read from the environment and converted', () => {
    const config = loadConfig({ PORT: '9000', API_KEYS: 'till-key-0123456789, shop-key-0123456789', RATE_LIMIT: '100', WORKERS: 'auto', ALLOW_ANONYMOUS_WRITES: 'true' })
    assert.equal(config.port, 9000)
    assert.deepEqual(config.apiKeys, ['till-key-0123456789', 'shop-key-0123456789'])
    assert.equal(config.rateLimit, 100)
    assert.equal(config.workers, 'auto')
    assert.equal(config.allowAnonymousWrites, true)
  })

  for (const [name, value] of [['PORT', 'eighty'], ['PORT', '70000'], ['LOG_LEVEL', 'loud'], ['DATABASE_URL', 'mysql://x'], ['WORKERS', '0'], ['RATE_LIMIT', '-1']]) {
    test(`a bad ${name} (${value}) is refused with a message naming it`, () => {
      assert.throws(() => loadConfig({ [name]: value }), (err: Error) => err instanceof ConfigError && err.message.includes(name))
    })
  }

  test('the server refuses to start on a bad value with one line naming the variable', () => {
    const run = spawnSync(...serviceCommand(), { cwd: ROOT, env: serviceEnv({ PORT: 'eighty' }), encoding: 'utf8', timeout: 30_000 })
    assert.equal(run.status, 1)
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr)
    assert.match(run.stderr, /PORT/)
  })

  test('the server refuses a non-loopback address without keys, in one line', async () => {
    // A free port: were the refusal lost, the service would listen there rather than fail on a port in use.
    const run = spawnSync(...serviceCommand(), {
      cwd: ROOT, env: serviceEnv({ HOST: '0.0.0.0', PORT: String(await freePort()), DATA_DIR: ':memory:', LOG_LEVEL: 'silent' }), encoding: 'utf8', timeout: 30_000
    })
    assert.equal(run.status, 1)
    assert.match(run.stderr.trim(), /^Refusing to listen on 0\.0\.0\.0/)
    assert.equal(run.stderr.trim().split('\n').length, 1, run.stderr)
  })
})
