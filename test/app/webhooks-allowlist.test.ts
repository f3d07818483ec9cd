import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { ConfigError, loadConfig } from '../../src/config.js'
import { startupFacts } from '../../src/ops/startup.js'
import { WebhookClient } from '../../src/webhooks/client.js'
import { isMetadataAddress, PrivateNetworks, privateReach, resolvedProblem, targetProblem } from '../../src/webhooks/target.js'
import { build } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { logCollector } from '../helpers/log-lines.js'
import { receiver, until } from '../helpers/receiver.js'

// WEBHOOK_PRIVATE_NETWORKS narrows WEBHOOK_ALLOW_PRIVATE=true to the networks it names; a cloud
// metadata service is refused whatever either allows, in every writing of its address.

const METADATA = [
  'http://169.254.169.254/latest/meta-data/', 'http://2852039166/', 'http://0xa9fea9fe/', 'http://0251.0376.0251.0376/', 'http://169.254.170.2/v2/credentials',
  'http://169.254.170.23/', 'http://100.100.100.200/', 'http://192.0.0.192/', 'http://169.254.0.23/',
  'http://[::ffff:169.254.169.254]/', 'http://[::ffff:a9fe:a9fe]/', 'http://[::ffff:0:a9fe:a9fe]/', 'http://[::169.254.169.254]/', 'http://[64:ff9b::a9fe:a9fe]/',
  'http://[64:ff9b:1::a9fe:a9fe]/', 'http://[2002:a9fe:a9fe::1]/', 'http://[fd00:ec2::254]/', 'http://[fd00:ec2:0:0:0:0:0:254]/', 'http://[FD00:EC2::254]/', 'http://[fd00:ec2::23]/'
]
const EVERYTHING = new PrivateNetworks(['0.0.0.0/0', '::/0'])

test('a metadata service is refused in every writing of its address, with WEBHOOK_ALLOW_PRIVATE=true and with networks naming it', () => {
  for (const url of METADATA) {
    for (const reach of [false, true, EVERYTHING, new PrivateNetworks(['169.254.0.0/16', 'fd00::/8', '100.64.0.0/10', '192.0.0.0/24', '::ffff:0:0/96', '64:ff9b::/96'])]) {
      assert.match(targetProblem(url, reach) ?? 'allowed', /must not name /, `${url} ${String(reach)}`)
    }
    assert.match(targetProblem(url, true)!, /cloud metadata service's address, refused whatever WEBHOOK_ALLOW_PRIVATE allows/, url)
  }
  for (const a of ['169.254.169.254', '::ffff:169.254.169.254', 'fd00:ec2::254', '64:ff9b::a9fe:a9fe']) assert.ok(isMetadataAddress(a), a)
  // Its neighbours are only private: WEBHOOK_ALLOW_PRIVATE decides for them.
  for (const url of ['http://169.254.169.253/', 'http://[fd00:ec2::255]/', 'http://100.100.100.201/']) {
    assert.equal(targetProblem(url, true), undefined, url)
    assert.match(targetProblem(url, false)!, /must not name a loopback, private, link-local or metadata address \(/, url)
  }
})

test('with networks named, a private address inside one is allowed (in its IPv6 writings too), any other refused, public ones as before', () => {
  const reach = new PrivateNetworks(['10.20.0.0/16', 'fd12:3456::/48', '192.168.1.7'])
  for (const url of ['http://10.20.3.4:8080/hook', 'http://[::ffff:10.20.3.4]/', 'http://[::ffff:a14:304]/', 'http://[fd12:3456::1]/', 'http://[fd12:3456:0:ffff::9]/', 'http://192.168.1.7/', 'https://shop.example/', 'http://93.184.216.34/']) {
    assert.equal(targetProblem(url, reach), undefined, url)
  }
  for (const url of ['http://10.21.0.1/', 'http://192.168.1.8/', 'http://127.0.0.1/', 'http://[::1]/', 'http://[fd12:3457::1]/', 'http://[::ffff:10.21.0.1]/', 'http://0/']) {
    assert.match(targetProblem(url, reach)!, /must not name a loopback, private, link-local or metadata address outside WEBHOOK_PRIVATE_NETWORKS \(/, url)
  }
  // A name is the allowlist's to decide once resolved (localhost included), when saved and before each attempt.
  assert.equal(targetProblem('http://localhost:9/', reach), undefined)
  assert.match(targetProblem('http://localhost:9/', false)!, /localhost/)
})

test('names are resolved and checked against the networks and the metadata addresses, also with WEBHOOK_ALLOW_PRIVATE=true', async () => {
  const resolver = async (name: string): Promise<Array<{ address: string }>> =>
    ({ vm: [{ address: '127.0.0.1' }], internal: [{ address: '10.20.0.5' }], meta: [{ address: '169.254.169.254' }], sneaky: [{ address: '10.20.0.5' }, { address: 'fd00:ec2::254' }] })[name] ?? []
  const reach = new PrivateNetworks(['10.20.0.0/16'])
  assert.equal(await resolvedProblem('http://internal/', reach, resolver), undefined)
  assert.equal(await resolvedProblem('http://vm/', reach, resolver), 'must not name a loopback, private, link-local or metadata address outside WEBHOOK_PRIVATE_NETWORKS (vm resolves to 127.0.0.1)')
  assert.equal(await resolvedProblem('http://vm/', true, resolver), undefined)
  for (const r of [true, reach, EVERYTHING]) {
    assert.match((await resolvedProblem('http://meta/', r, resolver))!, /metadata service's address.*\(meta resolves to 169\.254\.169\.254\)/)
    assert.match((await resolvedProblem('http://sneaky/', r, resolver))!, /\(sneaky resolves to fd00:ec2::254\)/)
  }
})

test('WEBHOOK_PRIVATE_NETWORKS is read once at start: addresses or CIDRs, with WEBHOOK_ALLOW_PRIVATE=true only; a mistake stops the start naming it', () => {
  const config = loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_PRIVATE_NETWORKS: '10.20.0.0/16, fd12:3456::/48,192.168.1.7' })
  assert.deepEqual(config.webhookPrivateNetworks, ['10.20.0.0/16', 'fd12:3456::/48', '192.168.1.7'])
  assert.ok(privateReach(config) instanceof PrivateNetworks)
  assert.equal(startupFacts(config, 0).webhooks, 'private receivers in 10.20.0.0/16, fd12:3456::/48, 192.168.1.7 allowed (WEBHOOK_PRIVATE_NETWORKS)')
  assert.deepEqual(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookPrivateNetworks, [])
  assert.equal(privateReach(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' })), true)
  assert.equal(privateReach(loadConfig({})), false)
  const refusals: Array<[NodeJS.ProcessEnv, RegExp]> = [
    [{ WEBHOOK_PRIVATE_NETWORKS: '10.0.0.0/8' }, /^Invalid configuration: WEBHOOK_PRIVATE_NETWORKS narrows which private receivers WEBHOOK_ALLOW_PRIVATE=true lets webhooks reach, but WEBHOOK_ALLOW_PRIVATE is not true: set WEBHOOK_ALLOW_PRIVATE=true too, or unset WEBHOOK_PRIVATE_NETWORKS$/],
    [{ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_PRIVATE_NETWORKS: '10.0.0.0/33' }, /^Invalid configuration: WEBHOOK_PRIVATE_NETWORKS="10\.0\.0\.0\/33": "10\.0\.0\.0\/33" is not an address or CIDR network; expected comma-separated addresses or CIDR networks/],
    [{ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_PRIVATE_NETWORKS: '10.0.0.0/8,hooks.internal' }, /"hooks\.internal" is not an address or CIDR network/],
    [{ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_PRIVATE_NETWORKS: 'fd12::/129' }, /"fd12::\/129" is not an address or CIDR network/],
    [{ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_PRIVATE_NETWORKS: '10.0.0.0/8,' }, /^Invalid configuration: WEBHOOK_PRIVATE_NETWORKS item 2 of 2 is empty/],
    [{ WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_PRIVATE_NETWORKS: ' ' }, /^Invalid configuration: WEBHOOK_PRIVATE_NETWORKS is set but empty/]
  ]
  for (const [env, message] of refusals) assert.throws(() => loadConfig(env), (err: Error) => err instanceof ConfigError && message.test(err.message), JSON.stringify(env))
})

test('a delivery outside the networks is refused before a connection, by address and by name; one inside them is sent', async (t) => {
  const r = await receiver(t)
  const port = new URL(r.url).port
  for (const [reach, url, sent] of [
    [new PrivateNetworks(['10.0.0.0/8']), r.url, false],
    [new PrivateNetworks(['10.0.0.0/8']), `http://localhost:${port}/hook`, false],
    [new PrivateNetworks(['127.0.0.0/8', '::1']), r.url, true],
    [new PrivateNetworks(['127.0.0.1', '::1']), `http://localhost:${port}/hook`, true]
  ] as const) {
    const client = new WebhookClient({ allowPrivate: reach, timeoutMs: 5_000 })
    const before = r.received.length
    const result = await client.post(url, '{}', []).finally(() => client.close())
    assert.equal(result.error === null, sent, `${url} with ${reach.entries.join(',')}: ${String(result.error)}`)
    assert.equal(r.received.length - before, sent ? 1 : 0)
    if (!sent) assert.match(String(result.error), /outside WEBHOOK_PRIVATE_NETWORKS/)
  }
})

for (const engine of ENGINES) {
  describe(`POST /v3/webhooks with the networks named (${engine.name})`, { skip: engine.skip }, () => {
    test('a receiver inside them is saved; one outside them, or a metadata address, is a 400 saying why', async (t) => {
      const api = await build(t, engine, { webhookAllowPrivate: true, webhookPrivateNetworks: ['10.20.0.0/16'] })
      const saved = await api.request({ method: 'POST', url: '/v3/webhooks', payload: { url: 'http://10.20.0.9:8080/hooks' } })
      assert.equal(saved.statusCode, 201, saved.body)
      for (const [url, why] of [
        ['http://10.21.0.9/hooks', /must not name a loopback, private, link-local or metadata address outside WEBHOOK_PRIVATE_NETWORKS \(10\.21\.0\.9\)/],
        ['http://169.254.169.254/', /must not name a cloud metadata service's address, refused whatever WEBHOOK_ALLOW_PRIVATE allows \(169\.254\.169\.254\)/]
      ] as const) {
        const refused = await api.request({ method: 'POST', url: '/v3/webhooks', payload: { url } })
        assert.equal(refused.statusCode, 400, url)
        assert.match(refused.json().detail, why)
        assert.doesNotMatch(refused.json().detail, /the operator may allow internal receivers/)
      }
      assert.equal((await api.request({ method: 'GET', url: '/v3/webhooks' })).json().items.length, 1)
    })

    test('a webhook saved to an address now outside the networks is not sent to, and says why: its record, and one warning in the log', async (t) => {
      const log = logCollector()
      const api = await build(t, engine, { logLevel: 'info', webhookAllowPrivate: true, webhookPrivateNetworks: ['10.0.0.0/8'] }, {}, { logStream: log.stream, webhooks: { retryDelayMs: () => 60_000 } })
      const r = await receiver(t)
      // As a webhook saved before a restart with a wider setting: the store takes it as it is.
      const { id } = await api.app.store.webhooks.create({ url: r.url, events: ['created'], secret: 'whsec_' + Buffer.alloc(32).toString('base64') }, Date.now())
      await api.add()
      await until('refused', async () => (await api.request({ method: 'GET', url: `/v3/webhooks/${id}` })).json().lastError !== null)
      assert.match((await api.request({ method: 'GET', url: `/v3/webhooks/${id}` })).json().lastError, /^not sent: the URL must not name a loopback, private, link-local or metadata address outside WEBHOOK_PRIVATE_NETWORKS \(127\.0\.0\.1\)$/)
      assert.equal(r.received.length, 0)
      await api.app.webhookDeliverer.rescan()
      const warned = log.lines().filter((l) => l.webhook === id && l.level === 'warn' && /is never sent to/.test(l.msg))
      assert.equal(warned.length, 1)
      assert.match(warned[0].msg, /is never sent to by these settings: its URL must not name .* outside WEBHOOK_PRIVATE_NETWORKS \(127\.0\.0\.1\); give it another URL$/)
    })
  })
}
