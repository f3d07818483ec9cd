import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { ENGINES } from '../helpers/engines.js'
import { freePort, ROOT, tempDir } from '../helpers/process.js'

// An independent contract check: Stoplight Prism, as a validating proxy in front of the service,
// judges every response against the served OpenAPI document. Any response violation of error
// severity fails the test; a Prism that cannot start skips it with the reason, never a silent pass.

const PRISM = join(ROOT, 'node_modules/.bin/prism')

interface Violation { location: string[], severity: string, message: string, code?: string }
interface Exchange { what: string, status: number, violations: Violation[] }

async function startPrism (document: string, upstream: string): Promise<{ base: string, child: ChildProcess, logs: () => string } | string> {
  if (!existsSync(PRISM)) return `${PRISM} is not installed (npm ci installs @stoplight/prism-cli)`
  const port = await freePort()
  const child = spawn(PRISM, ['proxy', document, upstream, '--port', String(port), '--host', '127.0.0.1', '--errors', 'false'], { stdio: ['ignore', 'pipe', 'pipe'] })
  let logs = ''
  child.stdout!.on('data', (b: Buffer) => { logs += b.toString() })
  child.stderr!.on('data', (b: Buffer) => { logs += b.toString() })
  const outcome = await new Promise<string | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(`Prism did not start within 60 s:\n${logs}`), 60_000)
    child.once('exit', (code) => { clearTimeout(timer); resolve(`Prism exited with ${code} before listening:\n${logs}`) })
    child.stdout!.on('data', () => {
      if (/Prism is listening on/.test(logs)) { clearTimeout(timer); resolve(undefined) }
    })
  })
  if (outcome !== undefined) {
    child.kill()
    return outcome
  }
  return { base: `http://127.0.0.1:${port}`, child, logs: () => logs }
}

interface Proxy { base: string, exchanges: Exchange[], logs: () => string }

/** Sends one request through Prism and keeps what Prism said about it. */
async function call (proxy: Proxy, method: string, path: string, options: { body?: unknown, raw?: string, headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...options.headers }
  let body: string | undefined = options.raw
  if (options.body !== undefined) body = JSON.stringify(options.body)
  if (body !== undefined) headers['content-type'] ??= 'application/json'
  const res = await fetch(`${proxy.base}${path}`, { method, headers, body })
  const text = await res.text()
  const header = res.headers.get('sl-violations')
  const violations: Violation[] = header ? JSON.parse(header.replace(/^Too many violations! /, '')) : []
  proxy.exchanges.push({ what: `${method} ${path} → ${res.status}`, status: res.status, violations })
  return { status: res.status, headers: res.headers, body: text, json: () => JSON.parse(text) }
}

for (const engine of ENGINES) {
  describe(`Prism proxy contract check on ${engine.name}`, { skip: engine.skip }, () => {
    let proxy: Proxy | string = 'not started'
    const closers: Array<() => unknown> = []
    before(async () => {
      const store = await engine.open()
      const app = await buildApp(testConfig(), { store })
      const dir = tempDir('plants-prism')
      closers.push(async () => { await app.close(); await store.close(); dir.remove() })
      await app.listen({ host: '127.0.0.1', port: 0 })
      const upstream = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
      const document = join(dir.path, 'openapi.json')
      writeFileSync(document, JSON.stringify((await app.inject({ method: 'GET', url: '/v3/openapi.json' })).json()))
      const prism = await startPrism(document, upstream)
      if (typeof prism === 'string') {
        proxy = prism
        return
      }
      closers.push(() => prism.child.kill())
      proxy = { base: prism.base, exchanges: [], logs: prism.logs }
    })
    after(async () => { for (const close of closers.reverse()) await close() })

    test('every operation, success and error statuses: no response violation of error severity', async (t) => {
      if (typeof proxy === 'string') {
        t.skip(`Prism is unavailable: ${proxy}`)
        return
      }
      const p = proxy
      // add-plant
      const created = await call(p, 'POST', '/v3/plant', { body: { name: 'Monstera', category: 'indoor', tags: ['large'], status: 'available' } })
      assert.equal(created.status, 200)
      const plant = created.json()
      assert.equal((await call(p, 'POST', '/v3/plant', { body: { name: 'Ficus' } })).status, 200)
      assert.equal((await call(p, 'POST', '/v3/plant', { body: { name: '' } })).status, 405)
      assert.equal((await call(p, 'POST', '/v3/plant', { body: { name: 'x', staus: 'sold' } })).status, 405)
      assert.equal((await call(p, 'POST', '/v3/plant', { raw: 'name=x', headers: { 'content-type': 'text/plain' } })).status, 405)
      assert.equal((await call(p, 'POST', '/v3/plant', { body: { name: 'x'.repeat(70_000) } })).status, 413)
      assert.equal((await call(p, 'POST', '/v3/plant', { body: { name: 'Once' }, headers: { 'idempotency-key': 'prism-1' } })).status, 200)
      assert.equal((await call(p, 'POST', '/v3/plant', { body: { name: 'Once' }, headers: { 'idempotency-key': 'prism-1' } })).status, 200)
      assert.equal((await call(p, 'POST', '/v3/plant', { body: { name: 'Twice' }, headers: { 'idempotency-key': 'prism-1' } })).status, 422)
      // update-plant
      const updated = await call(p, 'PUT', '/v3/plant', { body: { id: plant.id, name: 'Monstera deliciosa', tags: ['large', 'green'] } })
      assert.equal(updated.status, 200)
      assert.equal((await call(p, 'PUT', '/v3/plant', { body: { id: 0, name: 'x' } })).status, 400)
      assert.equal((await call(p, 'PUT', '/v3/plant', { body: { id: plant.id, name: 'x', status: 'gone' } })).status, 400)
      assert.equal((await call(p, 'PUT', '/v3/plant', { body: { id: 987654, name: 'x' } })).status, 404)
      assert.equal((await call(p, 'PUT', '/v3/plant', { body: { id: plant.id, name: 'x' }, headers: { 'if-match': String(created.headers.get('etag')) } })).status, 412)
      // get-plant
      const read = await call(p, 'GET', `/v3/plant/${plant.id}`)
      assert.equal(read.status, 200)
      assert.equal((await call(p, 'GET', '/v3/plant/987654')).status, 404)
      assert.equal((await call(p, 'GET', '/v3/plant/abc')).status, 400)
      // list-plants
      const page = await call(p, 'GET', '/v3/plant?limit=1')
      assert.equal(page.status, 200)
      assert.equal((await call(p, 'GET', `/v3/plant?limit=1&cursor=${page.json().nextCursor}`)).status, 200)
      assert.equal((await call(p, 'GET', '/v3/plant?status=available&tag=large&category=indoor')).status, 200)
      assert.equal((await call(p, 'GET', '/v3/plant?limit=0')).status, 400)
      assert.equal((await call(p, 'GET', '/v3/plant?status=lost')).status, 400)
      assert.equal((await call(p, 'GET', '/v3/plant?cursor=nope')).status, 400)
      // the change feed and operations
      assert.equal((await call(p, 'GET', '/v3/plant/changes?after=0&limit=10')).status, 200)
      assert.equal((await call(p, 'GET', '/v3/plant/changes?after=-5')).status, 400)
      assert.equal((await call(p, 'GET', '/healthz')).status, 200)
      assert.equal((await call(p, 'GET', '/readyz')).status, 200)
      // delete-plant
      assert.equal((await call(p, 'DELETE', `/v3/plant/${plant.id}`)).status, 204)
      assert.equal((await call(p, 'DELETE', `/v3/plant/${plant.id}`)).status, 404)
      assert.equal((await call(p, 'DELETE', '/v3/plant/0')).status, 400)

      // Prism really judged the traffic: the invalid requests above carry request violations.
      assert.ok(p.exchanges.some((e) => e.violations.some((v) => v.location[0] === 'request')), `Prism reported no request violation at all:\n${p.logs()}`)
      const errors = p.exchanges.flatMap((e) => e.violations.filter((v) => v.location[0] === 'response' && v.severity === 'Error').map((v) => `${e.what}: ${v.location.join('.')} ${v.message}`))
      const logged = p.logs().split('\n').filter((l) => /Violation: response/.test(l) && /error/i.test(l))
      assert.deepEqual(errors, [], 'response violations reported by Prism in sl-violations')
      assert.deepEqual(logged, [], 'response violations in Prism\'s log')
      const warnings = p.exchanges.flatMap((e) => e.violations.filter((v) => v.location[0] === 'response' && v.severity !== 'Error'))
      t.diagnostic(`${p.exchanges.length} requests through Prism; 0 response errors; ${warnings.length} response warnings`)
    })

    test('304 Not Modified passes through Prism', async (t) => {
      if (typeof proxy === 'string') {
        t.skip(`Prism is unavailable: ${proxy}`)
        return
      }
      const plant = await call(proxy, 'POST', '/v3/plant', { body: { name: 'Cached' } })
      const res = await call(proxy, 'GET', `/v3/plant/${plant.json().id}`, { headers: { 'if-none-match': String(plant.headers.get('etag')) } })
      assert.equal(res.status, 304, res.body)
    })
  })
}
