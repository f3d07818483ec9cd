import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { userInfo } from 'node:os'
import { describe, test } from 'node:test'
import { plants } from '../../scripts/lib/cli-harness.js'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { CLI_TARGETS } from '../helpers/cli-targets.js'

// `plants keys create|list|revoke` on the catalogue's own database, and the service honouring them.

for (const [where, target] of Object.entries(CLI_TARGETS)) {
  describe(`plants keys (${where})`, { skip: target.skip }, () => {
    test('create prints the secret once, list shows name, scope, dates and never a secret, revoke ends it', async (t) => {
      const { env, args, open } = await target.make(t)
      const made = await plants(['keys', 'create', 'till-3', '--scope', 'sell', '--expires', '2099-01-31', '--create', ...args], env)
      assert.equal(made.code, 0, made.stderr)
      const secret = made.stdout.trim()
      assert.match(secret, /^pcat_[A-Za-z0-9_-]{43}$/)
      // A date alone: the key works through that day (UTC), so it expires as the next one starts.
      assert.match(made.stderr, /created till-3 \(scope sell, works through 2099-01-31 \(UTC\), expires 2099-02-01T00:00:00\.000Z\)/)
      assert.equal((await plants(['keys', 'create', 'shop', '--scope', 'read', ...args], env)).code, 0)
      // A date and time is said as the instant it is.
      const timed = await plants(['keys', 'create', 'till-4', '--scope', 'sell', '--expires', '2099-01-31T18:00:00+01:00', ...args], env)
      assert.match(timed.stderr, /created till-4 \(scope sell, expires 2099-01-31T17:00:00\.000Z\)/)

      const listed = await plants(['keys', 'list', ...args], env)
      assert.equal(listed.code, 0, listed.stderr)
      const lines = listed.stdout.trim().split('\n')
      assert.match(lines[0], /^NAME +SCOPE +STATUS +CREATED +EXPIRES +LAST USED +REVOKED$/)
      // Every time in the API's one form: RFC 3339, UTC, with milliseconds.
      assert.match(lines[1], /^till-3 +sell +active +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z +2099-02-01T00:00:00\.000Z +- +-$/)
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
      assert.match((await plants(['keys', 'list', ...args], env)).stdout, /^till-3 +sell +revoked .* \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/m)
      const again = await plants(['keys', 'revoke', 'till-3', ...args], env)
      assert.deepEqual([again.code, again.stdout.replace(/at \S+/, 'at T')], [0, 'till-3 was revoked already, at T\n'])
      app.keyCache.forget() // the service's cached answer would otherwise last up to a second
      assert.equal((await app.inject({ method: 'PATCH', url: '/v3/plant/1', payload: { status: 'sold' }, headers: { authorization: `Bearer ${secret}` } })).statusCode, 401)
    })

    test('create and revoke write the service\'s log lines for them on standard error (JSON, key cli, the account that ran it); LOG_LEVEL above info or silent writes none', async (t) => {
      const { env, args } = await target.make(t)
      const lines = (stderr: string): Array<Record<string, unknown>> => stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
      const made = await plants(['keys', 'create', 'till-3', '--scope', 'sell', '--create', ...args], env)
      assert.equal(made.code, 0, made.stderr)
      const [created, ...more] = lines(made.stderr)
      assert.deepEqual(more, [])
      assert.match(String(created.time), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.deepEqual({ level: created.level, msg: created.msg, key: created.key, target: created.target, scope: created.scope, user: created.user },
        { level: 'info', msg: 'API key created', key: 'cli', target: 'till-3', scope: 'sell', user: userInfo().username })
      assert.ok(!made.stderr.includes(made.stdout.trim()), 'never the secret')
      const revoked = lines((await plants(['keys', 'revoke', 'till-3', ...args], env)).stderr)
      assert.deepEqual(revoked.map((l) => [l.msg, l.key, l.target, l.revokedAlready]), [['API key revoked', 'cli', 'till-3', undefined]])
      const again = lines((await plants(['keys', 'revoke', 'till-3', ...args], env)).stderr)
      assert.deepEqual(again.map((l) => [l.msg, l.target, l.revokedAlready]), [['API key revoked', 'till-3', true]])
      for (const level of ['warn', 'silent']) {
        const quiet = await plants(['keys', 'create', `quiet-${level}`, '--scope', 'read', ...args], { ...env, LOG_LEVEL: level })
        assert.equal(quiet.code, 0, quiet.stderr)
        assert.deepEqual(lines(quiet.stderr), [])
      }
      // Refused: nothing was done, nothing is logged.
      assert.deepEqual(lines((await plants(['keys', 'create', 'till-3', '--scope', 'sell', ...args], env)).stderr), [])
    })

    test('list --json prints a JSON array of the keys as GET /v3/keys shows them, never a secret; no keys is []', async (t) => {
      const { env, args, open } = await target.make(t)
      await (await open()).close()
      assert.equal((await plants(['keys', 'list', '--json', ...args], env)).stdout, '[]\n')
      assert.equal((await plants(['keys', 'create', 'first', '--scope', 'admin', ...args], env)).code, 0)
      assert.equal((await plants(['keys', 'revoke', 'first', ...args], env)).code, 0)
      const secret = (await plants(['keys', 'create', 'till-3', '--scope', 'sell', '--expires', '2099-01-31', ...args], env)).stdout.trim()
      const listed = await plants(['keys', 'list', '--json', ...args], env)
      assert.equal(listed.code, 0, listed.stderr)
      assert.ok(!listed.stdout.includes(secret.slice(5, 20)))
      const keys = JSON.parse(listed.stdout) as Array<Record<string, unknown>>
      const time = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
      assert.ok(keys.every((k) => time.test(String(k.createdAt))))
      assert.match(String(keys[0].revokedAt), time)
      assert.deepEqual(keys.map((k) => ({ ...k, createdAt: 'T', revokedAt: k.revokedAt === null ? null : 'T' })), [
        { name: 'first', scope: 'admin', createdAt: 'T', expiresAt: null, lastUsedAt: null, revokedAt: 'T', status: 'revoked' },
        { name: 'till-3', scope: 'sell', createdAt: 'T', expiresAt: '2099-02-01T00:00:00.000Z', lastUsedAt: null, revokedAt: null, status: 'active' }
      ])
      const refused = await plants(['keys', 'revoke', 'till-3', '--json', ...args], env)
      assert.deepEqual([refused.code, refused.stderr.split('\n')[0]], [2, 'plants keys: --json goes with list'])
    })

    test('refusals: a taken name, an unknown scope, a bad date, revoking what is not there', async (t) => {
      const { env, args } = await target.make(t)
      assert.equal((await plants(['keys', 'create', 'pos', '--scope', 'sell', '--create', ...args], env)).code, 0)
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
      // Dates that do not exist are refused, never rolled over into the next month.
      const impossible = await plants(['keys', 'create', 'x', '--scope', 'read', '--expires', '2027-02-30', ...args], env)
      assert.deepEqual([impossible.code, impossible.stderr.split('\n')[0]], [2, 'plants keys: --expires "2027-02-30" is not a date: February 2027 has 28 days'])
      assert.equal((await plants(['keys', 'create', 'x', '--scope', 'read', '--expires', '2027-01-31T24:00:00Z', ...args], env)).code, 2)
      const past = await plants(['keys', 'create', 'x', '--scope', 'read', '--expires', '2001-01-01', ...args], env)
      assert.deepEqual([past.code, past.stderr.split('\n')[0]], [2, 'plants keys: --expires must be in the future (2001-01-02T00:00:00.000Z has passed)'])
      const missing = await plants(['keys', 'revoke', 'nobody', ...args], env)
      assert.equal(missing.code, 1)
      assert.match(missing.stderr, /no key named nobody/)
      const env1 = await plants(['keys', 'revoke', 'env-1', ...args], env)
      assert.equal(env1.code, 2)
      assert.match(env1.stderr, /env-1 is a key of API_KEYS or API_KEYS_FILE, not a stored one: remove it there and restart/)
      assert.equal((await plants(['keys', 'rotate', ...args], env)).code, 2)
    })

    test('a folder or database with no catalogue is refused, and left without one, unless create has --create', async (t) => {
      const { env, args, open } = await target.make(t)
      const wheres = where === 'postgres' ? /no catalogue in the PostgreSQL database .* \(it has no plants table\)/ : /no catalogue in \S+data \(\S+catalogue\.db does not exist\)/
      for (const command of [['keys', 'create', 'ghost', '--scope', 'admin'], ['keys', 'list'], ['keys', 'revoke', 'ghost'], ['webhooks', 'list'], ['webhooks', 'pause', '1']]) {
        const refused = await plants([...command, ...args], env)
        assert.equal(refused.code, 1, command.join(' '))
        assert.equal(refused.stdout, '', 'no secret is printed')
        assert.match(refused.stderr, wheres)
      }
      assert.match((await plants(['keys', 'create', 'ghost', '--scope', 'admin', ...args], env)).stderr, /pass --create to start a new catalogue there/)
      if (where === 'postgres') {
        const { default: pg } = await import('pg')
        const client = new pg.Client({ connectionString: env.DATABASE_URL })
        await client.connect()
        try {
          const { rows } = await client.query("SELECT to_regclass('plants') AS plants, to_regclass('api_keys') AS keys")
          assert.deepEqual(rows[0], { plants: null, keys: null }, 'nothing was created')
        } finally { await client.end() }
      } else {
        assert.equal(existsSync(args[1]), false, 'the folder was not made')
      }
      assert.equal((await plants(['keys', 'list', '--create', ...args], env)).code, 2, '--create goes with create only')
      const made = await plants(['keys', 'create', 'first', '--scope', 'admin', '--create', ...args], env)
      assert.equal(made.code, 0, made.stderr)
      const store = await open()
      t.after(() => store.close())
      assert.deepEqual((await store.keys.list()).map((k) => k.name), ['first'])
    })
  })
}
