import assert from 'node:assert/strict'
import { test } from 'node:test'
import { WebhookClient } from '../../src/webhooks/client.js'
import { isMetadataAddress, isPrivateAddress, resolvedProblem, shownUrl, targetProblem } from '../../src/webhooks/target.js'
import { startupFacts } from '../../src/ops/startup.js'
import { loadConfig } from '../../src/config.js'
import { receiver } from '../helpers/receiver.js'

// SSRF: a webhook never reaches this host, the private network or a metadata service, whatever
// form the address is written in, and whatever a name resolves to, unless WEBHOOK_ALLOW_PRIVATE.

const REFUSED = [
  'http://127.0.0.1/', 'http://127.1/', 'http://2130706433/', 'http://0177.0.0.1/', 'http://017700000001/', 'http://0x7f000001/', 'http://0x7f.0.0.1/',
  'http://0/', 'http://10.0.0.1/', 'http://167772161/', 'http://012.0.0.1/', 'http://172.16.5.4/', 'http://192.168.1.1/', 'http://0xc0a80101/',
  'http://169.254.169.254/', 'http://2852039166/', 'http://100.64.0.1/',
  'http://[::1]/', 'http://[::]/', 'http://[0:0:0:0:0:0:0:1]/', 'http://[::ffff:127.0.0.1]/', 'http://[::ffff:7f00:1]/', 'http://[::ffff:10.0.0.1]/',
  'http://[::ffff:169.254.169.254]/', 'http://[fd00:ec2::254]/', 'http://[fc00::1]/', 'http://[fe80::1]/', 'http://[64:ff9b::127.0.0.1]/', 'http://[2002:7f00:1::]/',
  'http://[::ffff:0:7f00:1]/', 'http://[::ffff:0:127.0.0.1]/', 'http://[0:0:0:0:ffff:0:a9fe:a9fe]/', 'http://[64:ff9b:1::808:808]/', 'http://[64:ff9b:1:abcd::1]/',
  'http://localhost/', 'https://LOCALHOST./', 'http://shop.localhost/'
]
const ALLOWED = ['https://shop.example/hooks', 'http://93.184.216.34/', 'http://[2606:4700::1111]/', 'http://[64:ff9b::808:808]/', 'http://1.1.1.1:8443/x']

test('loopback, private, link-local and metadata addresses are refused in every written form', () => {
  for (const url of REFUSED) assert.match(targetProblem(url, false) ?? 'allowed', /must not name/, url)
  for (const url of ALLOWED) assert.equal(targetProblem(url, false), undefined, url)
  for (const url of ['ftp://shop.example/', 'file:///etc/passwd', 'gopher://x/', 'javascript:alert(1)']) assert.match(targetProblem(url, false)!, /http/, url)
})

test('WEBHOOK_ALLOW_PRIVATE lets private targets through, but never a metadata service\'s or another scheme', () => {
  const metadata = (url: string): boolean => isMetadataAddress(new URL(url).hostname.replace(/^\[(.*)\]$/, '$1'))
  assert.deepEqual(REFUSED.filter(metadata), ['http://169.254.169.254/', 'http://2852039166/', 'http://[::ffff:169.254.169.254]/', 'http://[fd00:ec2::254]/', 'http://[0:0:0:0:ffff:0:a9fe:a9fe]/'])
  for (const url of REFUSED.filter((u) => !metadata(u))) assert.equal(targetProblem(url, true), undefined, url)
  for (const url of REFUSED.filter(metadata)) assert.match(targetProblem(url, true)!, /metadata service/, url)
  assert.match(targetProblem('ftp://127.0.0.1/', true)!, /http/)
})

test('resolved addresses are checked: IPv4, IPv6, IPv4-mapped and -translated forms, and the local-use NAT64 prefix', () => {
  for (const a of ['127.0.0.1', '10.1.1.1', '169.254.169.254', '::1', 'fe80::1', 'fd00:ec2::254', '::ffff:127.0.0.1', '::ffff:192.168.0.1', '::ffff:0:7f00:1', '64:ff9b:1::a00:1']) assert.ok(isPrivateAddress(a), a)
  for (const a of ['93.184.216.34', '2606:4700::1111', '::ffff:0:808:808', '64:ff9b::808:808']) assert.ok(!isPrivateAddress(a), a)
})

test('a name resolving to 127.0.0.1 is refused after resolution, without a request reaching it', async (t) => {
  const r = await receiver(t)
  const port = new URL(r.url).port
  const client = new WebhookClient({ allowPrivate: false, timeoutMs: 2_000 })
  t.after(() => client.close())
  const refused = await client.post(`http://localhost:${port}/hook`, '{}', [])
  assert.equal(refused.statusCode, null)
  assert.match(refused.error!, /localhost resolves to (127\.0\.0\.1|::1).*refused/)
  assert.equal(r.received.length, 0)
  const allowed = new WebhookClient({ allowPrivate: true, timeoutMs: 2_000 })
  t.after(() => allowed.close())
  assert.equal((await allowed.post(`http://localhost:${port}/hook`, '{}', [])).statusCode, 204)
  assert.equal(r.received.length, 1)
})

test('no more than 4 KiB of an answer is read, and a redirect is not followed', async (t) => {
  const { createServer } = await import('node:http')
  let served = 0
  const server = createServer((req, res) => {
    served++
    if (req.url === '/big') { res.writeHead(200); res.end(Buffer.alloc(10 * 1024 * 1024)) } else { res.writeHead(301, { location: '/big' }).end() }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.after(() => { server.closeAllConnections(); server.close() })
  const port = (server.address() as { port: number }).port
  const client = new WebhookClient({ allowPrivate: true, timeoutMs: 5_000 })
  t.after(() => client.close())
  assert.deepEqual([(await client.post(`http://127.0.0.1:${port}/big`, '{}', [])).statusCode], [200])
  const moved = await client.post(`http://127.0.0.1:${port}/moved`, '{}', [])
  assert.deepEqual([moved.statusCode, moved.error], [301, 'answered 301: redirects are not followed'])
  assert.equal(served, 2)
})

test('the start-up line says whether webhooks may reach private receivers', () => {
  assert.equal(startupFacts(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }), 0).webhooks, 'private receivers allowed (WEBHOOK_ALLOW_PRIVATE)')
  assert.equal(startupFacts(loadConfig({}), 0).webhooks, 'public receivers only')
})

test('a user name or password in a URL is refused; one saved before that rule is shown redacted', () => {
  for (const url of ['http://user:pass@shop.example/x', 'https://token@shop.example/', 'http://:pw@shop.example/']) {
    assert.match(targetProblem(url, false)!, /must not hold a user name or password/, url)
    assert.match(targetProblem(url, true)!, /must not hold a user name or password/, url)
  }
  assert.equal(shownUrl('http://user:pass@shop.example/x?y=1'), 'http://%5Bredacted%5D@shop.example/x?y=1')
  assert.equal(shownUrl('https://shop.example/x'), 'https://shop.example/x')
})

test('a name is resolved when saved: one resolving to a private address is refused; one that does not resolve (yet) is let through', async () => {
  const answers: Record<string, string[]> = { vm: ['127.0.0.1'], twice: ['93.184.216.34', '10.0.0.8'], shop: ['93.184.216.34'] }
  const resolver = async (host: string): Promise<Array<{ address: string }>> => {
    if (!(host in answers)) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' })
    return answers[host].map((address) => ({ address }))
  }
  assert.equal(await resolvedProblem('http://vm:9999/h', false, resolver), 'must not name a loopback, private, link-local or metadata address (vm resolves to 127.0.0.1)')
  assert.match((await resolvedProblem('http://twice/h', false, resolver))!, /twice resolves to 10\.0\.0\.8/)
  assert.equal(await resolvedProblem('http://shop/h', false, resolver), undefined)
  assert.equal(await resolvedProblem('http://nowhere.invalid/h', false, resolver), undefined)
  assert.equal(await resolvedProblem('http://vm:9999/h', true, resolver), undefined)
})

test('a literal private address is refused before every attempt, not only when saved: nothing reaches it', async (t) => {
  const r = await receiver(t)
  const client = new WebhookClient({ allowPrivate: false, timeoutMs: 2_000 })
  t.after(() => client.close())
  const refused = await client.post(r.url, '{}', [])
  assert.equal(refused.statusCode, null)
  assert.match(refused.error!, /^not sent: the URL must not name a loopback, private, link-local or metadata address \(127\.0\.0\.1\) \(WEBHOOK_ALLOW_PRIVATE is off\)$/)
  assert.equal(r.received.length, 0)
})

// An operator's review: a Teredo address and port 0 were saved as targets (201), and a zone id was
// refused as if the URL were not absolute.
test('a Teredo address (2001::/32, which embeds an IPv4) and port 0 are refused; a zone id is refused by name', () => {
  assert.match(targetProblem('http://[2001::7f00:1]/', false)!, /must not name .*\(2001::7f00:1\)/)
  assert.match(targetProblem('http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', false)!, /must not name/)
  assert.equal(targetProblem('http://[2001:4860::8888]/', false), undefined, 'outside 2001::/32, a public address')
  assert.match(targetProblem('http://example.com:0/', false)!, /port 0/)
  assert.match(targetProblem('http://[fe80::1%25eth0]/', false)!, /zone id/)
})
