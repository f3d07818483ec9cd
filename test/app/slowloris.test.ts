import assert from 'node:assert/strict'
import net, { type AddressInfo } from 'node:net'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { sqliteEngine } from '../helpers/engines.js'

test('a slowloris client that never finishes its headers is cut off with a 408 in the contract shape', async (t) => {
  const store = await sqliteEngine.open()
  const app = await buildApp(testConfig(), { store, timeouts: { headersMs: 1_000, checkEveryMs: 200 } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.after(async () => { await app.close(); await store.close() })
  const socket = net.connect((app.server.address() as AddressInfo).port, '127.0.0.1')
  socket.on('error', () => {})
  let answer = ''
  socket.on('data', (chunk) => { answer += String(chunk) })
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write('GET /v3/plant HTTP/1.1\r\nHost: x\r\n')
  // One header line every 100 ms, for at most 8 s: far longer than the headers timeout of 1 s the
  // test sets (10 s in service), and each line well within it, so only the total can end it.
  let cutOff = false
  void closed.then(() => { cutOff = true })
  for (let i = 0; i < 80 && !cutOff; i++) {
    socket.write(`X-Slow-${i}: y\r\n`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  socket.destroy()
  assert.ok(cutOff, 'the server closed the connection before the client gave up')
  assert.match(answer, /^HTTP\/1\.1 408 /)
  const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4))
  assert.equal(body.status, 408)
  assert.match(body.type, /request-timeout$/)
})

test('the service cuts off a client that has not sent its headers after 10 s, checked every 2 s', async (t) => {
  const store = await sqliteEngine.open()
  const app = await buildApp(testConfig(), { store })
  t.after(async () => { await app.close(); await store.close() })
  assert.equal(app.server.headersTimeout, 10_000)
  assert.equal(app.server.requestTimeout, 30_000)
  assert.equal((app.server as unknown as { connectionsCheckingInterval: number }).connectionsCheckingInterval, 2_000)
})

for (const [refusal, path, status] of [['an unknown path', '/v3/nothing-here', 404], ['a write without a key', '/v3/plant', 401]] as const) {
  test(`${refusal} answered while the body still arrives ends the connection: no second, unasked 408 once the request timeout passes`, async (t) => {
    const store = await sqliteEngine.open()
    const app = await buildApp(testConfig({ apiKeys: ['a-key-for-this-test'] }), { store, timeouts: { headersMs: 400, requestMs: 500, checkEveryMs: 100 } })
    await app.listen({ port: 0, host: '127.0.0.1' })
    t.after(async () => { await app.close(); await store.close() })
    const socket = net.connect((app.server.address() as AddressInfo).port, '127.0.0.1')
    socket.on('error', () => {})
    let answer = ''
    socket.on('data', (chunk) => { answer += String(chunk) })
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    await new Promise((resolve) => socket.once('connect', resolve))
    // 10 bytes of the 1,000 announced; the rest never comes.
    socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":"M`)
    // Far past the request timeout (500 ms, checked every 100 ms; node checks it only once past the
    // headers timeout, 400 ms here), unless the server closes first.
    const gaveUp = new Promise<void>((resolve) => setTimeout(resolve, 3_000).unref())
    await Promise.race([closed, gaveUp])
    socket.destroy()
    // A second answer follows the first's body on the same line: counted wherever it starts.
    const statusLines = answer.match(/HTTP\/1\.1 \d{3}/g) ?? []
    assert.deepEqual(statusLines, [`HTTP/1.1 ${status}`], 'one answer, the refusal')
    assert.match(answer, /\r\nconnection: close\r\n/i)
  })
}
