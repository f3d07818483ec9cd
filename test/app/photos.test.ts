import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import sharp from 'sharp'
import { build, type TestApp } from '../helpers/app.js'
import { ENGINES } from '../helpers/engines.js'
import { phoneJpeg, picture, pngBomb, SECRETS } from '../helpers/pictures.js'

// `from`: the client's address (one address holds at most 3 upload places at once).
const upload = (app: TestApp, id: number, body: Buffer, type = 'image/jpeg', headers: Record<string, string> = {}, from = '127.0.0.1') =>
  app.request({ method: 'POST', url: `/v3/plant/${id}/photos`, payload: body, headers: { 'content-type': type, ...headers }, remoteAddress: from })

async function uploaded (app: TestApp, id: number, body: Buffer, type = 'image/jpeg'): Promise<Record<string, any>> {
  const res = await upload(app, id, body, type)
  assert.equal(res.statusCode, 201, res.body)
  return res.json()
}

for (const engine of ENGINES) {
  describe(`photos on ${engine.name}`, { skip: engine.skip }, () => {
    test('a phone JPEG (orientation 6, GPS, text in EXIF, XMP) is stored upright with no byte of its metadata in any variant', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Monstera' })
      const phone = await phoneJpeg()
      assert.equal((await sharp(phone).metadata()).orientation, 6)
      for (const secret of SECRETS) assert.ok(phone.includes(secret), `the upload itself holds ${secret}`)

      const res = await upload(app, plant.id, phone)
      assert.equal(res.statusCode, 201, res.body)
      const photo = res.json()
      assert.equal(res.headers.location, `/v3/plant/${plant.id}/photos/${photo.id}`)
      assert.equal(res.headers.etag, `"${plant.id}.2"`)
      assert.deepEqual([photo.width, photo.height], [300, 400])

      for (const [variant, type, box] of [['full', 'image/jpeg', 400], ['display', 'image/webp', 1280], ['thumb', 'image/webp', 256]] as const) {
        const file = await app.request({ method: 'GET', url: photo.urls[variant] })
        assert.equal(file.statusCode, 200, variant)
        assert.equal(file.headers['content-type'], type)
        assert.equal(file.headers['cache-control'], 'public, max-age=31536000, immutable')
        const bytes = file.rawPayload
        for (const secret of SECRETS) assert.ok(!bytes.includes(secret), `${variant} holds ${secret}`)
        for (const marker of ['Exif\0\0', 'http://ns.adobe.com/xap', 'xmpmeta', 'GPS']) assert.ok(!bytes.includes(marker), `${variant} holds ${marker}`)
        const meta = await sharp(bytes).metadata()
        assert.equal(meta.exif, undefined, `${variant} has EXIF`)
        assert.equal(meta.xmp, undefined, `${variant} has XMP`)
        assert.equal(meta.orientation, undefined, `${variant} has an orientation`)
        assert.ok(meta.height! > meta.width! && meta.height! <= box, `${variant} is ${meta.width}×${meta.height}`)
        // Upright: red on top, blue below.
        const { data, info } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true })
        const at = (x: number, y: number): number[] => [...data.subarray((y * info.width + x) * info.channels, (y * info.width + x) * info.channels + 3)]
        const top = at(info.width >> 1, info.height >> 3)
        const bottom = at(info.width >> 1, info.height - (info.height >> 3))
        assert.ok(top[0] > 150 && top[2] < 80, `${variant} top is ${top}`)
        assert.ok(bottom[2] > 150 && bottom[0] < 80, `${variant} bottom is ${bottom}`)
      }

      // The record carries the photo on every read, and the feed's change carries it too.
      const read = await app.request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      assert.deepEqual(read.json().photos, [photo])
      assert.equal(read.headers.etag, `"${plant.id}.2"`)
      assert.deepEqual((await app.request({ method: 'GET', url: '/v3/plant' })).json().items[0].photos, [photo])
      const changes = (await app.request({ method: 'GET', url: '/v3/plant/changes' })).json().items
      assert.deepEqual(changes.map((c: any) => [c.kind, c.version]), [['created', 1], ['updated', 2]])
      assert.deepEqual(changes[0].plant.photos, [])
      assert.deepEqual(changes[1].plant.photos, [photo])
    })

    test('a plant with no photos has photos: [] everywhere; photos in a POST or PUT body is invalid input; PUT keeps the photos', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add({ name: 'Fern' })
      assert.deepEqual(plant.photos, [])
      const photo = await uploaded(app, plant.id, await picture('png'), 'image/png')
      assert.equal((await app.request({ method: 'POST', url: '/v3/plant', payload: { name: 'x', photos: [] } })).statusCode, 405)
      const sentBack = await app.request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'x', photos: [] } })
      assert.equal(sentBack.statusCode, 400)
      assert.deepEqual(sentBack.json().errors, [{
        path: '/photos',
        message: 'is read-only: send the plant without photos, createdAt, updatedAt and version; add a photo with POST /v3/plant/{id}/photos, ' +
          'remove one with DELETE /v3/plant/{id}/photos/{photoId}, reorder them with PUT /v3/plant/{id}/photos/order'
      }])
      const put = await app.request({ method: 'PUT', url: '/v3/plant', payload: { id: plant.id, name: 'Fern 2' } })
      assert.equal(put.statusCode, 200)
      assert.deepEqual(put.json().photos, [photo])
    })

    test('PNG and WebP keep their format as full; thumb and display are WebP that fit their boxes', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add()
      for (const [format, type, ext] of [['png', 'image/png', 'png'], ['webp', 'image/webp', 'webp']] as const) {
        const photo = await uploaded(app, plant.id, await picture(format, 1, 1500), type)
        assert.match(photo.urls.full, new RegExp(`^/v3/photos/[\\w-]{43}\\.${ext}$`))
        assert.deepEqual([photo.width, photo.height], [1500, 1500])
        const display = await sharp((await app.request({ method: 'GET', url: photo.urls.display })).rawPayload).metadata()
        assert.deepEqual([display.format, display.width, display.height], ['webp', 1280, 1280])
        const thumb = await sharp((await app.request({ method: 'GET', url: photo.urls.thumb })).rawPayload).metadata()
        assert.deepEqual([thumb.format, thumb.width, thumb.height], ['webp', 256, 256])
      }
    })

    test('refusals: 415 other types, 413 over 10 MiB, 400 bytes not of the declared type, 404 unknown plant, 412 stale If-Match, 400 bad id', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add()
      const jpeg = await picture('jpeg')
      for (const type of ['text/plain', 'application/json', 'image/gif', 'multipart/form-data; boundary=x', 'image/svg+xml']) {
        const res = await upload(app, plant.id, jpeg, type)
        assert.equal(res.statusCode, 415, type)
        assert.equal(res.json().type, '/v3/problems/unsupported-media-type')
      }
      const big = await upload(app, plant.id, Buffer.alloc(10 * 1024 * 1024 + 1))
      assert.equal(big.statusCode, 413)
      assert.equal(big.json().type, '/v3/problems/payload-too-large')
      for (const [body, type] of [[await picture('png'), 'image/jpeg'], [jpeg, 'image/webp'], [Buffer.from('not a picture at all'), 'image/png'], [jpeg.subarray(0, jpeg.length >> 1), 'image/jpeg'], [Buffer.alloc(0), 'image/jpeg']] as const) {
        const res = await upload(app, plant.id, body, type)
        assert.equal(res.statusCode, 400, `${type}: ${res.body}`)
        assert.equal(res.json().type, '/v3/problems/invalid-input')
      }
      assert.equal((await upload(app, 9999, jpeg)).statusCode, 404)
      assert.equal((await upload(app, plant.id, jpeg, 'image/jpeg', { 'if-match': `"${plant.id}.7"` })).statusCode, 412)
      assert.equal((await upload(app, plant.id, jpeg, 'image/jpeg', { 'if-match': `"${plant.id}.1"` })).statusCode, 201)
      assert.equal((await upload(app, 0, jpeg)).statusCode, 400)
      // Nothing refused left a trace: one photo, version 2.
      const read = await app.request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      assert.equal(read.json().photos.length, 1)
      assert.equal(read.headers.etag, `"${plant.id}.2"`)
    })

    test('a stale If-Match on an upload or a photo delete is 412 with the plant as it is now and its ETag', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add()
      const photo = await uploaded(app, plant.id, await picture('jpeg'))
      const now = await app.request({ method: 'GET', url: `/v3/plant/${plant.id}` })
      const stale = { 'if-match': `"${plant.id}.1"` }
      for (const res of [
        await upload(app, plant.id, await picture('jpeg', 2), 'image/jpeg', stale),
        await app.request({ method: 'DELETE', url: `/v3/plant/${plant.id}/photos/${photo.id}`, headers: stale })
      ]) {
        assert.equal(res.statusCode, 412, res.body)
        assert.deepEqual(res.json().current, now.json())
        assert.equal(res.headers.etag, now.headers.etag)
      }
    })

    test('the 13th photo is refused with 409 and changes nothing', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add()
      const ids: string[] = []
      for (let i = 0; i < 12; i++) ids.push((await uploaded(app, plant.id, await picture('jpeg', i))).id)
      const res = await upload(app, plant.id, await picture('jpeg', 99))
      assert.equal(res.statusCode, 409)
      assert.equal(res.json().type, '/v3/problems/too-many-photos')
      const read = (await app.request({ method: 'GET', url: `/v3/plant/${plant.id}` })).json()
      assert.deepEqual(read.photos.map((p: any) => p.id), ids, 'in the order added')
    })

    test('deleting a photo removes its files unless another photo uses them; a deleted plant\'s photo files stay while the trash names it, and go when it is purged', async (t) => {
      const app = await build(t, engine)
      const a = await app.add({ name: 'a' })
      const b = await app.add({ name: 'b' })
      const same = await picture('jpeg', 5)
      const pa = await uploaded(app, a.id, same)
      const pb = await uploaded(app, b.id, same)
      const own = await uploaded(app, a.id, await picture('jpeg', 6))
      assert.deepEqual(pa.urls, pb.urls, 'the same picture gives the same content-derived files')
      const served = async (url: string): Promise<number> => (await app.request({ method: 'GET', url })).statusCode

      const del = await app.request({ method: 'DELETE', url: `/v3/plant/${a.id}/photos/${pa.id}` })
      assert.equal(del.statusCode, 204)
      assert.equal(del.headers.etag, `"${a.id}.4"`)
      for (const url of Object.values(pa.urls) as string[]) assert.equal(await served(url), 200, 'still used by b')
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${a.id}/photos/${pa.id}` })).statusCode, 404)
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${a.id}/photos/nonsense` })).statusCode, 404)
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/999/photos/${pa.id}` })).statusCode, 404)
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${a.id}/photos/${own.id}`, headers: { 'if-match': '"1.1"' } })).statusCode, 412)

      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${b.id}/photos/${pb.id}` })).statusCode, 204)
      for (const url of Object.values(pb.urls) as string[]) assert.equal(await served(url), 404, 'no photo uses it any more')

      assert.equal((await app.request({ method: 'DELETE', url: `/v3/plant/${a.id}` })).statusCode, 204)
      for (const url of Object.values(own.urls) as string[]) assert.equal(await served(url), 200, 'its plant is in the trash')
      assert.equal((await app.request({ method: 'DELETE', url: `/v3/trash/${a.id}` })).statusCode, 204)
      for (const url of Object.values(own.urls) as string[]) assert.equal(await served(url), 404, 'its plant is purged')
      const changes = (await app.request({ method: 'GET', url: '/v3/plant/changes' })).json().items
      const last = changes.filter((c: any) => c.id === b.id).at(-1)
      assert.deepEqual([last.kind, last.plant.photos], ['updated', []])
    })

    test('GET /v3/photos/{file}: ETag and 304, HEAD, 404 JSON for unknown or malformed names', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add()
      const photo = await uploaded(app, plant.id, await picture('webp', 3), 'image/webp')
      const first = await app.request({ method: 'GET', url: photo.urls.thumb })
      const etag = first.headers.etag as string
      assert.match(etag, /^"[\w-]{43}"$/)
      const again = await app.request({ method: 'GET', url: photo.urls.thumb, headers: { 'if-none-match': etag } })
      assert.equal(again.statusCode, 304)
      assert.equal(again.body, '')
      const head = await app.request({ method: 'HEAD', url: photo.urls.full })
      assert.equal(head.statusCode, 200)
      assert.equal(head.headers['content-type'], 'image/webp')
      for (const name of [`${'A'.repeat(43)}.webp`, 'x.jpg', '..%2F..%2Fetc%2Fpasswd', `${'A'.repeat(43)}.gif`]) {
        const res = await app.request({ method: 'GET', url: `/v3/photos/${name}` })
        assert.equal(res.statusCode, 404, name)
        assert.equal(res.json().type, '/v3/problems/photo-not-found')
      }
      // A precondition never turns a missing file into a 304 (RFC 9110 13.2.1).
      for (const ifNoneMatch of ['*', `"${'A'.repeat(43)}"`]) {
        const res = await app.request({ method: 'GET', url: `/v3/photos/${'A'.repeat(43)}.webp`, headers: { 'if-none-match': ifNoneMatch } })
        assert.equal(res.statusCode, 404, ifNoneMatch)
      }
    })

    test('another method on a photo path is 405 with Allow, as on every other path', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add()
      const photo = await uploaded(app, plant.id, await picture('webp', 4), 'image/webp')
      for (const [method, url, allow] of [
        ['GET', `/v3/plant/${plant.id}/photos`, 'POST'],
        ['PUT', `/v3/plant/${plant.id}/photos/${photo.id}`, 'GET, DELETE, HEAD'],
        ['POST', photo.urls.thumb, 'GET, HEAD']
      ] as const) {
        const res = await app.request({ method, url })
        assert.equal(res.statusCode, 405, `${method} ${url}`)
        assert.equal(res.json().type, '/v3/problems/method-not-allowed')
        assert.equal(res.headers.allow, allow)
      }
    })

    test('uploads past the queue (1 processing, 8 waiting) are refused at once with 503 and Retry-After; the places come back', async (t) => {
      const app = await build(t, engine)
      const plants = await Promise.all(Array.from({ length: 3 }, () => app.add()))
      const big = await picture('png', 9, 800)
      // Twenty clients, one upload each.
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => upload(app, plants[i % 3].id, big, 'image/png', {}, `10.0.0.${i + 1}`)))
      const statuses = answers.map((r) => r.statusCode)
      const busy = answers.filter((r) => r.statusCode === 503)
      assert.equal(statuses.filter((s) => s === 201).length, 9, statuses.join(' '))
      assert.equal(busy.length, 11, statuses.join(' '))
      assert.equal(busy[0].headers['retry-after'], '2')
      assert.equal(busy[0].json().type, '/v3/problems/images-busy')
      assert.equal((await upload(app, plants[0].id, big, 'image/png')).statusCode, 201)
      const metrics = (await app.request({ method: 'GET', url: '/metrics' })).body
      assert.match(metrics, /photo_uploads_refused_total\{reason="busy"\} 11/)
      assert.match(metrics, /photo_processing_seconds_count 10/)
      assert.match(metrics, /photo_queue\{state="admitted"\} 0/)
    })

    test('a decompression bomb (64 megapixels in 8 KB) is refused from its header: fast next to a real picture, memory flat', async (t) => {
      const app = await build(t, engine)
      const plant = await app.add()
      const bomb = pngBomb(8000)
      assert.ok(bomb.length < 10_000)
      const normal = await picture('png', 1, 1000)
      // Warm both paths once.
      await upload(app, plant.id, bomb, 'image/png')
      assert.equal((await upload(app, plant.id, normal, 'image/png')).statusCode, 201)
      const rssBefore = process.memoryUsage().rss
      let bombMs = 0
      for (let i = 0; i < 5; i++) {
        const started = performance.now()
        const res = await upload(app, plant.id, bomb, 'image/png')
        bombMs += performance.now() - started
        assert.equal(res.statusCode, 400)
        assert.match(res.json().detail, /64\.0 megapixels/)
      }
      const rssGrowth = process.memoryUsage().rss - rssBefore
      const started = performance.now()
      assert.equal((await upload(app, plant.id, await picture('png', 2, 1000), 'image/png')).statusCode, 201)
      const normalMs = performance.now() - started
      // Decoding it would take 64 MB at least (192 MB as RGB); five refusals grow memory by far less than one decode.
      assert.ok(rssGrowth < 32 * 1024 * 1024, `RSS grew ${rssGrowth} bytes`)
      // One refusal costs less than processing a 1-megapixel picture (a decode would be 64 times that).
      assert.ok(bombMs / 5 < normalMs, `bomb ${bombMs / 5} ms, 1 MP picture ${normalMs} ms`)
      t.diagnostic(`bomb refused in ${(bombMs / 5).toFixed(1)} ms (a 1 MP PNG takes ${normalMs.toFixed(1)} ms); RSS +${(rssGrowth / 1048576).toFixed(1)} MB over 5 refusals`)
    })
  })
}
