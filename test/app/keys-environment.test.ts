import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config.js'
import { createKey } from '../../src/keys/manage.js'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'

// The keys of API_KEYS as the operator named them (`name:secret`, or env-N by place): listed by
// GET /v3/keys, named in history, never revocable through the API; an admin revoking its own key
// is asked to confirm; a bad name is invalid input; a till's 403 names what it may not change.

const OPS = 'ops-lead-secret-0123456789'
const PLAIN = 'plain-secret-0123456789'
const ops = { authorization: `Bearer ${OPS}` }
const plain = { authorization: `Bearer ${PLAIN}` }
const API_KEYS = [{ name: 'ops-lead', secret: OPS }, PLAIN]

describe('API_KEYS entries', () => {
  test('name:secret is a named key; a key alone is env-N by its place; a colon after no key name is part of a secret', () => {
    const long = 'k'.repeat(16)
    assert.deepEqual(loadConfig({ API_KEYS: `ops-lead:${long}1, ${long}2,till.3:${long}3` }).apiKeys,
      [{ name: 'ops-lead', secret: `${long}1` }, `${long}2`, { name: 'till.3', secret: `${long}3` }])
    assert.deepEqual(loadConfig({ API_KEYS: `Ops:${long}` }).apiKeys, [`Ops:${long}`])
  })

  test('a named key that is short, named env-N or named twice stops the start by its place and name, never its secret', () => {
    const long = 'k'.repeat(16)
    const refused = (value: string, message: RegExp): void => {
      assert.throws(() => loadConfig({ API_KEYS: value }), (err: Error) => {
        assert.ok(err instanceof ConfigError)
        assert.match(err.message, message)
        assert.doesNotMatch(err.message, /kkkk|tiny/)
        return true
      }, value)
    }
    refused(`a:tiny1,${long}`, /API_KEYS item 1 of 2 is a key of 5 characters, too short/)
    refused(`${long},env-1:${long}`, /API_KEYS item 2 of 2 is named env-1, a name the service gives the keys without one/)
    refused(`ops:${long}1,ops:${long}2`, /API_KEYS item 2 of 2 is named ops, as an earlier item is/)
  })
})

for (const engine of ENGINES) {
  describe(`keys of the environment (${engine.name})`, { skip: engine.skip }, () => {
    test('GET /v3/keys lists them after the stored keys, marked environment, by their names (env-2 by place), never a secret; stored keys marked stored', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: API_KEYS })
      await createKey(app.store.keys, 'till-1', 'sell', null, Date.now())
      const res = await request({ method: 'GET', url: '/v3/keys', headers: ops })
      assert.equal(res.statusCode, 200)
      const items = res.json().items
      assert.deepEqual(items.map((k: any) => [k.name, k.scope, k.source, k.status]),
        [['till-1', 'sell', 'stored', 'active'], ['ops-lead', 'admin', 'environment', 'active'], ['env-2', 'admin', 'environment', 'active']])
      assert.deepEqual(items[1], { name: 'ops-lead', scope: 'admin', createdAt: null, expiresAt: null, lastUsedAt: null, revokedAt: null, status: 'active', source: 'environment' })
      for (const secret of [OPS, PLAIN]) assert.equal(res.body.includes(secret), false)
    })

    test('history and the feed name the operator\'s name for the key, and env-N for one without', async (t) => {
      const { request } = await build(t, engine, { apiKeys: API_KEYS })
      const plant = (await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern' }, headers: ops })).json()
      assert.equal((await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'sold' }, headers: plain })).statusCode, 200)
      const history = (await request({ method: 'GET', url: `/v3/plant/${plant.id}/history`, headers: ops })).json()
      assert.deepEqual(history.items.map((v: any) => [v.version, v.actor]).sort(), [[1, 'ops-lead'], [2, 'env-2']])
      const changes = (await request({ method: 'GET', url: '/v3/plant/changes?after=0' })).json().items
      assert.deepEqual(changes.map((c: any) => c.actor), ['ops-lead', 'env-2'])
    })

    test('a key of the environment is not revoked through the API (409 key-from-environment), and its name is not given to a stored key (409)', async (t) => {
      const { request } = await build(t, engine, { apiKeys: API_KEYS })
      for (const name of ['ops-lead', 'env-2']) {
        const res = await request({ method: 'DELETE', url: `/v3/keys/${name}`, headers: plain })
        assert.equal(res.statusCode, 409, name)
        assert.match(res.json().type, /key-from-environment$/)
        assert.equal(res.json().detail, `${name} is a key of API_KEYS or API_KEYS_FILE, not a stored one: remove it there and restart the service`)
      }
      const taken = await request({ method: 'POST', url: '/v3/keys', payload: { name: 'ops-lead', scope: 'read' }, headers: ops })
      assert.equal(taken.statusCode, 409)
      assert.match(taken.json().type, /key-name-taken$/)
      assert.equal((await request({ method: 'GET', url: '/v3/keys', headers: ops })).json().items.length, 2, 'nothing stored')
    })

    test('an admin revoking the key it uses is refused 409 revoking-own-key saying how to confirm; with ?confirm=true it is revoked', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: API_KEYS })
      const { secret } = await createKey(app.store.keys, 'lead-2', 'admin', null, Date.now())
      const self = { authorization: `Bearer ${secret}` }
      const refused = await request({ method: 'DELETE', url: '/v3/keys/lead-2', headers: self })
      assert.equal(refused.statusCode, 409)
      assert.match(refused.json().type, /revoking-own-key$/)
      assert.match(refused.json().detail, /DELETE \/v3\/keys\/lead-2\?confirm=true/)
      assert.equal((await request({ method: 'GET', url: '/v3/keys', headers: self })).statusCode, 200, 'still works')
      assert.equal((await request({ method: 'DELETE', url: '/v3/keys/lead-2?confirm=false', headers: self })).statusCode, 409)
      assert.equal((await request({ method: 'DELETE', url: '/v3/keys/lead-2?confirm=true', headers: self })).statusCode, 204)
      assert.equal((await request({ method: 'GET', url: '/v3/keys', headers: self })).statusCode, 401)
      // Another admin's key needs no confirmation.
      await createKey(app.store.keys, 'lead-3', 'admin', null, Date.now())
      assert.equal((await request({ method: 'DELETE', url: '/v3/keys/lead-3', headers: ops })).statusCode, 204)
    })

    test('a malformed key name is 400 invalid-input naming /name, not 404', async (t) => {
      const { request } = await build(t, engine, { apiKeys: API_KEYS })
      for (const name of ['Till-1', '-x', 'a%20b', 'x'.repeat(64)]) {
        const res = await request({ method: 'DELETE', url: `/v3/keys/${name}`, headers: ops })
        assert.equal(res.statusCode, 400, name)
        assert.match(res.json().type, /invalid-input$/)
        assert.equal(res.json().errors[0].path, '/name', name)
      }
      assert.equal((await request({ method: 'DELETE', url: '/v3/keys/nobody', headers: ops })).statusCode, 404)
    })

    test('a till\'s (sell) PATCH of more than status is 403 naming each member it may not change, and changes nothing', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: API_KEYS })
      const till = { authorization: `Bearer ${(await createKey(app.store.keys, 'till-9', 'sell', null, Date.now())).secret}` }
      const plant = (await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern' }, headers: ops })).json()
      const res = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'sold', price: '1.00', name: 'Cheap' }, headers: till })
      assert.equal(res.statusCode, 403)
      assert.match(res.json().type, /insufficient-scope$/)
      assert.deepEqual(res.json().errors, [
        { path: '/price', message: 'needs a key of scope write (this key has scope sell)' },
        { path: '/name', message: 'needs a key of scope write (this key has scope sell)' }
      ])
      const now = (await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json()
      assert.deepEqual([now.status, now.name], ['available', 'Fern'])
    })
  })
}
