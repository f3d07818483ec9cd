import assert from 'node:assert/strict'
import { describe, test, type TestContext } from 'node:test'
import { Webhook as Verifier } from 'standardwebhooks'
import { plants } from '../../scripts/lib/cli-harness.js'
import { openStore } from '../../src/store/open/open-store.js'
import { CLI_TARGETS } from '../helpers/cli-targets.js'
import { receiver } from '../helpers/receiver.js'

// `plants webhooks add|list|pause|resume|remove|test` on the catalogue's own database.

/** An existing catalogue (webhooks are added to one that exists) that lets webhooks call this machine. */
async function catalogue (target: typeof CLI_TARGETS[string], t: TestContext): Promise<{ env: NodeJS.ProcessEnv, args: string[] }> {
  const { env, args, open } = await target.make(t)
  await (await open()).close()
  return { env: { ...env, WEBHOOK_ALLOW_PRIVATE: 'true' }, args }
}

for (const [where, target] of Object.entries(CLI_TARGETS)) {
  describe(`plants webhooks (${where})`, { skip: target.skip }, () => {
    test('add prints the secret once; list, pause, resume, test and remove act on the stored webhook', async (t) => {
      const { env, args } = await catalogue(target, t)
      const r = await receiver(t)
      const added = await plants(['webhooks', 'add', r.url, '--events', 'created,deleted', ...args], env)
      assert.equal(added.code, 0, added.stderr)
      const secret = added.stdout.trim()
      assert.match(secret, /^whsec_/)
      assert.match(added.stderr, /added webhook 1 .*created, deleted/)
      // The receiver is on loopback, allowed by this command's WEBHOOK_ALLOW_PRIVATE: the service needs its own.
      assert.match(added.stderr, /\nnote: an internal address: the service sends to it only while it runs with WEBHOOK_ALLOW_PRIVATE=true too\n$/)
      const listed = await plants(['webhooks', 'list', ...args], env)
      assert.match(listed.stdout, /^1 +active +created,deleted +0 +http:\/\/127\.0\.0\.1:\d+\/hook +-$/m)
      assert.ok(!listed.stdout.includes(secret))
      assert.equal((await plants(['webhooks', 'pause', '1', ...args], env)).code, 0)
      assert.match((await plants(['webhooks', 'list', ...args], env)).stdout, /^1 +paused/m)
      assert.equal((await plants(['webhooks', 'resume', '1', ...args], env)).code, 0)
      const tested = await plants(['webhooks', 'test', '1', ...args], env)
      assert.equal(tested.code, 0, tested.stderr)
      assert.match(tested.stdout, /answered 204/)
      assert.deepEqual(new Verifier(secret).verify(r.received[0].body, r.received[0].headers as Record<string, string>), { kind: 'test', webhook: 1 })
      // The same receiver again: refused, naming the webhook that sends to it already.
      const twice = await plants(['webhooks', 'add', r.url, ...args], env)
      assert.deepEqual([twice.code, twice.stdout], [1, ''])
      assert.equal(twice.stderr, `plants webhooks: webhook 1 already sends to ${r.url}: each change would be sent twice. Remove it first (plants webhooks remove 1), or change its events over HTTP (PATCH /v3/webhooks/1)\n`)
      assert.equal((await plants(['webhooks', 'remove', '1', ...args], env)).code, 0)
      assert.equal((await plants(['webhooks', 'list', ...args], env)).stdout, 'no webhooks\n')
      const missing = await plants(['webhooks', 'pause', '1', ...args], env)
      assert.deepEqual([missing.code, missing.stderr], [1, 'plants webhooks: no webhook 1 (plants webhooks list shows them)\n'])
    })

    test('rotate prints a new secret that signs beside the old one; deliveries lists the attempts; list shows why a webhook fails', async (t) => {
      const { env, args } = await catalogue(target, t)
      const r = await receiver(t)
      const old = (await plants(['webhooks', 'add', r.url, ...args], env)).stdout.trim()
      const rotated = await plants(['webhooks', 'rotate', '1', ...args], env)
      assert.equal(rotated.code, 0, rotated.stderr)
      const secret = rotated.stdout.trim()
      assert.match(secret, /^whsec_/)
      assert.notEqual(secret, old)
      assert.match(rotated.stderr, /^rotated webhook 1's secret: .*keeps signing beside it until \d{4}-\d\d-\d\dT/)
      assert.equal((await plants(['webhooks', 'test', '1', ...args], env)).code, 0)
      const [{ body, headers }] = r.received
      assert.equal(String(headers['webhook-signature']).split(' ').length, 2)
      new Verifier(old).verify(body, headers as Record<string, string>)
      new Verifier(secret).verify(body, headers as Record<string, string>)
      const deliveries = await plants(['webhooks', 'deliveries', '1', ...args], env)
      assert.equal(deliveries.code, 0, deliveries.stderr)
      assert.match(deliveries.stdout, /^SEQ +EVENT +ATTEMPT +AT +STATUS +MS +ERROR\n- +test +1 +\d{4}-\S+Z +204 +\d+ +-\n$/)
      assert.deepEqual([(await plants(['webhooks', 'rotate', '9', ...args], env)).code, (await plants(['webhooks', 'deliveries', '9', ...args], env)).code], [1, 1])
      // Retries ran out at change 3: list says so, with since when and the last error.
      const store = await openStore(env.DATABASE_URL ? { databaseUrl: env.DATABASE_URL, dataDir: '', feedRetentionMs: 86_400_000 } : { dataDir: args[1], feedRetentionMs: 86_400_000 })
      await store.webhooks.recordAttempts(1, [{ seq: 3, attempt: 9, at: Date.UTC(2026, 0, 2), statusCode: 500, error: 'answered 500', durationMs: 3, event: 'stock.low' }],
        { cursor: 2, attempts: 9, nextAttemptAt: null, failingSince: Date.UTC(2026, 0, 1), lastError: 'answered 500', failing: true })
      await store.close()
      // The table names what each attempt sent, as --json does.
      assert.match((await plants(['webhooks', 'deliveries', '1', ...args], env)).stdout, /^3 +stock\.low +9 +2026-01-02T00:00:00\.000Z +500 +3 +answered 500$/m)
      const listed = await plants(['webhooks', 'list', ...args], env)
      assert.match(listed.stdout, /^1 +failing +created,updated,deleted +2 +\S+ +9 failed since 2026-01-01T00:00:00\.000Z, retries ran out \(resume to try again\): answered 500$/m)
    })

    test('list --json and deliveries --json print JSON arrays, each item as the API shows it; empty lists are []', async (t) => {
      const { env, args } = await catalogue(target, t)
      assert.equal((await plants(['webhooks', 'list', '--json', ...args], env)).stdout, '[]\n')
      const r = await receiver(t)
      const secret = (await plants(['webhooks', 'add', r.url, '--events', 'created', ...args], env)).stdout.trim()
      assert.equal((await plants(['webhooks', 'deliveries', '1', '--json', ...args], env)).stdout, '[]\n')
      assert.equal((await plants(['webhooks', 'test', '1', ...args], env)).code, 0)
      const listed = await plants(['webhooks', 'list', '--json', ...args], env)
      assert.equal(listed.code, 0, listed.stderr)
      assert.ok(!listed.stdout.includes(secret))
      const [webhook, ...more] = JSON.parse(listed.stdout)
      assert.deepEqual(more, [])
      assert.match(webhook.createdAt, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      assert.deepEqual({ ...webhook, createdAt: 'T' }, {
        id: 1, url: r.url, events: ['created'], status: 'active', createdAt: 'T', deliveredUpTo: 0, attempts: 0, nextAttemptAt: null, failingSince: null, lastError: null, previousSecretExpiresAt: null
      })
      const deliveries = JSON.parse((await plants(['webhooks', 'deliveries', '1', '--json', ...args], env)).stdout)
      assert.equal(deliveries.length, 1)
      assert.deepEqual({ ...deliveries[0], at: 'T', durationMs: 0 }, { seq: 0, attempt: 1, at: 'T', statusCode: 204, error: null, durationMs: 0, response: '', event: 'test' })
      const refused = await plants(['webhooks', 'pause', '1', '--json', ...args], env)
      assert.deepEqual([refused.code, refused.stderr.split('\n')[0]], [2, 'plants webhooks: --json goes with list and deliveries'])
    })

    test('add and test follow the service\'s settings: WEBHOOK_PRIVATE_NETWORKS narrows what may be added and what a test send reaches; a metadata address never', async (t) => {
      const { env, args } = await catalogue(target, t)
      const r = await receiver(t)
      assert.equal((await plants(['webhooks', 'add', r.url, ...args], env)).code, 0)
      const narrowed = { ...env, WEBHOOK_PRIVATE_NETWORKS: '10.20.0.0/16' }
      // Saved while every private address was allowed; the service's narrower setting now keeps the test send from it.
      const tested = await plants(['webhooks', 'test', '1', ...args], narrowed)
      assert.equal(tested.code, 1)
      assert.match(tested.stderr, /^plants webhooks: webhook 1 \(http:\/\/127\.0\.0\.1:\d+\/hook\): not sent: the URL must not name a loopback, private, link-local or metadata address outside WEBHOOK_PRIVATE_NETWORKS \(127\.0\.0\.1\)/)
      assert.equal(r.received.length, 0)
      assert.equal((await plants(['webhooks', 'test', '1', ...args], { ...env, WEBHOOK_PRIVATE_NETWORKS: '127.0.0.0/8' })).code, 0)
      assert.equal(r.received.length, 1)
      const outside = await plants(['webhooks', 'add', 'http://10.21.0.9/hook', ...args], narrowed)
      assert.deepEqual([outside.code, outside.stderr], [1, 'plants webhooks: the URL must not name a loopback, private, link-local or metadata address outside WEBHOOK_PRIVATE_NETWORKS (10.21.0.9)\n'])
      assert.equal((await plants(['webhooks', 'add', 'http://10.20.0.9/hook', ...args], narrowed)).code, 0)
      const metadata = await plants(['webhooks', 'add', 'http://[::ffff:169.254.169.254]/', ...args], env)
      assert.deepEqual([metadata.code, metadata.stderr], [1, 'plants webhooks: the URL must not name a cloud metadata service\'s address, refused whatever WEBHOOK_ALLOW_PRIVATE allows (::ffff:a9fe:a9fe)\n'])
      // A setting the service would refuse to start with is refused here too, saying why.
      const alone = await plants(['webhooks', 'list', ...args], { ...env, WEBHOOK_ALLOW_PRIVATE: 'false', WEBHOOK_PRIVATE_NETWORKS: '10.0.0.0/8' })
      assert.equal(alone.code, 1)
      assert.match(alone.stderr, /WEBHOOK_PRIVATE_NETWORKS narrows which private receivers WEBHOOK_ALLOW_PRIVATE=true lets webhooks reach/)
    })

    test('--url is refused with where webhooks are managed instead', async (t) => {
      const { env, args } = await catalogue(target, t)
      const refused = await plants(['webhooks', 'list', '--url', 'http://127.0.0.1:8080', ...args], env)
      assert.equal(refused.code, 2)
      assert.match(refused.stderr, /not on a running service \(--url\): over HTTP, use \/v3\/webhooks with an admin key/)
    })

    test('a receiver the catalogue refuses (a private address without WEBHOOK_ALLOW_PRIVATE, not http) exits 1, as a refusal; no URL at all, an unknown kind or a bad id is a usage error', async (t) => {
      const { env, args } = await catalogue(target, t)
      const privateRefused = await plants(['webhooks', 'add', 'http://127.0.0.1:9/', ...args], { ...env, WEBHOOK_ALLOW_PRIVATE: 'false' })
      assert.equal(privateRefused.code, 1)
      assert.match(privateRefused.stderr, /must not name a loopback.*WEBHOOK_ALLOW_PRIVATE=true/)
      assert.doesNotMatch(privateRefused.stderr, /--help/)
      const notHttp = await plants(['webhooks', 'add', 'ftp://shop.example/', ...args], { ...env, WEBHOOK_ALLOW_PRIVATE: 'false' })
      assert.equal(notHttp.code, 1)
      assert.match(notHttp.stderr, /must be an http:\/\/ or https:\/\/ URL/)
      assert.doesNotMatch(notHttp.stderr, /WEBHOOK_ALLOW_PRIVATE/)
      assert.equal((await plants(['webhooks', 'add', 'shop.example/hooks', ...args], env)).code, 2)
      assert.equal((await plants(['webhooks', 'add', 'https://shop.example/', '--events', 'sold', ...args], env)).code, 2)
      assert.equal((await plants(['webhooks', 'pause', 'x', ...args], env)).code, 2)
      assert.equal((await plants(['webhooks', 'frobnicate', ...args], env)).code, 2)
    })
  })
}
