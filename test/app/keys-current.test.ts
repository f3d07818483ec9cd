import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { logCollector, type LogLine } from '../helpers/log-lines.js'

// GET /v3/keys/current: what the key a request is made with may do, so a client (the staff page)
// turns off what its key may not do before trying it (issue 49).

const ADMIN = 'env-admin-key-0123456789'
const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

for (const engine of ENGINES) {
  describe(`${engine.name}: GET /v3/keys/current`, { skip: engine.skip }, () => {
    test('any valid key learns its name, scope and the scopes it holds; none or a wrong one is 401', async (t) => {
      for (const readsNeedKey of [false, true]) {
        const { request } = await build(t, engine, { apiKeys: [ADMIN], readsNeedKey })
        const made = await request({ method: 'POST', url: '/v3/keys', headers: bearer(ADMIN), payload: { name: 'till-3', scope: 'sell' } })
        assert.equal(made.statusCode, 201)
        const till = await request({ method: 'GET', url: '/v3/keys/current', headers: bearer(made.json().secret) })
        assert.equal(till.statusCode, 200)
        assert.equal(till.headers['cache-control'], 'no-store')
        assert.deepEqual(till.json(), { name: 'till-3', scope: 'sell', scopes: ['read', 'sell'], keysRequired: true })
        const admin = await request({ method: 'GET', url: '/v3/keys/current', headers: { api_key: ADMIN } })
        assert.deepEqual(admin.json(), { name: 'env-1', scope: 'admin', scopes: ['read', 'sell', 'write', 'admin'], keysRequired: true })
        const none = await request({ method: 'GET', url: '/v3/keys/current' })
        assert.equal(none.statusCode, 401, `READS=${readsNeedKey ? 'keys' : 'public'}: without a key`)
        assert.match(String(none.headers['www-authenticate']), /^Bearer/)
        assert.equal((await request({ method: 'GET', url: '/v3/keys/current', headers: bearer('not-a-key') })).statusCode, 401)
      }
    })

    test('READS=public: no key, another header\'s key, an unknown or a revoked one is refused as by any route that needs a key (body, WWW-Authenticate, refusal line)', async (t) => {
      // A fresh service a request: a reason's second refusal in a second is counted into a summary, not written.
      const refusal = async (url: string, credentials: 'none' | 'foreign' | 'unknown' | 'revoked') => {
        const log = logCollector()
        const { request } = await build(t, engine, { apiKeys: [ADMIN], logLevel: 'info' }, {}, { logStream: log.stream })
        const made = await request({ method: 'POST', url: '/v3/keys', headers: bearer(ADMIN), payload: { name: 'old-till', scope: 'sell' } })
        assert.equal((await request({ method: 'DELETE', url: '/v3/keys/old-till', headers: bearer(ADMIN) })).statusCode, 204)
        const headers = { none: {}, foreign: { 'x-api-key': 'some-key' }, unknown: bearer('not-a-key'), revoked: bearer(made.json().secret) }[credentials]
        const res = await request({ method: 'GET', url, headers })
        const { instance: _instance, requestId: _requestId, ...body } = res.json()
        const lines = log.lines().filter((l: LogLine) => l.msg === 'request refused')
        assert.equal(lines.length, 1)
        const { level, status, type, detail, key } = lines[0]
        return { status: res.statusCode, challenge: res.headers['www-authenticate'], body, line: { level, status, type, detail, key } }
      }
      for (const credentials of ['none', 'foreign', 'unknown', 'revoked'] as const) {
        const current = await refusal('/v3/keys/current', credentials)
        assert.equal(current.status, 401, credentials)
        assert.deepEqual(current, await refusal('/v3/keys', credentials), credentials)
      }
    })

    test('a key named current is still revoked by DELETE /v3/keys/current', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: [ADMIN] })
      assert.equal((await request({ method: 'POST', url: '/v3/keys', headers: bearer(ADMIN), payload: { name: 'current', scope: 'read' } })).statusCode, 201)
      // app.inject: the document's checker takes the concrete path /v3/keys/current for this one (OpenAPI's rule), which has no DELETE.
      assert.equal((await app.inject({ method: 'DELETE', url: '/v3/keys/current', headers: bearer(ADMIN) })).statusCode, 204)
      const listed = await request({ method: 'GET', url: '/v3/keys', headers: bearer(ADMIN) })
      assert.equal(listed.json().items.find((k: { name: string }) => k.name === 'current').status, 'revoked')
    })

    test('with no keys at all, anyone may do anything: 200, keysRequired false', async (t) => {
      const { request } = await build(t, engine)
      const res = await request({ method: 'GET', url: '/v3/keys/current' })
      assert.equal(res.statusCode, 200)
      assert.deepEqual(res.json(), { name: null, scope: 'admin', scopes: ['read', 'sell', 'write', 'admin'], keysRequired: false })
    })
  })
}
