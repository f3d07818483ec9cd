import assert from 'node:assert/strict'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test, type TestContext } from 'node:test'
import { plants } from '../scripts/lib/cli-harness.js'
import { buildApp } from '../src/app.js'
import { testConfig } from '../src/config.js'
import { openStore } from '../src/store/open-store.js'
import { freshSchema, TEST_DATABASE_URL } from './helpers/postgres-engine.js'

// `plants keys create|list|revoke` on the catalogue's own database, and the service honouring them.

interface Target { env: NodeJS.ProcessEnv, args: string[], open: () => ReturnType<typeof openStore> }

const TARGETS: Record<string, { skip: string | false, make (t: TestContext): Promise<Target> }> = {
  'data folder': {
    skip: false,
    make: async (t) => {
      const dir = await mkdtemp(join(tmpdir(), 'plants-keys-'))
      t.after(() => rm(dir, { recursive: true, force: true }))
      const dataDir = join(dir, 'data')
      return { env: {}, args: ['--data-dir', dataDir], open: () => openStore({ dataDir, feedRetentionMs: 86_400_000 }) }
    }
  },
  postgres: {
    skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set',
    make: async (t) => {
      const scratch = await freshSchema()
      t.after(() => scratch.drop())
      return { env: { DATABASE_URL: scratch.url }, args: [], open: () => openStore({ databaseUrl: scratch.url, dataDir: '', feedRetentionMs: 86_400_000 }) }
    }
  }
}

for (const [where, target] of Object.entries(TARGETS)) {
  describe(`plants keys (${where})`, { skip: target.skip }, () => {
    test('create prints the secret once, list shows name, scope, dates and never a secret, revoke ends it', async (t) => {
      const { env, args, open } = await target.make(t)
      const made = await plants(['keys', 'create', 'till-3', '--scope', 'sell', '--expires', '2099-01-31', ...args], env)
      assert.equal(made.code, 0, made.stderr)
      const secret = made.stdout.trim()
      assert.match(secret, /^pcat_[A-Za-z0-9_-]{43}$/)
      assert.match(made.stderr, /created till-3 \(scope sell, expires 2099-01-31T00:00:00Z\)/)
      assert.equal((await plants(['keys', 'create', 'shop', '--scope', 'read', ...args], env)).code, 0)

      const listed = await plants(['keys', 'list', ...args], env)
      assert.equal(listed.code, 0, listed.stderr)
      const lines = listed.stdout.trim().split('\n')
      assert.match(lines[0], /^NAME +SCOPE +CREATED +EXPIRES +LAST USED +REVOKED$/)
      assert.match(lines[1], /^till-3 +sell +\d{4}-\d\d-\d\dT[\d:.]+Z +2099-01-31T00:00:00Z +- +-$/)
      assert.match(lines[2], /^shop +read /)
      assert.equal(listed.stdout.includes(secret), false)
      assert.equal(listed.stdout.includes(secret.slice(5, 20)), false)

      // The service on the same catalogue takes the key, as a till.
      const store = await open()
      const app = await buildApp(testConfig({}), { store })
      t.after(async () => { await app.close(); await store.close() })
      const plant = await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' }, headers: { authorization: `Bearer ${secret}` } })
      assert.equal(plant.statusCode, 403, 'a till key cannot add plants')
      assert.equal((await app.inject({ method: 'POST', url: '/v3/plant', payload: { name: 'Monstera' } })).statusCode, 401, 'stored keys make keys required')

      const revoked = await plants(['keys', 'revoke', 'till-3', ...args], env)
      assert.equal(revoked.code, 0, revoked.stderr)
      assert.match(revoked.stdout, /revoked till-3/)
      assert.match((await plants(['keys', 'list', ...args], env)).stdout, /^till-3 +sell .* \d{4}-\d\d-\d\dT[\d:.]+Z$/m)
      app.keyCache.forget() // the service's cached answer would otherwise last up to a second
      assert.equal((await app.inject({ method: 'PATCH', url: '/v3/plant/1', payload: { status: 'sold' }, headers: { authorization: `Bearer ${secret}` } })).statusCode, 401)
    })

    test('refusals: a taken name, an unknown scope, a bad date, revoking what is not there', async (t) => {
      const { env, args } = await target.make(t)
      assert.equal((await plants(['keys', 'create', 'pos', '--scope', 'sell', ...args], env)).code, 0)
      const taken = await plants(['keys', 'create', 'pos', '--scope', 'sell', ...args], env)
      assert.equal(taken.code, 1)
      assert.match(taken.stderr, /a key named pos exists/)
      const scope = await plants(['keys', 'create', 'x', '--scope', 'root', ...args], env)
      assert.equal(scope.code, 2)
      assert.match(scope.stderr, /--scope must be one of read, sell, write, admin/)
      assert.equal((await plants(['keys', 'create', 'x', ...args], env)).code, 2)
      const date = await plants(['keys', 'create', 'x', '--scope', 'read', '--expires', 'next week', ...args], env)
      assert.equal(date.code, 2)
      assert.match(date.stderr, /--expires must be a date/)
      assert.equal((await plants(['keys', 'create', 'env-1', '--scope', 'read', ...args], env)).code, 2)
      const missing = await plants(['keys', 'revoke', 'nobody', ...args], env)
      assert.equal(missing.code, 1)
      assert.match(missing.stderr, /no live key named nobody/)
      assert.equal((await plants(['keys', 'rotate', ...args], env)).code, 2)
    })
  })
}
