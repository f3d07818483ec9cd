import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import net, { type Socket } from 'node:net'
import { describe, test, type TestContext } from 'node:test'
import sharp from 'sharp'
import { FILE_CHUNK_BYTES } from '../../src/catalogue/photo.js'
import { HttpProblem } from '../../src/http/problems/problem.js'
import { processImage } from '../../src/photos/images.js'
import { MAX_UPLOAD_BYTES } from '../../src/photos/schemas.js'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES, sqliteEngine, type Engine } from '../helpers/engines.js'
import { listen } from '../helpers/listen.js'
import { recordFileReads, storeFile } from '../helpers/photo-files.js'
import { filteredRowsPng, picture } from '../helpers/pictures.js'

// Photo attacks: a picture whose stored file outgrows the upload limit, file
// reads that held the event loop and the memory of clients that never read, and upload places
// held by clients trickling their bodies.

const upload = (app: TestApp, id: number, body: Buffer, type = 'image/png') =>
  app.request({ method: 'POST', url: `/v3/plant/${id}/photos`, payload: body, headers: { 'content-type': type } })

const chunksIn = (size: number): number => Math.ceil(size / FILE_CHUNK_BYTES)
const settle = async (): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, 50)) }

/** Waits until `count()` has not moved for five looks in a row, and returns it. */
async function whenStill (count: () => number): Promise<number> {
  let last = -1
  for (let still = 0; still < 5;) {
    await settle()
    still = count() === last ? still + 1 : 0
    last = count()
  }
  return last
}

/** A raw connection that sends `request` and never reads: what the socket holds is the kernel's and the service's. */
async function neverReading (port: number, request: string): Promise<Socket> {
  const socket = net.connect(port, '127.0.0.1')
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.pause()
  socket.write(request)
  return socket
}

test('a picture whose full file would outgrow the limit is stored as a JPEG scaled until it fits, or refused with 400 saying why', async () => {
  const noise = await sharp(randomBytes(600 * 600 * 3), { raw: { width: 600, height: 600, channels: 3 } }).png().toBuffer()
  const kept = await processImage(noise, 'image/png')
  assert.match(kept.full.name, /\.png$/, 'within the limit: its own format')
  const scaled = await processImage(noise, 'image/png', 100_000)
  assert.match(scaled.full.name, /\.jpg$/)
  assert.ok(scaled.full.bytes.length <= 100_000, `${scaled.full.bytes.length} bytes`)
  assert.ok(scaled.width < 600 && scaled.width === scaled.height, `${scaled.width}×${scaled.height}`)
  assert.deepEqual([(await sharp(scaled.full.bytes).metadata()).width, (await sharp(scaled.thumb.bytes).metadata()).width], [scaled.width, 256])
  await assert.rejects(processImage(noise, 'image/png', 100), (err: unknown) => {
    assert.ok(err instanceof HttpProblem)
    assert.equal(err.status, 400)
    assert.match(err.message, /no stored file may exceed .* MiB: send a smaller picture/)
    return true
  })
})

for (const engine of ENGINES) {
  describe(`photo abuse on ${engine.name}`, { skip: engine.skip }, () => {
    test('a 45 KB PNG that is 10.9 MB as a PNG (rows filtered to zeros, wider than deflate\'s window) is stored as a JPEG within 10 MiB', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add()
      const crafted = filteredRowsPng(11_000, 330)
      assert.ok(crafted.length < 100_000, `${crafted.length} bytes sent`)
      const res = await upload(app, plant.id, crafted)
      assert.equal(res.statusCode, 201, res.body)
      const photo = res.json()
      assert.match(photo.urls.full, /\.jpg$/)
      assert.deepEqual([photo.width, photo.height], [11_000, 330])
      for (const url of Object.values(photo.urls) as string[]) {
        const head = await app.request({ method: 'HEAD', url })
        assert.equal(head.statusCode, 200)
        assert.ok(Number(head.headers['content-length']) <= MAX_UPLOAD_BYTES, `${url}: ${head.headers['content-length']} bytes`)
      }
      assert.equal((await app.request({ method: 'HEAD', url: photo.urls.full })).headers['content-type'], 'image/jpeg')
    })

    test('a file is read a chunk at a time: a thumb in one read, a larger file in one read a chunk; HEAD and 304 read its size alone', async (t) => {
      let reads: Array<number | undefined> = []
      const recording: Engine = { ...engine, open: async (options) => { const r = recordFileReads(await engine.open(options)); reads = r.reads; return r.store } }
      const app = await build(t, recording)
      const plant = await app.add()
      const photo = (await upload(app, plant.id, await picture('png', 1, 300))).json()
      const large = randomBytes(3 * FILE_CHUNK_BYTES + 1000)
      const store = app.app.store
      const url = await storeFile(store, plant.id, large)

      reads.length = 0
      const thumb = await app.request({ method: 'GET', url: photo.urls.thumb })
      assert.equal(thumb.statusCode, 200)
      assert.deepEqual(reads, [0], 'a file of one chunk: one read')

      reads.length = 0
      const file = await app.request({ method: 'GET', url })
      assert.equal(file.statusCode, 200)
      assert.equal(file.headers['content-length'], String(large.length))
      assert.deepEqual(file.rawPayload, large)
      assert.deepEqual(reads, [0, 1, 2, 3], 'each chunk read once, in order')

      reads.length = 0
      const head = await app.request({ method: 'HEAD', url })
      assert.equal(head.statusCode, 200)
      assert.equal(head.headers['content-length'], String(large.length))
      assert.equal(head.headers['content-type'], 'image/png')
      assert.equal(head.headers.etag, file.headers.etag)
      const notModified = await app.request({ method: 'GET', url, headers: { 'if-none-match': file.headers.etag as string } })
      assert.equal(notModified.statusCode, 304)
      assert.deepEqual(reads, [undefined, undefined], 'HEAD and 304: the size alone, no chunk')
    })

    test('clients that stop reading hold at most one chunk each in the service, and their file is read no further until they read', async (t) => {
      const { store, reads } = recordFileReads(await engine.open())
      t.after(async () => { await store.close() })
      const { app, sockets } = await listen(t, store)
      const plant = await store.create({ name: 'Monstera', category: null, tags: [], status: 'available' })
      // 8 MB: more than the kernel's buffers on loopback take from a client that does not read.
      const large = randomBytes(8 * 1024 * 1024)
      const url = await storeFile(store, plant.plant.id, large)
      const port = (app.server.address() as net.AddressInfo).port
      const request = `GET ${url} HTTP/1.1\r\nHost: x\r\n\r\n`

      const clients = await Promise.all([0, 1, 2].map(() => neverReading(port, request)))
      const read = await whenStill(() => reads.length)
      assert.ok(read > 0 && read < 3 * chunksIn(large.length), `${read} chunk reads for 3 clients of a ${chunksIn(large.length)}-chunk file`)
      const held = [...sockets].map((s) => s.writableLength)
      assert.equal(held.length, 3)
      for (const bytes of held) assert.ok(bytes <= FILE_CHUNK_BYTES, `a socket holds ${bytes} bytes in the service`)

      // One of them reads after all: it gets the whole file, every chunk read once for it.
      const client = clients[0]
      const received: Buffer[] = []
      let length = 0
      const whole = new Promise<void>((resolve) => {
        client.on('data', (data: Buffer) => {
          received.push(data)
          length += data.length
          const answer = Buffer.concat(received)
          const start = answer.indexOf('\r\n\r\n') + 4
          if (start > 3 && answer.length - start >= large.length) resolve()
        })
      })
      client.resume()
      await whole
      const answer = Buffer.concat(received)
      assert.deepEqual(answer.subarray(answer.indexOf('\r\n\r\n') + 4), large)
      for (const c of clients) c.destroy()
      await whenStill(() => sockets.size)
      assert.equal(sockets.size, 0, 'no socket is left once the clients are gone')
      assert.ok(reads.length <= read + chunksIn(large.length), `${reads.length} reads`)
      t.diagnostic(`${read} chunk reads while 3 clients held back; ${length} bytes to the one that read`)
    })
  })
}

test('a client address holds at most 16 connections that have sent a large file, until they close: the kernel keeps what a non-reading client left unread', async (t) => {
  const store = await sqliteEngine.open()
  t.after(async () => { await store.close() })
  const { app } = await listen(t, store)
  const plant = await store.create({ name: 'Monstera', category: null, tags: [], status: 'available' })
  // 1 MB: the kernel takes all of it from the service at once, so the answer "finishes" unread.
  const url = await storeFile(store, plant.plant.id, randomBytes(1024 * 1024))
  const port = (app.server.address() as net.AddressInfo).port
  const request = `GET ${url} HTTP/1.1\r\nHost: x\r\n\r\n`
  const holders = await Promise.all(Array.from({ length: 16 }, () => neverReading(port, request)))
  t.after(() => { for (const s of holders) s.destroy() })
  await settle()
  const refused = await fetch(`http://127.0.0.1:${port}${url}`)
  assert.equal(refused.status, 429)
  assert.match((await refused.json() as { detail: string }).detail, /At most 16 connections with large photo files per client address/)
  assert.equal(refused.headers.get('retry-after'), '5')
  // One of them closed frees its slot.
  holders.pop()!.destroy()
  await whenStill(() => 0)
  const served = await fetch(`http://127.0.0.1:${port}${url}`)
  assert.equal(served.status, 200)
  assert.equal((await served.arrayBuffer()).byteLength, 1024 * 1024)
})

/** An upload sent on a raw socket: its headers at once, then its body a byte every 200 ms, until the server closes. */
async function trickling (port: number, plantId: number, localAddress = '127.0.0.1'): Promise<{ answer: () => string, closed: Promise<void> }> {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress })
  socket.on('error', () => {})
  await new Promise((resolve) => socket.once('connect', resolve))
  let answer = ''
  socket.on('data', (data) => { answer += String(data) })
  const closed = new Promise<void>((resolve) => socket.once('close', () => { resolve() }))
  socket.write(`POST /v3/plant/${plantId}/photos HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\nContent-Length: 100000\r\n\r\n`)
  const timer = setInterval(() => { if (!socket.destroyed) socket.write('x') }, 200)
  void closed.then(() => { clearInterval(timer) })
  return { answer: () => answer, closed }
}

async function admitted (base: string): Promise<number> {
  const metrics = await (await fetch(`${base}/metrics`)).text()
  return Number(/photo_queue\{state="admitted"\} (\d+)/.exec(metrics)?.[1])
}

describe('upload places', () => {
  test('uploads that trickle their bodies hold their places only until the request timeout: the next upload is processed, not 503', async (t: TestContext) => {
    const store = await sqliteEngine.open()
    t.after(async () => { await store.close() })
    const { app, base } = await listen(t, store)
    // 1 s instead of 30 (checked every 2 s): the same path, sooner.
    app.server.requestTimeout = 1000
    const port = (app.server.address() as net.AddressInfo).port
    const { plant } = await store.create({ name: 'Monstera', category: null, tags: [], status: 'available' })
    const send = async (): Promise<Response> => fetch(`${base}/v3/plant/${plant.id}/photos`, { method: 'POST', headers: { 'content-type': 'image/png' }, body: new Uint8Array(await picture('png', 7, 200)) })

    // Three clients (three loopback addresses) of three uploads each: one address holds at most three places.
    const slow = await Promise.all(Array.from({ length: 9 }, (_, i) => trickling(port, plant.id, `127.0.0.${1 + (i % 3)}`)))
    while (await admitted(base) < 9) await settle()
    const busy = await trickling(port, plant.id, '127.0.0.4')
    await busy.closed
    assert.match(busy.answer(), /^HTTP\/1\.1 503 /, 'every place is taken')
    assert.match(busy.answer(), /"type":"\/v3\/problems\/images-busy"/)

    await Promise.all(slow.map((s) => s.closed))
    for (const s of slow) assert.match(s.answer(), /^HTTP\/1\.1 408 /)
    assert.equal(await admitted(base), 0)
    const next = await send()
    assert.equal(next.status, 201, await next.text())
  })

  test('one client address holds at most 3 upload places: a fourth is 429 at once, and another client still gets a place', async (t) => {
    const store = await sqliteEngine.open()
    t.after(async () => { await store.close() })
    const { base } = await listen(t, store)
    const port = Number(new URL(base).port)
    const { plant } = await store.create({ name: 'Monstera', category: null, tags: [], status: 'available' })
    await Promise.all([0, 1, 2].map(() => trickling(port, plant.id)))
    while (await admitted(base) < 3) await settle()
    const fourth = await trickling(port, plant.id)
    while (fourth.answer() === '') await settle()
    assert.match(fourth.answer(), /^HTTP\/1\.1 429 /)
    assert.match(fourth.answer(), /At most 3 uploads in progress per client address/)
    const other = await trickling(port, plant.id, '127.0.0.2')
    while (await admitted(base) < 4) await settle()
    assert.equal(other.answer(), '', 'admitted: no answer before its body')
  })

  test('an upload whose client goes while it waits for the image worker is not processed', async (t) => {
    const store = await sqliteEngine.open()
    t.after(async () => { await store.close() })
    const { app, base } = await listen(t, store)
    const port = (app.server.address() as net.AddressInfo).port
    const { plant } = await store.create({ name: 'Monstera', category: null, tags: [], status: 'available' })
    const send = async (body: Buffer): Promise<Response> => fetch(`${base}/v3/plant/${plant.id}/photos`, { method: 'POST', headers: { 'content-type': 'image/png' }, body: new Uint8Array(body) })

    const first = send(await picture('png', 8, 1500))
    while (await admitted(base) < 1) await settle()
    // The second is sent whole, then its client goes while the first is processed.
    const body = await picture('png', 9, 300)
    const gone = net.connect(port, '127.0.0.1')
    gone.on('error', () => {})
    await new Promise((resolve) => gone.once('connect', resolve))
    gone.end(Buffer.concat([Buffer.from(`POST /v3/plant/${plant.id}/photos HTTP/1.1\r\nHost: x\r\nContent-Type: image/png\r\nContent-Length: ${body.length}\r\n\r\n`), body]))
    gone.destroy()
    assert.equal((await first).status, 201)
    // The queue takes them in turn: this one's answer comes after the one that went was dealt with.
    assert.equal((await send(await picture('png', 10, 300))).status, 201)
    const metrics = await (await fetch(`${base}/metrics`)).text()
    assert.match(metrics, /photo_processing_seconds_count 2\n/, 'the first and the third, not the one whose client went')
  })
})
