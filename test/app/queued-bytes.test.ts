import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import http, { type ServerResponse } from 'node:http'
import net, { type Socket } from 'node:net'
import { test, type TestContext } from 'node:test'
import { FILE_CHUNK_BYTES } from '../../src/catalogue/photo.js'
import { ConfigError, loadConfig, testConfig } from '../../src/config.js'
import { QueuedBytes } from '../../src/http/connections/queued-bytes.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { sqliteEngine } from '../helpers/engines.js'
import { listen, type Listening } from '../helpers/listen.js'
import { OpenApiCheck } from '../helpers/openapi-check.js'
import { storeFile } from '../helpers/photo-files.js'

// Photo downloads never read, 400 of them from 25 addresses, held 1.47 GiB of the host's
// TCP memory; nothing bounded the bytes queued to clients over all addresses together.

/** What one connection with a large file in progress is charged: a kernel send buffer and the chunk the service holds. */
const SOCKET_BUFFER = testConfig().socketSendBufferBytes
const SHARE = SOCKET_BUFFER + FILE_CHUNK_BYTES
/** Room for three such downloads, not four. */
const BOUND = 3 * SHARE + FILE_CHUNK_BYTES / 2
// Larger than the kernel's buffers on loopback take from a client that does not read: the answer stays in progress.
const LARGE = SOCKET_BUFFER + 2 * 1024 * 1024

// A wait for the account to come back that never ends (a leak) fails at this, rather than holding the run.
const SOCKETS = { timeout: 120_000 }

const settle = async (): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, 50)) }

/** A raw connection that asks for `path` and does not read. */
async function neverReading (port: number, path: string): Promise<Socket> {
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.pause()
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`)
  return socket
}

/** Reads the answer `socket` was sent, to its last byte (by Content-Length); its body. */
async function readAnswer (socket: Socket): Promise<Buffer> {
  const received: Buffer[] = []
  return await new Promise((resolve) => {
    socket.on('data', (data: Buffer) => {
      received.push(data)
      const answer = Buffer.concat(received)
      const end = answer.indexOf('\r\n\r\n')
      const length = Number(/content-length: (\d+)/i.exec(answer.subarray(0, end).toString())?.[1])
      if (end >= 0 && answer.length - end - 4 >= length) resolve(answer.subarray(end + 4))
    })
    socket.resume()
  })
}

/** A figure of /metrics, asked on a connection of its own: one that carried a large answer is charged what it is sent until the next look. */
async function metric (base: string, name: string): Promise<number> {
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => { http.get(`${base}/metrics`, { agent: false }, resolve).on('error', reject) })
  let text = ''
  for await (const chunk of res) text += String(chunk)
  return Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1])
}

/** Waits until the queued bytes the service reports satisfy `wanted`; returns them. */
async function queuedWhen (base: string, wanted: (bytes: number) => boolean): Promise<number> {
  for (;;) {
    const bytes = await metric(base, 'queued_bytes')
    assert.ok(!Number.isNaN(bytes), '/metrics reports queued_bytes')
    if (wanted(bytes)) return bytes
    await settle()
  }
}

interface Filled { service: Listening, base: string, port: number, url: string, readers: Socket[], store: PlantStore }

/** A service whose bound three downloads of a large photo, never read, fill. */
async function filled (t: TestContext): Promise<Filled> {
  const store = await sqliteEngine.open()
  t.after(async () => { await store.close() })
  const service = await listen(t, store, { maxQueuedBytes: BOUND })
  const base = service.base
  const port = Number(new URL(base).port)
  const { plant } = await store.create({ name: 'Monstera', category: null, tags: [], status: 'available' })
  const url = await storeFile(store, plant.id, randomBytes(LARGE))
  const readers: Socket[] = []
  t.after(() => { for (const s of readers) s.destroy() })
  for (let i = 0; i < 3; i++) {
    readers.push(await neverReading(port, url))
    await queuedWhen(base, (bytes) => bytes >= (i + 1) * SHARE)
  }
  return { service, base, port, url, readers, store }
}

test('photo downloads that are never read fill MAX_QUEUED_BYTES: a further large file, page or stream is 503 send-queue-full with Retry-After; a small file is still served', SOCKETS, async (t) => {
  const { service, base, url, store } = await filled(t)
  const openapi = OpenApiCheck.of(service.app.openapiDocument())
  // Three connections, each charged a send buffer and a chunk: the bound holds them, not a fourth.
  assert.equal(await metric(base, 'queued_bytes'), 3 * SHARE)
  assert.equal(await metric(base, 'queued_bytes_limit'), BOUND)

  const refused = await fetch(base + url)
  assert.equal(refused.status, 503)
  assert.equal(refused.headers.get('retry-after'), '5')
  const problem = await refused.json() as { type: string, detail: string }
  assert.equal(problem.type, '/v3/problems/send-queue-full')
  assert.match(problem.detail, /queued to clients that have not read it.*MAX_QUEUED_BYTES/)
  openapi.check('GET', url, 503, Object.fromEntries(refused.headers), JSON.stringify(problem))

  // A file of one chunk is no large answer: it is sent as it is.
  const { plant } = await store.create({ name: 'Fern', category: null, tags: [], status: 'available' })
  const small = randomBytes(FILE_CHUNK_BYTES / 2)
  const served = await fetch(base + await storeFile(store, plant.id, small))
  assert.equal(served.status, 200)
  assert.deepEqual(Buffer.from(await served.arrayBuffer()), small)

  // A page over 128 KiB (an export reads 500 at a time) is refused; a small page of the same list is not.
  for (let i = 0; i < 80; i++) await store.create({ name: `Plant ${i}`, category: null, tags: [], status: 'available', description: 'd'.repeat(2000) })
  const page = await fetch(`${base}/v3/plant?limit=500`)
  assert.equal(page.status, 503)
  assert.equal(page.headers.get('retry-after'), '5')
  const pageProblem = await page.text()
  assert.match(pageProblem, /send-queue-full/)
  openapi.check('GET', '/v3/plant', 503, Object.fromEntries(page.headers), pageProblem)
  assert.equal((await fetch(`${base}/v3/plant?limit=5`)).status, 200)

  // A new event stream would be charged a send buffer once its client stopped reading: no room.
  const stream = await fetch(`${base}/v3/plant/events`)
  assert.equal(stream.status, 503)
  const streamProblem = await stream.text()
  assert.match(streamProblem, /send-queue-full/)
  openapi.check('GET', '/v3/plant/events', 503, Object.fromEntries(stream.headers), streamProblem)
})

test('once the clients that held the bound read their files, large answers flow again and nothing stays charged', SOCKETS, async (t) => {
  const { service, base, url, readers } = await filled(t)
  // Their connections stay open: what they are charged must fall because they read, not because they closed.
  service.app.server.keepAliveTimeout = 600_000
  const bodies = await Promise.all(readers.map(readAnswer))
  for (const body of bodies) assert.equal(body.length, LARGE)
  // Read to the end: the answers are over and the kernel holds nothing for them.
  assert.equal(await queuedWhen(base, (bytes) => bytes === 0), 0)
  assert.equal(await metric(base, 'queued_bytes_connections'), 3, 'still open, charged nothing')
  const served = await fetch(base + url)
  assert.equal(served.status, 200)
  assert.equal((await served.arrayBuffer()).byteLength, LARGE)
  assert.equal(await queuedWhen(base, (bytes) => bytes === 0), 0, 'the download read to its end is charged nothing')
})

test('once the clients that held the bound close, large answers flow again and nothing stays charged', SOCKETS, async (t) => {
  const { base, url, readers, port } = await filled(t)
  for (const s of readers) s.destroy()
  assert.equal(await queuedWhen(base, (bytes) => bytes === 0), 0)
  while (await metric(base, 'queued_bytes_connections') > 0) await settle()
  // The bound holds three again, as before: what the closed ones held was given back in full.
  const again = await Promise.all([0, 1, 2].map(async () => neverReading(port, url)))
  t.after(() => { for (const s of again) s.destroy() })
  assert.equal(await queuedWhen(base, (bytes) => bytes === 3 * SHARE), 3 * SHARE)
  assert.equal((await fetch(base + url)).status, 503)
})

test('a file the kernel took whole but the client never read stays charged once its answer is over, and once the service has closed the idle connection, until the client goes', SOCKETS, async (t) => {
  const store = await sqliteEngine.open()
  t.after(async () => { await store.close() })
  const { app, base, sockets } = await listen(t, store, { maxQueuedBytes: BOUND })
  // The idle keep-alive (5 s) closed sooner: the same path.
  app.server.keepAliveTimeout = 200
  const { plant } = await store.create({ name: 'Monstera', category: null, tags: [], status: 'available' })
  // Half a send buffer: the kernel takes it all from the service, so the answer finishes unread.
  const size = SOCKET_BUFFER / 2
  const client = await neverReading(Number(new URL(base).port), await storeFile(store, plant.id, randomBytes(size)))
  t.after(() => { client.destroy() })
  // Over, then closed by the service: the kernel goes on sending to a client that keeps its end open.
  const serving = (): boolean => [...sockets].some((s) => s.remotePort === client.localPort)
  while (!serving()) await settle()
  while (serving()) await settle()
  // The same figure three looks in a row: the kernel's, read after the service closed the connection.
  let last = -1
  for (let same = 0; same < 3;) {
    const bytes = await metric(base, 'queued_bytes')
    same = bytes === last ? same + 1 : 0
    last = bytes
    await settle()
  }
  // The client's own socket takes a little of it; the service's send queue holds the rest.
  assert.ok(last > size / 2 && last <= size + 1024, `${last} bytes charged for a ${size}-byte file never read`)
  assert.equal(await metric(base, 'queued_bytes_connections'), 1)
  // The client goes with bytes unread: its kernel resets the connection, and the service's drops them.
  client.destroy()
  assert.equal(await queuedWhen(base, (bytes) => bytes === 0), 0)
  while (await metric(base, 'queued_bytes_connections') > 0) await settle()
})

test('where the kernel does not say what it holds (not Linux), what a connection handed it stays charged until the connection closes, read or not', SOCKETS, async (t) => {
  const queued = new QueuedBytes(BOUND, SOCKET_BUFFER, async () => undefined)
  const body = Buffer.alloc(1024 * 1024)
  const sockets: Socket[] = []
  const answers: ServerResponse[] = []
  const server = http.createServer((_req, res) => {
    queued.admit(res, body.length, body.length)
    sockets.push(res.socket!)
    answers.push(res)
    res.setHeader('content-length', body.length)
    res.end(body)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.after(() => { server.closeAllConnections(); server.close() })
  const port = (server.address() as net.AddressInfo).port
  const idle = await neverReading(port, '/')
  const reader = await neverReading(port, '/')
  t.after(() => { idle.destroy(); reader.destroy() })
  assert.equal((await readAnswer(reader)).length, body.length)
  while (answers.length < 2 || answers.some((res) => !res.writableFinished)) await settle()
  // Both answers are over, one read and one not: each connection is charged all it was sent (headers and body).
  const sentTo = (client: Socket): number => sockets.find((s) => s.remotePort === client.localPort)!.bytesWritten
  const idleSent = sentTo(idle)
  assert.equal(queued.queued, idleSent + sentTo(reader))
  reader.destroy()
  while (queued.connectionsCharged > 1) await settle()
  assert.equal(queued.queued, idleSent)
  idle.destroy()
  while (queued.connectionsCharged > 0) await settle()
  assert.equal(queued.queued, 0)
})

test('MAX_QUEUED_BYTES is 256 MiB unless set; at least 16 MiB', () => {
  assert.equal(loadConfig({}).maxQueuedBytes, 256 * 1024 * 1024)
  assert.equal(loadConfig({ MAX_QUEUED_BYTES: '1073741824' }).maxQueuedBytes, 1024 * 1024 * 1024)
  assert.throws(() => loadConfig({ MAX_QUEUED_BYTES: '1048576' }), (err: unknown) => err instanceof ConfigError && /MAX_QUEUED_BYTES="1048576"; expected a number of bytes from 16777216/.test(err.message))
  assert.throws(() => loadConfig({ MAX_QUEUED_BYTES: '256MiB' }), ConfigError)
})
