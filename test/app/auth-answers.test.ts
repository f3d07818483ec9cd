import assert from 'node:assert/strict'
import { connect, type AddressInfo } from 'node:net'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { loadConfig } from '../../src/config.js'
import { createKey } from '../../src/keys/manage.js'
import { startupFacts } from '../../src/ops/startup.js'
import { build } from '../helpers/app.js'
import { ENGINES, sqliteEngine } from '../helpers/engines.js'

// What a client is told about the key it sends: checked on open reads too, refused with a 401 that
// says what to fix when it is sent in a way the service does not read, never taken from a URL.

const ENV_KEY = 'env-admin-key-0123456789'
const PHOTO_FILE = '/v3/photos/0123456789abcdef0123456789abcdef.jpg'

for (const engine of ENGINES) {
  describe(`keys sent with requests (${engine.name})`, { skip: engine.skip }, () => {
    test('READS=public: a read without a key is served; a bogus, revoked or expired key sent with it is 401 naming why', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: [ENV_KEY] })
      const now = Date.now()
      const shop = (await createKey(app.store.keys, 'shop', 'read', null, now)).secret
      const old = (await createKey(app.store.keys, 'old-shop', 'read', null, now)).secret
      await app.store.keys.revoke('old-shop', now)
      const expired = (await createKey(app.store.keys, 'short-shop', 'read', now - 1000, now - 2000)).secret
      const read = (url: string, headers: Record<string, string> = {}) => request({ method: 'GET', url, headers })

      assert.equal((await read('/v3/plant')).statusCode, 200)
      assert.equal((await read('/v3/plant', { authorization: `Bearer ${shop}` })).statusCode, 200)
      assert.equal((await read('/v3/plant', { api_key: ENV_KEY })).statusCode, 200)
      for (const [headers, detail] of [
        [{ authorization: 'Bearer pcat_typo-0123456789' }, 'The API key is not valid'],
        [{ api_key: 'pcat_typo-0123456789' }, 'The API key is not valid'],
        [{ authorization: `Bearer ${old}` }, 'The API key has been revoked'],
        [{ authorization: `Bearer ${expired}` }, 'The API key has expired']
      ] as Array<[Record<string, string>, string]>) {
        for (const url of ['/v3/plant', '/v3/plant/count', '/v3/store/inventory', PHOTO_FILE]) {
          const res = await read(url, headers)
          assert.equal(res.statusCode, 401, `${url} ${JSON.stringify(headers)}`)
          assert.equal(res.json().detail, detail)
          assert.match(String(res.headers['www-authenticate']), /^Bearer realm=/)
        }
      }
      // Not a photo without a key (404), and the probes do not read keys at all.
      assert.equal((await read(PHOTO_FILE)).statusCode, 404)
      assert.equal((await app.inject({ method: 'GET', url: '/healthz', headers: { authorization: 'Bearer pcat_typo-0123456789' } })).statusCode, 200)
    })

    test('with no keys at all, a key sent with a read or a write is not read (everything is open)', async (t) => {
      const { request } = await build(t, engine, {})
      assert.equal((await request({ method: 'GET', url: '/v3/plant', headers: { authorization: 'Bearer anything' } })).statusCode, 200)
      assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'x' }, headers: { authorization: 'Bearer anything' } })).statusCode, 200)
    })

    test('the Basic scheme, two keys, or the wrong header: 401 saying what to fix, never echoing the key', async (t) => {
      const { request } = await build(t, engine, { apiKeys: [ENV_KEY] })
      const post = (headers: Record<string, string | string[]>) => request({ method: 'POST', url: '/v3/plant', payload: { name: 'a' }, headers })
      const cases: Array<[Record<string, string | string[]>, RegExp]> = [
        [{ authorization: `Basic ${Buffer.from(`user:${ENV_KEY}`).toString('base64')}` }, /^Authorization uses the Basic scheme, which this service does not read: send the key as Authorization: Bearer <key> \(or api_key: <key>\)$/],
        [{ authorization: ENV_KEY }, /^Authorization must use the Bearer scheme: send the key as Authorization: Bearer <key>/],
        [{ authorization: 'Bearer' }, /^Authorization: Bearer carries no key/],
        [{ authorization: `Bearer ${ENV_KEY} ${ENV_KEY}` }, /^Authorization: Bearer must be followed by the key alone/],
        [{ authorization: [`Bearer ${ENV_KEY}`, 'Bearer pcat_other-0123456789'] }, /^Two Authorization headers were sent: send one key, in one header/],
        [{ authorization: [`Bearer ${ENV_KEY}`, `Bearer ${ENV_KEY}`] }, /^Two Authorization headers were sent/],
        [{ api_key: [ENV_KEY, 'pcat_other-0123456789'] }, /^Two api_key headers were sent/],
        [{ authorization: `Bearer ${ENV_KEY}`, api_key: 'pcat_other-0123456789' }, /^Authorization and api_key carry different keys: send one key/],
        [{ 'x-api-key': ENV_KEY }, /^The key was sent as X-API-Key, a header this service does not read: send the key as Authorization: Bearer <key>/],
        [{ authorization: `Bearer ${ENV_KEY}`, 'x-api-key': 'pcat_other-0123456789' }, /^Authorization and X-API-Key carry different keys/]
      ]
      for (const [headers, detail] of cases) {
        const res = await post(headers)
        assert.equal(res.statusCode, 401, JSON.stringify(headers))
        assert.match(res.json().detail, detail)
        assert.match(res.json().type, /\/unauthorized$/)
        assert.match(String(res.headers['www-authenticate']), /^Bearer realm=/)
        assert.equal(res.body.includes(ENV_KEY), false, 'the key sent is never echoed')
      }
      // The same key twice, in both headers, is one key; a proxy's Basic login beside api_key is not this service's.
      assert.equal((await post({ authorization: `Bearer ${ENV_KEY}`, api_key: ENV_KEY })).statusCode, 200)
      assert.equal((await post({ authorization: 'Basic dXNlcjpwYXNz', api_key: ENV_KEY })).statusCode, 200)
      assert.equal((await post({ authorization: `Bearer ${ENV_KEY}`, 'x-api-key': ENV_KEY })).statusCode, 200)

      // On an open read: another scheme's credentials alone (a proxy's login) are ignored; two keys are not.
      const read = (headers: Record<string, string | string[]>) => request({ method: 'GET', url: '/v3/plant', headers })
      assert.equal((await read({ authorization: 'Basic dXNlcjpwYXNz' })).statusCode, 200)
      assert.equal((await read({ 'x-api-key': 'whatever' })).statusCode, 200)
      assert.equal((await read({ authorization: ['Bearer a-1', 'Bearer b-2'] })).statusCode, 401)
      assert.equal((await read({ authorization: `Bearer ${ENV_KEY}`, api_key: 'pcat_other-0123456789' })).statusCode, 401)
    })

    test('a key in the URL is 401 on every operation that reads keys, even before any key exists; the detail never holds it', async (t) => {
      const { app, request } = await build(t, engine, {})
      for (const url of ['/v3/plant?api_key=s3cret-in-url', '/v3/plant?limit=5&access_token=s3cret-in-url', '/v3/plant/1?api%5Fkey=s3cret-in-url', `${PHOTO_FILE}?apikey=s3cret-in-url`]) {
        const res = await request({ method: 'GET', url })
        assert.equal(res.statusCode, 401, url)
        assert.match(res.json().detail, /^An API key in the URL \(\?(api_key|access_token|apikey)=\) is refused: a URL ends up in logs and browser history\. Send the key as Authorization: Bearer <key> \(or api_key: <key>\)/)
        assert.equal(res.body.includes('s3cret-in-url'), false)
      }
      assert.equal((await request({ method: 'POST', url: '/v3/plant?api_key=s3cret-in-url', payload: { name: 'x' } })).statusCode, 401)
      assert.deepEqual((await request({ method: 'GET', url: '/v3/plant' })).json().items, [], 'nothing was added')
      // Probes ignore a query, as before; a parameter that only looks like one is an unknown parameter.
      assert.equal((await app.inject({ method: 'GET', url: '/healthz?api_key=s3cret-in-url' })).statusCode, 200)
      assert.equal((await request({ method: 'GET', url: '/v3/plant?monkey=1' })).statusCode, 400)
    })

    test('READS=keys: reads and photos need a key; the docs page, the document, probes and the staff page stay open', async (t) => {
      const { app } = await build(t, engine, { apiKeys: [ENV_KEY], readsNeedKey: true })
      const get = async (url: string): Promise<number> => (await app.inject({ method: 'GET', url })).statusCode
      for (const url of ['/v3/plant', '/v3', '/v3/version', '/v3/store/inventory', PHOTO_FILE, '/metrics']) assert.equal(await get(url), 401, url)
      for (const url of ['/v3/openapi.json', '/v3/docs/json', '/healthz', '/readyz']) assert.equal(await get(url), 200, url)
      assert.ok(await get('/v3/docs') < 400, 'the docs page')
      // The staff page's files are served when the page is built (404 in a checkout without it), never behind a key.
      assert.notEqual(await get('/'), 401)
      assert.equal((await app.inject({ method: 'GET', url: '/v3/plant', headers: { authorization: `Bearer ${ENV_KEY}` } })).statusCode, 200)
    })
  })
}

test('the start-up line says who may read and, with READS=keys, exactly what stays open', () => {
  assert.equal(startupFacts(loadConfig({}), 1).reads, 'open to anyone (READS=public); a key sent with a read is checked')
  // Stored keys are counted as one source, not by number: the line says where keys come from.
  assert.equal(startupFacts(loadConfig({}), 2).auth, 'API keys (2) for writes and /metrics')
  assert.equal(startupFacts(loadConfig({}), 1, true).auth, 'API keys (stored in the catalogue) for writes and /metrics')
  assert.equal(startupFacts(loadConfig({}), 3, true).auth, 'API keys (2 from the configuration, and those stored in the catalogue) for writes and /metrics')
  assert.match(String(startupFacts(loadConfig({ READS: 'keys' }), 0).reads), /no key exists yet: reads are open until the first key is made/)
  const reads = String(startupFacts(loadConfig({ READS: 'keys' }), 2).reads)
  assert.match(reads, /^need a key of scope read \(READS=keys\), photos included; open without a key: \/healthz, \/readyz, \/v3\/openapi\.json, \/v3\/docs, the problem types \(\/v3\/problems\/…\) and the staff page's own files/)
  assert.match(reads, /\/metrics needs a write key/)
})

test('over a real connection, where Node keeps only the first Authorization header, two of them are still refused', async (t) => {
  const store = await sqliteEngine.open()
  const app = await buildApp(testConfig({ apiKeys: [ENV_KEY] }), { store })
  t.after(async () => { await app.close(); await store.close() })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.end(['GET /v3/plant HTTP/1.1', 'Host: x', `Authorization: Bearer ${ENV_KEY}`, 'Authorization: Bearer pcat_other-0123456789', 'Connection: close', '', ''].join('\r\n'))
    })
    let text = ''
    socket.on('data', (chunk: Buffer) => { text += chunk.toString() })
    socket.on('end', () => { resolve(text) })
    socket.on('error', reject)
  })
  assert.match(answer, /^HTTP\/1\.1 401 /)
  assert.match(answer, /"detail":"Two Authorization headers were sent: send one key, in one header: Authorization: Bearer <key> or api_key: <key>"/)
})

test('the start-up line gives the read limits as resolved: readers, READ_BUDGET per address and per key, MAX_QUEUED_BYTES, FEED_MAX_STREAMS', () => {
  const config = loadConfig({ SQLITE_READERS: 'auto', READ_BUDGET: '3', MAX_QUEUED_BYTES: '16777216', FEED_MAX_STREAMS: '50', FEED_MAX_STREAMS_PER_CLIENT: '5' })
  assert.deepEqual(startupFacts(config, 0).readLimits, {
    sqliteReaders: config.sqliteReaders,
    readBudget: '3 per client address, 12 per API key',
    maxQueuedBytes: 16777216,
    feedMaxStreams: 50,
    feedMaxStreamsPerClient: 5
  })
  assert.equal(typeof config.sqliteReaders, 'number', 'auto resolved')
})
