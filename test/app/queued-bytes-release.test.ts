import assert from 'node:assert/strict'
import { once } from 'node:events'
import http from 'node:http'
import net, { type Socket } from 'node:net'
import { test } from 'node:test'
import { testConfig } from '../../src/config.js'
import { QueuedBytes } from '../../src/http/connections/queued-bytes.js'

// An operator's review: after 150 clients that never read a 500-plant page were gone (`ss` showed
// none), the account still charged 116 connections, and large pages were refused send-queue-full
// for 8–45 s. A client's reset had been charged until the next look at the kernel, and a look the
// busy event loop delayed put the next one off twenty times as long.

const SOCKET_BUFFER = testConfig().socketSendBufferBytes
const BODY = Buffer.alloc(SOCKET_BUFFER + 2 * 1024 * 1024)

const settle = async (): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, 20)) }

/** A server whose every answer is a large one admitted to `queued`; its sockets. */
async function serving (t: test.TestContext, queued: QueuedBytes): Promise<{ port: number, sockets: Socket[] }> {
  const sockets: Socket[] = []
  const server = http.createServer((_req, res) => {
    queued.admit(res, BODY.length, BODY.length)
    sockets.push(res.socket!)
    res.setHeader('content-length', BODY.length)
    res.end(BODY)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.after(() => { server.closeAllConnections(); server.close() })
  return { port: (server.address() as net.AddressInfo).port, sockets }
}

async function neverReading (port: number): Promise<Socket> {
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', () => {})
  await once(socket, 'connect')
  socket.pause()
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n')
  return socket
}

test('a client that resets its connection with an answer unread is charged nothing from then on, without waiting for a look at the kernel', async (t) => {
  let looks = 0
  // The kernel's figures never come: only the reset itself can give the bytes back.
  const queued = new QueuedBytes(1 << 30, SOCKET_BUFFER, async () => { looks++; return await new Promise(() => {}) })
  const { port, sockets } = await serving(t, queued)
  const client = await neverReading(port)
  t.after(() => { client.destroy() })
  while (sockets.length === 0 || sockets[0].writableLength === 0) await settle()
  assert.ok(queued.queued >= BODY.length / 2, 'the unread answer is charged')
  assert.equal(looks, 1)
  // Bytes unread in its receive buffer: the client's kernel answers the close with a reset, and the service's drops what it held.
  client.resetAndDestroy()
  while (!sockets[0].destroyed) await settle()
  await settle()
  assert.equal(queued.connectionsCharged, 0)
  assert.equal(queued.queued, 0)
})

test('a look at the kernel that the busy event loop held up does not put the next one off for longer than a second', async () => {
  let now = 0
  let looks = 0
  let slow = true
  const queued = new QueuedBytes(1 << 30, SOCKET_BUFFER, async () => {
    looks++
    // The figures come back once the loop gets to them: 5 s later on a loaded host.
    if (slow) now += 5000
    slow = false
    return new Map()
  }, () => now)
  const server = http.createServer((_req, res) => { queued.admitStream(res); res.end('x') })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const client = await neverReading((server.address() as net.AddressInfo).port)
  try {
    while (queued.connectionsCharged === 0) await settle()
    void queued.queued
    await settle()
    assert.equal(looks, 1)
    now += 1000
    void queued.queued
    await settle()
    assert.equal(looks, 2, 'a second after the slow look, the kernel is read again')
  } finally {
    client.destroy()
    server.closeAllConnections()
    server.close()
  }
})
