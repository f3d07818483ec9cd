import assert from 'node:assert/strict'
import { once } from 'node:events'
import net, { type AddressInfo, type Socket } from 'node:net'
import { test } from 'node:test'
import { clientErrorHandler } from '../../src/http/error-handler.js'
import { sqliteEngine } from '../helpers/engines.js'
import { listen } from '../helpers/listen.js'

/** Connects and resolves once connected; the socket is destroyed when the test ends. */
async function connect (t: import('node:test').TestContext, port: number): Promise<Socket> {
  const socket = net.connect(port, '127.0.0.1')
  t.after(() => { socket.destroy() })
  await once(socket, 'connect')
  return socket
}

/** Everything the server writes until it closes its side. */
async function readAll (socket: Socket): Promise<string> {
  let text = ''
  socket.setEncoding('utf8').on('data', (chunk: string) => { text += chunk })
  await once(socket, 'end')
  return text
}

// The timeout only keeps a regression from hanging the suite: without the fix the socket never closes.
test('a header timeout (408) is answered and the server destroys its socket, though the client never closes its side', { timeout: 20_000 }, async (t) => {
  const closed: Array<Promise<unknown>> = []
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    closed.push(once(socket, 'close'))
    clientErrorHandler(Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.after(() => server.close())
  // allowHalfOpen: the client keeps its side open after the server's FIN, as the review's idle clients did.
  const client = net.connect({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true })
  t.after(() => { client.destroy() })
  const answer = await readAll(client)
  assert.match(answer, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  assert.match(answer, /"type":"\/v3\/problems\/request-timeout"/)
  // Before, `end()` only half-closed it: the server's socket, and its descriptor, stayed open for good.
  await closed[0]
  assert.equal(client.writable, true, 'the client has not closed its side')
})

test('past MAX_CONNECTIONS_PER_CLIENT open connections from one address, a new one gets 429 and is closed; a freed slot is reused', async (t) => {
  const store = await sqliteEngine.open()
  t.after(() => store.close())
  const { app } = await listen(t, store, { maxConnectionsPerClient: 3 })
  const port = (app.server.address() as AddressInfo).port
  const held = [await connect(t, port), await connect(t, port), await connect(t, port)]
  const extra = await connect(t, port)
  const refused = await readAll(extra)
  assert.match(refused, /^HTTP\/1\.1 429 Too Many Requests\r\n/)
  assert.match(refused, /"type":"\/v3\/problems\/too-many-requests"/)
  assert.match(refused, /holds 3 open connections/)
  assert.match(refused, /\r\nretry-after: 1\r\n/)
  // The held connections still work, and one closed frees its slot for a new one.
  held[0].write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  assert.match(await readAll(held[0]), /^HTTP\/1\.1 200 /)
  await once(held[0], 'close')
  await new Promise((resolve) => setImmediate(resolve)) // the server sees the close in the same turn or the next
  const again = await connect(t, port)
  again.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  assert.match(await readAll(again), /^HTTP\/1\.1 200 /)
})

test('a proxy named by TRUST_PROXY carries many clients: no connection cap applies to it', async (t) => {
  const store = await sqliteEngine.open()
  t.after(() => store.close())
  const { app } = await listen(t, store, { maxConnectionsPerClient: 2, trustProxy: ['127.0.0.1'] })
  const port = (app.server.address() as AddressInfo).port
  const sockets = await Promise.all([0, 1, 2, 3].map(() => connect(t, port)))
  for (const socket of sockets) socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n')
  for (const socket of sockets) assert.match(await readAll(socket), /^HTTP\/1\.1 200 /)
})
