import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { KeyCache } from '../../src/keys/key-cache.js'
import { createKey } from '../../src/keys/manage.js'
import type { KeyStore } from '../../src/store/key-store.js'
import { ENGINES } from '../helpers/engines.js'
import { PAIRS } from '../helpers/listen.js'

// Keys are shared by every instance on one database, and a key check is answered from memory.

const ENV_KEY = 'env-admin-key-0123456789'

/** A store whose reads are counted, to tell what the cache answered from memory. */
function counted (store: KeyStore): { store: KeyStore, reads: () => number, touches: Array<Map<string, number>> } {
  let reads = 0
  const touches: Array<Map<string, number>> = []
  return {
    store: {
      ...store,
      create: (k) => store.create(k),
      list: () => store.list(),
      revoke: (n, at) => store.revoke(n, at),
      anyKeys: () => store.anyKeys(),
      byHash: (h) => { reads++; return store.byHash(h) },
      touch: (used) => { touches.push(new Map(used)); return store.touch(used) }
    },
    reads: () => reads,
    touches
  }
}

for (const [engine, pair] of Object.entries(PAIRS)) {
  describe(`keys across instances (${engine})`, { skip: pair.skip }, () => {
    test('a key created on A works on B; revoked on A, B refuses it once its cached answer is a second old', async (t) => {
      const [a, b] = await pair.open(t)
      let clock = 1_000_000
      const now = () => clock
      const onB = counted(b.keys)
      const cacheB = new KeyCache(onB.store, new Map(), { now })
      const { secret } = await createKey(a.keys, 'till-1', 'sell', null, Date.now())
      assert.deepEqual(await cacheB.check(secret), { ok: true, name: 'till-1', scope: 'sell' })
      await a.keys.revoke('till-1', Date.now())
      clock += 999
      // Still the answer read a moment ago, from memory: no read of the database per request.
      assert.deepEqual(await cacheB.check(secret), { ok: true, name: 'till-1', scope: 'sell' })
      assert.equal(onB.reads(), 1)
      clock += 1
      assert.deepEqual(await cacheB.check(secret), { ok: false, why: 'revoked', name: 'till-1' })
      assert.equal(onB.reads(), 2)
      await cacheB.close()
    })

    test('through HTTP: revoked on instance A, instance B answers 401 (within 2 s: its cache holds an answer 1 s)', async (t) => {
      const [a, b] = await pair.open(t)
      const config = testConfig({ apiKeys: [ENV_KEY] })
      const apps = await Promise.all([a, b].map((store) => buildApp(config, { store })))
      t.after(async () => { for (const app of apps) await app.close() })
      const [appA, appB] = apps
      const made = await appA.inject({ method: 'POST', url: '/v3/keys', payload: { name: 'integration', scope: 'write' }, headers: { authorization: `Bearer ${ENV_KEY}` } })
      assert.equal(made.statusCode, 201)
      const key = { authorization: `Bearer ${made.json().secret}` }
      const post = () => appB.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' }, headers: key })
      assert.equal((await post()).statusCode, 200)
      assert.equal((await appA.inject({ method: 'DELETE', url: '/v3/keys/integration', headers: { authorization: `Bearer ${ENV_KEY}` } })).statusCode, 204)
      // A itself refuses at once; B as soon as its cached answer expires.
      assert.equal((await appA.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'x' }, headers: key })).statusCode, 401)
      const started = Date.now()
      let status = 200
      while (status === 200) {
        status = (await post()).statusCode
        if (status === 200) await new Promise((resolve) => setTimeout(resolve, 50))
      }
      assert.equal(status, 401)
      t.diagnostic(`instance B refused the revoked key after ${Date.now() - started} ms`)
    })
  })
}

for (const engine of ENGINES) {
  describe(`key cache (${engine.name})`, { skip: engine.skip }, () => {
    test('an expiring key works until its expiry and is refused from that moment, cached or not', async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      let clock = Date.now()
      const cache = new KeyCache(store.keys, new Map(), { now: () => clock })
      const { secret } = await createKey(store.keys, 'temp', 'read', clock + 60_000, clock)
      assert.equal((await cache.check(secret)).ok, true)
      clock += 59_999
      assert.equal((await cache.check(secret)).ok, true)
      clock += 1
      assert.deepEqual(await cache.check(secret), { ok: false, why: 'expired', name: 'temp' })
      await cache.close()
    })

    test('last used is written at most once a minute a key, off the request path, and listed', async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      let clock = Date.now()
      const spy = counted(store.keys)
      const cache = new KeyCache(spy.store, new Map(), { now: () => clock })
      const { secret } = await createKey(store.keys, 'shop', 'read', null, clock)
      const first = clock
      for (let i = 0; i < 50; i++) { await cache.check(secret); clock += 1_000 } // 50 s of requests
      await cache.flush()
      assert.deepEqual(spy.touches, [new Map([['shop', first]])])
      clock += 10_000 // a minute after the first use
      await cache.check(secret)
      await cache.flush()
      assert.equal(spy.touches.length, 2)
      const [listed] = await store.keys.list()
      assert.equal(listed.lastUsedAt, clock)
      await cache.close()
    })

    test('an unknown key is 401 and a made-up one read once a second at most; an env key never reads the database', async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      const spy = counted(store.keys)
      const { hashOf } = await import('../../src/keys/secrets.js')
      const clock = 5_000
      const cache = new KeyCache(spy.store, new Map([[hashOf(ENV_KEY), 'env-1']]), { now: () => clock })
      assert.deepEqual(await cache.check(ENV_KEY), { ok: true, name: 'env-1', scope: 'admin' })
      assert.equal(spy.reads(), 0)
      for (let i = 0; i < 10; i++) assert.deepEqual(await cache.check('pcat_made-up'), { ok: false, why: 'unknown' })
      assert.equal(spy.reads(), 1)
      await cache.close()
    })

    test('secrets are not stored: the table holds their SHA-256 only', async (t) => {
      const store = await engine.open()
      t.after(() => store.close())
      const { hashOf } = await import('../../src/keys/secrets.js')
      const { secret } = await createKey(store.keys, 'shop', 'read', null, Date.now())
      assert.ok(Buffer.from(secret.slice(5), 'base64url').length >= 32)
      const match = await store.keys.byHash(hashOf(secret))
      assert.deepEqual(match, { name: 'shop', scope: 'read', expiresAt: null, revoked: false })
      assert.equal(await store.keys.byHash(hashOf(`${secret}x`)), undefined)
      assert.equal(JSON.stringify(await store.keys.list()).includes(secret), false)
    })
  })
}
