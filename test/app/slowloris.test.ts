import assert from 'node:assert/strict'
import net, { type AddressInfo } from 'node:net'
import { test } from 'node:test'
import { buildApp } from '../../src/app.js'
import { testConfig } from '../../src/config.js'
import { sqliteEngine } from '../helpers/engines.js'

test('a slowloris client that never finishes its headers is cut off with a 408 in the contract shape', async (t) => {
  const store = await sqliteEngine.open()
  const app = await buildApp(testConfig(), { store, headersTimeout: { ms: 1_000, checkEveryMs: 200 } })
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
  assert.equal((app.server as unknown as { connectionsCheckingInterval: number }).connectionsCheckingInterval, 2_000)
})
