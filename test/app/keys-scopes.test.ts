import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import { SCOPES, scopeIncludes, type Scope } from '../../src/catalogue/keys.js'
import { createKey } from '../../src/keys/manage.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { logCollector } from '../helpers/log-lines.js'

// Every operation × every scope: allowed (anything but 401/403), 403 insufficient-scope naming the
// scope it needs, or 401 without a key. READS=keys, so reads are in the table too.

const ENV_KEY = 'env-admin-key-0123456789'
const admin = { authorization: `Bearer ${ENV_KEY}` }

/** An app on a fresh store of `engine`, keys from API_KEYS (`apiKeys`), its info log collected. */
async function appWithLog (t: TestContext, engine: typeof ENGINES[number], apiKeys = [ENV_KEY]) {
  const log = logCollector()
  const store = await engine.open()
  const { buildApp } = await import('../../src/app.js')
  const { testConfig } = await import('../../src/config.js')
  const app = await buildApp(testConfig({ apiKeys, logLevel: 'info' }), { store, logStream: log.stream })
  t.after(async () => { await app.close(); await store.close() })
  return { log, store, app }
}

interface Operation {
  name: string
  needs: Scope
  request: (id: number) => { method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: any, headers?: Record<string, string> }
}

const OPERATIONS: Operation[] = [
  { name: 'GET /v3', needs: 'read', request: () => ({ method: 'GET', url: '/v3' }) },
  { name: 'list plants', needs: 'read', request: () => ({ method: 'GET', url: '/v3/plant' }) },
  { name: 'get a plant', needs: 'read', request: (id) => ({ method: 'GET', url: `/v3/plant/${id}` }) },
  { name: 'count plants', needs: 'read', request: () => ({ method: 'GET', url: '/v3/plant/count' }) },
  { name: 'inventory', needs: 'read', request: () => ({ method: 'GET', url: '/v3/store/inventory' }) },
  { name: 'changes', needs: 'read', request: () => ({ method: 'GET', url: '/v3/plant/changes?after=0' }) },
  { name: 'a photo', needs: 'read', request: (id) => ({ method: 'GET', url: `/v3/plant/${id}/photos/p1` }) },
  { name: 'a photo file', needs: 'read', request: () => ({ method: 'GET', url: '/v3/photos/0123456789abcdef.jpg' }) },
  { name: 'version', needs: 'read', request: () => ({ method: 'GET', url: '/v3/version' }) },
  { name: 'a plant\'s history', needs: 'read', request: (id) => ({ method: 'GET', url: `/v3/plant/${id}/history` }) },
  { name: 'PATCH status alone', needs: 'sell', request: (id) => ({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { status: 'sold' } }) },
  { name: 'PATCH a name', needs: 'write', request: (id) => ({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { name: 'Renamed' } }) },
  { name: 'PATCH status and a name', needs: 'write', request: (id) => ({ method: 'PATCH', url: `/v3/plant/${id}`, payload: { status: 'sold', name: 'x' } }) },
  { name: 'PUT a plant (status alone too)', needs: 'write', request: (id) => ({ method: 'PUT', url: '/v3/plant', payload: { id, name: 'Monstera', status: 'sold' } }) },
  { name: 'POST a plant', needs: 'write', request: () => ({ method: 'POST', url: '/v3/plant', payload: { name: 'New' } }) },
  { name: 'batch of status patches', needs: 'sell', request: (id) => ({ method: 'POST', url: '/v3/plant/batch', payload: { operations: [{ op: 'patch', id, patch: { status: 'sold' } }] } }) },
  { name: 'batch with a create', needs: 'write', request: (id) => ({ method: 'POST', url: '/v3/plant/batch', payload: { operations: [{ op: 'patch', id, patch: { status: 'sold' } }, { op: 'create', plant: { name: 'New' } }] } }) },
  { name: 'revert a plant', needs: 'write', request: (id) => ({ method: 'POST', url: `/v3/plant/${id}/revert`, payload: { version: 1 } }) },
  { name: 'DELETE a plant', needs: 'write', request: (id) => ({ method: 'DELETE', url: `/v3/plant/${id}` }) },
  { name: 'add a photo', needs: 'write', request: (id) => ({ method: 'POST', url: `/v3/plant/${id}/photos`, payload: 'x', headers: { 'content-type': 'image/jpeg' } }) },
  { name: 'delete a photo', needs: 'write', request: (id) => ({ method: 'DELETE', url: `/v3/plant/${id}/photos/p1` }) },
  { name: 'order photos', needs: 'write', request: (id) => ({ method: 'PUT', url: `/v3/plant/${id}/photos/order`, payload: { order: [] } }) },
  { name: 'metrics', needs: 'write', request: () => ({ method: 'GET', url: '/metrics' }) },
  { name: 'list the trash', needs: 'write', request: () => ({ method: 'GET', url: '/v3/trash' }) },
  { name: 'restore from the trash', needs: 'write', request: (id) => ({ method: 'POST', url: `/v3/trash/${id}/restore` }) },
  { name: 'purge from the trash', needs: 'admin', request: (id) => ({ method: 'DELETE', url: `/v3/trash/${id}` }) },
  { name: 'list keys', needs: 'admin', request: () => ({ method: 'GET', url: '/v3/keys' }) },
  { name: 'create a key', needs: 'admin', request: (id) => ({ method: 'POST', url: '/v3/keys', payload: { name: `made-${id}`, scope: 'read' } }) },
  { name: 'revoke a key', needs: 'admin', request: () => ({ method: 'DELETE', url: '/v3/keys/victim' }) }
]

/** A key of each scope, stored through the store as `plants keys create` does. */
async function keysOfEachScope (app: TestApp['app']): Promise<Record<Scope, string>> {
  const secrets: Partial<Record<Scope, string>> = {}
  for (const scope of SCOPES) secrets[scope] = (await createKey(app.store.keys, `${scope}-key`, scope, null, Date.now())).secret
  return secrets as Record<Scope, string>
}

for (const engine of ENGINES) {
  describe(`scopes (${engine.name})`, { skip: engine.skip }, () => {
    test('every operation × every scope: allowed when the scope includes what it needs, else 403 naming it; no key 401', async (t: TestContext) => {
      const { app, request } = await build(t, engine, { apiKeys: [ENV_KEY], readsNeedKey: true })
      const secrets = await keysOfEachScope(app)
      const addPlant = async (): Promise<number> => (await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' }, headers: admin })).json().id
      for (const op of OPERATIONS) {
        for (const held of [undefined, ...SCOPES]) {
          const id = await addPlant()
          if (op.name === 'revoke a key') await createKey(app.store.keys, 'victim', 'read', null, Date.now()).catch(() => {})
          const { headers, ...rest } = op.request(id)
          // /metrics is not in the document (the check would refuse any answer of it): inject it directly.
          const send = op.name === 'metrics' ? app.inject.bind(app) : request
          const res = await send({ ...rest, headers: { ...headers, ...(held === undefined ? {} : { authorization: `Bearer ${secrets[held]}` }) } })
          const what = `${op.name} with ${held ?? 'no key'}: ${res.statusCode} ${res.body.slice(0, 200)}`
          if (held === undefined) {
            assert.equal(res.statusCode, 401, what)
            assert.match(String(res.headers['www-authenticate']), /^Bearer realm=/, what)
          } else if (scopeIncludes(held, op.needs)) {
            assert.ok(res.statusCode !== 401 && res.statusCode !== 403, what)
            assert.ok(res.statusCode < 500, what)
          } else {
            assert.equal(res.statusCode, 403, what)
            assert.match(res.json().type, /\/insufficient-scope$/, what)
            assert.equal(res.json().detail, `This needs a key of scope ${op.needs}${op.needs === 'admin' ? '' : ' (or above)'}; this key has scope ${held}`, what)
            // RFC 6750: the scope needed, for a program as well as a person.
            assert.equal(res.json().scope, op.needs, what)
            assert.equal(res.headers['www-authenticate'], `Bearer realm="plant-catalogue", error="insufficient_scope", scope="${op.needs}"`, what)
          }
        }
      }
    })

    test('a till (sell) marks a plant sold and it is; its PATCH of anything else changes nothing', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: [ENV_KEY] })
      const { secret } = await createKey(app.store.keys, 'till-1', 'sell', null, Date.now())
      const till = { authorization: `Bearer ${secret}` }
      const plant = (await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' }, headers: admin })).json()
      assert.equal((await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { name: 'Cheap' }, headers: till })).statusCode, 403)
      assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'x' }, headers: till })).statusCode, 403)
      const sold = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status: 'sold' }, headers: till })
      assert.equal(sold.statusCode, 200)
      const now = (await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json()
      assert.equal(now.status, 'sold')
      assert.equal(now.name, 'Monstera')
    })

    test('a till\'s typo is 400 naming it (validation first); its batch names each operation that needs more', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: [ENV_KEY] })
      const till = { authorization: `Bearer ${(await createKey(app.store.keys, 'till-2', 'sell', null, Date.now())).secret}` }
      const plant = (await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' }, headers: admin })).json()
      const typo = await request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { Status: 'sold' }, headers: till })
      assert.equal(typo.statusCode, 400)
      assert.deepEqual(typo.json().errors, [{ path: '/Status', message: 'is not a known field' }])
      const batch = await request({
        method: 'POST',
        url: '/v3/plant/batch',
        headers: till,
        payload: { operations: [{ op: 'patch', id: plant.id, patch: { status: 'sold' } }, { op: 'patch', id: plant.id, patch: { price: '1.00' } }, { op: 'delete', id: plant.id }] }
      })
      assert.equal(batch.statusCode, 403)
      assert.equal(batch.json().scope, 'write')
      assert.deepEqual(batch.json().errors, [
        { path: '/operations/1', message: 'needs a key of scope write (this key has scope sell)' },
        { path: '/operations/2', message: 'needs a key of scope write (this key has scope sell)' }
      ])
      assert.equal((await request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json().status, 'available', 'nothing applied')
    })

    test('a 401 for a revoked or expired key names the key in the access log, never its secret', async (t) => {
      const { log, store, app } = await appWithLog(t, engine)
      const revoked = await createKey(store.keys, 'old-till', 'sell', null, Date.now())
      await store.keys.revoke('old-till', Date.now())
      const expired = await createKey(store.keys, 'short-till', 'sell', Date.now() - 1000, Date.now() - 2000)
      for (const secret of [revoked.secret, expired.secret, 'pcat_not-a-key-at-all-0123456789']) {
        assert.equal((await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'x' }, headers: { authorization: `Bearer ${secret}` } })).statusCode, 401)
      }
      const lines = log.lines().filter((l) => l.status === 401)
      assert.deepEqual(lines.map((l) => l.key), ['old-till', 'short-till', undefined])
      assert.equal(JSON.stringify(log.lines()).includes(revoked.secret), false)
    })

    test('READS=public (the default): reads need no key, writes do', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: [ENV_KEY] })
      const { secret } = await createKey(app.store.keys, 'shop', 'read', null, Date.now())
      assert.equal((await request({ method: 'GET', url: '/v3/plant' })).statusCode, 200)
      assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'x' } })).statusCode, 401)
      assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'x' }, headers: { authorization: `Bearer ${secret}` } })).statusCode, 403)
    })

    test('READS=keys: a read without a key is 401, with a read key 200; the document says read on reads', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: [ENV_KEY], readsNeedKey: true })
      const { secret } = await createKey(app.store.keys, 'shop', 'read', null, Date.now())
      const res = await request({ method: 'GET', url: '/v3/plant' })
      assert.equal(res.statusCode, 401)
      assert.match(String(res.headers['www-authenticate']), /^Bearer/)
      assert.equal((await request({ method: 'GET', url: '/v3/plant', headers: { api_key: secret } })).statusCode, 200)
      const doc = (await app.inject({ method: 'GET', url: '/v3/openapi.json' })).json()
      assert.deepEqual(doc.paths['/v3/plant'].get.security, [{ bearerAuth: ['read'] }, { apiKeyHeader: ['read'] }])
      assert.deepEqual(doc.paths['/v3/plant'].post.security, [{ bearerAuth: ['write'] }, { apiKeyHeader: ['write'] }])
      assert.deepEqual(doc.paths['/v3/plant/{id}'].patch.security, [{ bearerAuth: ['sell'] }, { apiKeyHeader: ['sell'] }])
      assert.deepEqual(doc.paths['/v3/keys'].get.security, [{ bearerAuth: ['admin'] }, { apiKeyHeader: ['admin'] }])
      // The document itself stays readable: a client needs it to learn how to authenticate.
      assert.equal((await app.inject({ method: 'GET', url: '/v3/openapi.json' })).statusCode, 200)
    })

    test('with no keys at all (loopback, nothing configured), everything is open and anonymous', async (t) => {
      const { request } = await build(t, engine, {})
      assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'x' } })).statusCode, 200)
      // The first key can be made anonymously; from then on keys are required, even after it is revoked.
      const made = await request({ method: 'POST', url: '/v3/keys', payload: { name: 'first', scope: 'admin' } })
      assert.equal(made.statusCode, 201)
      const first = { authorization: `Bearer ${made.json().secret}` }
      assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'y' } })).statusCode, 401)
      assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'y' }, headers: first })).statusCode, 200)
      // Its own key: revoked once confirmed (the client locks itself out).
      assert.equal((await request({ method: 'DELETE', url: '/v3/keys/first?confirm=true', headers: first })).statusCode, 204)
      assert.equal((await request({ method: 'POST', url: '/v3/plant', payload: { name: 'z' } })).statusCode, 401)
    })

    test('API_KEYS are admin keys named env-1, env-2: they manage keys, and the access log names them, never the secret', async (t) => {
      const { log, app } = await appWithLog(t, engine, ['first-key-0123456789', ENV_KEY])
      const made = await app.inject({ method: 'POST', url: '/v3/keys', payload: { name: 'shop-front', scope: 'read' }, headers: admin })
      assert.equal(made.statusCode, 201)
      const body = made.json()
      assert.match(body.secret, /^pcat_[A-Za-z0-9_-]{43}$/)
      assert.deepEqual(Object.keys(body).sort(), ['createdAt', 'expiresAt', 'lastUsedAt', 'name', 'revokedAt', 'scope', 'secret', 'status'])
      const listed = (await app.inject({ method: 'GET', url: '/v3/keys', headers: admin })).json()
      assert.deepEqual(listed.items.map((k: any) => [k.name, k.scope, k.source]), [['shop-front', 'read', 'stored'], ['env-1', 'admin', 'environment'], ['env-2', 'admin', 'environment']])
      assert.equal(JSON.stringify(listed).includes(body.secret), false)
      // A 403 of the shop front's key is logged with its name.
      const refused = await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'x' }, headers: { authorization: `Bearer ${body.secret}` } })
      assert.equal(refused.statusCode, 403)
      const env2 = await app.inject({ method: 'DELETE', url: '/v3/plant/999', headers: admin })
      assert.equal(env2.statusCode, 404)
      const lines = log.lines().filter((l) => l.msg === 'request refused')
      assert.deepEqual(lines.map((l) => l.key), ['shop-front', 'env-2'])
      const text = JSON.stringify(log.lines())
      for (const secret of [body.secret, ENV_KEY]) assert.equal(text.includes(secret), false)
    })

    test('audit lines at info: a key created, a key revoked and a plant purged from the trash, each naming the key that did it and the target, never a secret', async (t) => {
      const { log, app } = await appWithLog(t, engine)
      const made = await app.inject({ method: 'POST', url: '/v3/keys', payload: { name: 'ops-lead', scope: 'admin' }, headers: admin })
      assert.equal(made.statusCode, 201)
      const lead = { authorization: `Bearer ${made.json().secret}` }
      assert.equal((await app.inject({ method: 'POST', url: '/v3/keys', payload: { name: 'till-3', scope: 'sell' }, headers: lead })).statusCode, 201)
      assert.equal((await app.inject({ method: 'DELETE', url: '/v3/keys/till-3', headers: lead })).statusCode, 204)
      assert.equal((await app.inject({ method: 'DELETE', url: '/v3/keys/till-3', headers: admin })).statusCode, 204)
      const plant = (await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Fern' }, headers: admin })).json()
      assert.equal((await app.inject({ method: 'DELETE', url: `/v3/plant/${plant.id}`, headers: admin })).statusCode, 204)
      assert.equal((await app.inject({ method: 'DELETE', url: `/v3/trash/${plant.id}`, headers: lead })).statusCode, 204)
      const audit = log.lines().filter((l) => /^(API key (created|revoked)|plant purged from the trash)$/.test(l.msg))
      assert.deepEqual(audit.map(({ level, msg, key, target, scope, plant, revokedAlready }) => ({ level, msg, key, target, scope, plant, revokedAlready })), [
        { level: 'info', msg: 'API key created', key: 'env-1', target: 'ops-lead', scope: 'admin', plant: undefined, revokedAlready: undefined },
        { level: 'info', msg: 'API key created', key: 'ops-lead', target: 'till-3', scope: 'sell', plant: undefined, revokedAlready: undefined },
        { level: 'info', msg: 'API key revoked', key: 'ops-lead', target: 'till-3', scope: undefined, plant: undefined, revokedAlready: undefined },
        { level: 'info', msg: 'API key revoked', key: 'env-1', target: 'till-3', scope: undefined, plant: undefined, revokedAlready: true },
        { level: 'info', msg: 'plant purged from the trash', key: 'ops-lead', target: undefined, scope: undefined, plant: plant.id, revokedAlready: undefined }
      ])
      assert.ok(audit.every((l) => typeof l.reqId === 'string'), 'each line carries its request id')
      const text = JSON.stringify(log.lines())
      for (const secret of [made.json().secret, ENV_KEY]) assert.equal(text.includes(secret), false)
    })

    test('POST /v3/keys: a taken name is 409; a reserved or bad name, an unknown scope, a past or impossible expiry 400 with its path', async (t) => {
      const { request } = await build(t, engine, { apiKeys: [ENV_KEY] })
      const post = (payload: Record<string, unknown>) => request({ method: 'POST', url: '/v3/keys', payload, headers: admin })
      assert.equal((await post({ name: 'till-1', scope: 'sell' })).statusCode, 201)
      const taken = await post({ name: 'till-1', scope: 'sell' })
      assert.equal(taken.statusCode, 409)
      assert.match(taken.json().type, /key-name-taken$/)
      const refusals: Array<[Record<string, unknown>, string, string]> = [
        [{ name: 'env-3', scope: 'read' }, '/name', 'must not be env-N: those name the keys of API_KEYS and API_KEYS_FILE'],
        [{ name: 'x y', scope: 'read' }, '/name', "must be 1 to 63 lower-case letters, digits, '.', '_' or '-', starting with a letter or digit"],
        [{ name: 'x', scope: 'root' }, '/scope', 'must be one of read, sell, write, admin'],
        [{ name: 'old', scope: 'read', expiresAt: '2001-01-01T00:00:00Z' }, '/expiresAt', 'must be in the future (2001-01-01T00:00:00.000Z has passed)'],
        [{ name: 'feb', scope: 'read', expiresAt: '2027-02-30' }, '/expiresAt', '"2027-02-30" is not a date: February 2027 has 28 days'],
        [{ name: 'late', scope: 'read', expiresAt: '2027-01-31T18:60:00Z' }, '/expiresAt', '"2027-01-31T18:60:00Z" is not a time of day: hours go to 23, minutes and seconds to 59'],
        [{ name: 'soon', scope: 'read', expiresAt: 'next week' }, '/expiresAt', 'must be a date (2027-01-31: the key works through that day, UTC, and expires at the start of the next) or an RFC 3339 date-time with its zone (2027-01-31T18:00:00Z, taken as given)']
      ]
      for (const [payload, path, message] of refusals) {
        const res = await post(payload)
        assert.equal(res.statusCode, 400, JSON.stringify(payload))
        assert.deepEqual(res.json().errors, [{ path, message }], JSON.stringify(payload))
        assert.equal(res.json().detail, `${path} ${message}`)
      }
      // A date alone: the key works through that day (UTC) and expires as the next begins; a date-time as given.
      const day = await post({ name: 'through-day', scope: 'read', expiresAt: '2099-02-28' })
      assert.equal(day.json().expiresAt, '2099-03-01T00:00:00.000Z')
      const exact = await post({ name: 'exact', scope: 'read', expiresAt: '2099-01-31T18:00:00+02:00' })
      assert.equal(exact.json().expiresAt, '2099-01-31T16:00:00.000Z')
      // A wrong Content-Type is invalid input, as on every JSON body (docs/behaviour.md: Strict bodies).
      const plain = await request({ method: 'POST', url: '/v3/keys', payload: '{"name":"x","scope":"read"}', headers: { ...admin, 'content-type': 'text/plain' } })
      assert.equal(plain.statusCode, 400)
      assert.match(plain.json().type, /invalid-input$/)
    })

    test('DELETE /v3/keys/{name}: unknown 404, a second revoke 204 again (idempotent), an env key 409 saying where it comes from', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: [ENV_KEY] })
      await createKey(app.store.keys, 'till-1', 'sell', null, Date.now())
      const gone = await request({ method: 'DELETE', url: '/v3/keys/nobody', headers: admin })
      assert.equal(gone.statusCode, 404)
      assert.match(gone.json().type, /key-not-found$/)
      assert.equal((await request({ method: 'DELETE', url: '/v3/keys/till-1', headers: admin })).statusCode, 204)
      const revokedAt = (await app.store.keys.list())[0].revokedAt
      assert.equal((await request({ method: 'DELETE', url: '/v3/keys/till-1', headers: admin })).statusCode, 204)
      assert.equal((await app.store.keys.list())[0].revokedAt, revokedAt, 'the first revocation stands')
      // The request is made by env-1 itself: it exists, but only API_KEYS can take it away.
      const env = await request({ method: 'DELETE', url: '/v3/keys/env-1', headers: admin })
      assert.equal(env.statusCode, 409)
      assert.match(env.json().type, /key-from-environment$/)
      assert.match(env.json().detail, /^env-1 is a key of API_KEYS or API_KEYS_FILE, not a stored one: remove it there and restart the service$/)
      // A revoked name is not given again: attribution stays unambiguous.
      assert.equal((await request({ method: 'POST', url: '/v3/keys', payload: { name: 'till-1', scope: 'sell' }, headers: admin })).statusCode, 409)
    })

    test('GET /v3/keys marks each key active, expired or revoked, times with milliseconds', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: [ENV_KEY] })
      const now = Date.now()
      const ended = Math.floor(now / 1000) * 1000 - 60_000 // a whole second: its milliseconds are .000
      await createKey(app.store.keys, 'live', 'read', null, now)
      await createKey(app.store.keys, 'short', 'read', ended, now) // the store takes any time; the API refuses a past one
      await createKey(app.store.keys, 'ended', 'read', null, now)
      await app.store.keys.revoke('ended', now)
      const items = (await request({ method: 'GET', url: '/v3/keys', headers: admin })).json().items
      const byName = Object.fromEntries(items.map((k: any) => [k.name, k]))
      assert.deepEqual([byName.live.status, byName.short.status, byName.ended.status], ['active', 'expired', 'revoked'])
      assert.equal(byName.short.expiresAt, new Date(ended).toISOString())
      assert.match(byName.short.expiresAt, /\.000Z$/)
    })

    test('two keys of one client overlap while it rotates: both work until the old one is revoked', async (t) => {
      const { app, request } = await build(t, engine, { apiKeys: [ENV_KEY] })
      const old = await createKey(app.store.keys, 'till-3-2026a', 'sell', null, Date.now())
      const next = await createKey(app.store.keys, 'till-3-2026b', 'sell', null, Date.now())
      const plant = (await request({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' }, headers: admin })).json()
      const sell = (secret: string, status: string) => request({ method: 'PATCH', url: `/v3/plant/${plant.id}`, payload: { status }, headers: { authorization: `Bearer ${secret}` } })
      assert.equal((await sell(old.secret, 'pending')).statusCode, 200)
      assert.equal((await sell(next.secret, 'sold')).statusCode, 200)
      assert.equal((await request({ method: 'DELETE', url: '/v3/keys/till-3-2026a', headers: admin })).statusCode, 204)
      const refused = await sell(old.secret, 'available')
      assert.equal(refused.statusCode, 401)
      assert.match(refused.json().detail, /revoked/)
      assert.equal((await sell(next.secret, 'available')).statusCode, 200)
    })
  })
}
