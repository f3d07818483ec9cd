import { randomBytes } from 'node:crypto'
import type { Socket } from 'node:net'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { writeMetaOf, writeSecurity } from '../http/auth/auth.js'
import { etagOf, ifMatchVersions, ifNoneMatchHits } from '../http/resources/etag.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problems/problem.js'
import { ref } from '../http/schemas/components.js'
import { canonicalId, guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { PlantNotFound, VersionMismatch } from '../catalogue/errors.js'
import { checkRoomForPhoto, FILE_CHUNK_BYTES, FILES_PATH, MAX_PHOTOS, type NewPhoto } from '../catalogue/photo.js'
import { StreamLimits } from '../http/limits/stream-limits.js'
import { LARGE_ANSWER_BYTES, QUEUE_FULL_OR_STORAGE } from '../http/connections/queued-bytes.js'
import { trustedPeer } from '../http/connections/client-connections.js'
import { asBuffer, FileBody } from './file-body.js'
import { ImageQueue } from './image-queue.js'
import { CONTENT_TYPE_OF_EXT } from './images.js'
import { ImageWorker, PICTURE_DEADLINE_MS } from './image-worker.js'
import { PhotoMetrics } from './metrics.js'
import { FileParams, MAX_PIXELS, MAX_UPLOAD_BYTES, PhotoParams, UPLOAD_TYPES, type UploadType } from './schemas.js'
import { Photo } from '../plants/record.js'

export interface PhotoRouteOptions extends RouteOptions {
  /** Pictures processed at once (default 1) and uploads that may wait beyond them (default 8). */
  imagesActive?: number
  imagesWaiting?: number
  metrics?: PhotoMetrics
  /** Uploads one client address may have admitted at once (processing or waiting; default 3). */
  uploadsPerClient?: number
  /** Connections one client address may hold that have sent a large file (more than one chunk; default 16). */
  fileStreamsPerClient?: number
  /** TRUST_PROXY's proxies: they read answers as they come, and carry many clients, so no cap applies to them. */
  trustProxy?: string[] | false
  /** How long a picture may take to process (default PICTURE_DEADLINE_MS). */
  pictureDeadlineMs?: number
}

const kFileSlot = Symbol('the connection holds a large-file slot')

const tags = ['plant']
// A file name: the base64url SHA-256 of the bytes and the format's extension.
const FILE_NAME = /^([A-Za-z0-9_-]{43})\.(jpg|png|webp)$/
const PHOTO_ID = /^[A-Za-z0-9_-]{16}$/
const IMMUTABLE = 'public, max-age=31536000, immutable'
const mediaType = (header: string | undefined): string => (header ?? '').split(';')[0].trim().toLowerCase()

// The document shows the body as a file (the docs page then offers a file picker); the bytes
// themselves are checked by the image work, not by JSON Schema (a Buffer is no JSON string).
const binary = (description: string) => Object.fromEntries(UPLOAD_TYPES.map((type) => [type, { schema: { type: 'string', format: 'binary', description } }]))

export const photoRoutes: FastifyPluginAsyncTypebox<PhotoRouteOptions> = async (app, options) => {
  const { store, queued } = options
  const queue = new ImageQueue(options.imagesActive ?? 1, options.imagesWaiting ?? 8)
  const metrics = options.metrics ?? new PhotoMetrics()
  metrics.watch(queue)
  const images = new ImageWorker(options.pictureDeadlineMs)
  // A client that does not read holds a chunk in the service but up to 4 MiB in its socket's kernel
  // buffer, even once the answer is "finished" (the kernel took it): so a connection that has sent
  // a large file holds a slot until it closes (a browser's idle keep-alive closes within 5 s), and
  // one client address holds at most 16 (16 x 4 MiB, not 256 connections x 4 MiB).
  const uploadsByClient = new StreamLimits('uploads in progress', Infinity, options.uploadsPerClient ?? 3)
  const fileStreams = new StreamLimits('connections with large photo files', Infinity, options.fileStreamsPerClient ?? 16)
  const fromProxy = trustedPeer(options.trustProxy ?? false)
  const holdFileSlot = (request: FastifyRequest): void => {
    const socket = request.raw.socket as Socket & { [kFileSlot]?: true }
    if (socket[kFileSlot] || fromProxy(socket.remoteAddress ?? '')) return
    const release = fileStreams.acquire(request.ip)
    socket[kFileSlot] = true
    socket.once('close', release)
  }
  app.addHook('onClose', async () => { await images.close() })
  // Declared on every write; enforced only when keys are configured (src/http/auth/auth.ts).
  const security = writeSecurity
  const writeGuards = guardStatuses(true)
  const readGuards = guardStatuses(false)

  const inherited = app.validatorCompiler!
  // Pictures are read as bytes, in this plugin only: every other route still takes JSON alone.
  app.addContentTypeParser([...UPLOAD_TYPES], { parseAs: 'buffer', bodyLimit: MAX_UPLOAD_BYTES }, (_request, body, done) => { done(null, body) })

  /**
   * Refuses what can be refused before the body is read: a type other than the three (415), a
   * declared length over the limit (413), and a full queue (503). An admitted upload holds its
   * place until its response is over, however it ends.
   */
  function admitUpload (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void {
    if (!(UPLOAD_TYPES as readonly string[]).includes(mediaType(request.headers['content-type']))) {
      metrics.refused('unsupported-type')
      done(new HttpProblem(415, 'unsupported-media-type', `Send the picture itself as the body, with Content-Type ${UPLOAD_TYPES.join(', ')}`))
      return
    }
    if (Number(request.headers['content-length']) > MAX_UPLOAD_BYTES) {
      metrics.refused('too-large')
      done(new HttpProblem(413, 'payload-too-large', `The picture is larger than ${MAX_UPLOAD_BYTES / 1048576} MiB`))
      return
    }
    let releaseClient: (() => void) | undefined
    try {
      // One client address holds at most 3 of the places (processing and waiting): 9 connections
      // trickling their bodies, reconnected every 30 s, kept every other upload at 503.
      releaseClient = uploadsByClient.acquire(request.ip)
      reply.raw.once('close', releaseClient)
      const release = queue.admit()
      // The response closes however the upload ends: answered, its client gone, or its request
      // timed out (the whole request within 30 s: the 408 is written straight on the socket, which
      // is then destroyed, one-request-per-connection.ts), so a client trickling its body holds it no longer.
      reply.raw.once('close', release)
      done()
    } catch (err) {
      releaseClient?.()
      metrics.refused('busy')
      done(err as Error)
    }
  }

  /**
   * The refusals that need the plant but not the picture (400 id, 404, 412, 409), before the body
   * is read: a client that sent `Expect: 100-continue` is answered before it sends the picture,
   * and no picture is processed for a write that cannot happen. The write checks again, inside
   * its transaction.
   */
  async function plantAccepts (request: FastifyRequest): Promise<void> {
    await new Promise<void>((resolve, reject) => { canonicalId(request, undefined as never, (err) => { if (err) reject(err); else resolve() }) })
    const id = Number((request.params as { id: string }).id)
    const expected = ifMatchVersions(request.headers['if-match'], id)
    const plant = await store.get(id)
    if (!plant) throw new PlantNotFound()
    if (expected && !expected.includes(plant.version)) throw new VersionMismatch()
    checkRoomForPhoto(plant.photos)
  }

  app.post('/v3/plant/:id/photos', {
    onRequest: admitUpload,
    preParsing: async (request, _reply, payload) => {
      await plantAccepts(request)
      return payload
    },
    bodyLimit: MAX_UPLOAD_BYTES,
    validatorCompiler: (request) => request.httpPart === 'body' ? () => true : inherited(request),
    schema: {
      operationId: 'add-plant-photo',
      tags,
      security,
      summary: 'Add a photo to a plant (the body is the picture itself)',
      description: `JPEG, PNG or WebP, at most ${MAX_UPLOAD_BYTES / 1048576} MiB and ${MAX_PIXELS / 1e6} megapixels, at most ${MAX_PHOTOS} photos a plant. ` +
        'The picture is turned upright by its EXIF orientation and every metadata block (EXIF, GPS, XMP, IPTC, comments, ICC profile) is removed; ' +
        'it is kept as `full` in its own format, with two WebP sizes, `thumb` (fits 256×256) and `display` (fits 1280×1280). ' +
        `No stored file is larger than ${MAX_UPLOAD_BYTES / 1048576} MiB: a picture whose \`full\` would be (a PNG small on the wire can be huge re-encoded) is kept as a JPEG at quality 80, scaled down until it fits; one that cannot fit is 400. ` +
        `A picture not processed within ${PICTURE_DEADLINE_MS / 1000} s is given up with 503. ` +
        'The plant\'s version increases (If-Match applies) and the feed gets one `updated` change. ' +
        'Pictures are processed one at a time, and up to 8 uploads wait their turn; past that, an upload is refused at once with 503 and Retry-After. ' +
        'Idempotency-Key is not taken here: to retry an upload whose outcome is unknown without adding the photo twice, send If-Match with the plant\'s ETag from before (a retry after a first attempt that landed is then 412). ' +
        'An animated picture keeps its first frame.',
      params: Type.Object({ id: PhotoParams.properties.id }),
      headers: Type.Object({
        'if-match': Type.Optional(Type.String({ description: 'Apply only if the plant still has this ETag (else 412).' }))
      }),
      body: { content: binary('The picture file itself (not multipart).') },
      response: {
        201: {
          ...ref(Photo),
          description: 'The photo was stored (the record and all three files are durable)',
          headers: {
            ...HEADERS.requestId,
            etag: { type: 'string', description: 'The plant\'s new ETag.' },
            location: { type: 'string', description: '/v3/plant/{id}/photos/{photoId} of the photo.' }
          }
        },
        ...problemResponses(...writeGuards, [400, `Invalid plant id, or the body is not a picture of the declared type, or is over 50 megapixels, or cannot be stored within ${MAX_UPLOAD_BYTES / 1048576} MiB`],
          [404, 'Plant not found'], 409, 412, [413, `Body larger than ${MAX_UPLOAD_BYTES / 1048576} MiB`], 415, [503, `Too many pictures in progress, or the picture took longer than ${PICTURE_DEADLINE_MS / 1000} s, or storage unavailable (see Retry-After)`])
      }
    }
  }, async (request, reply) => {
    const id = (request.params as { id: number }).id
    const expected = ifMatchVersions(request.headers['if-match'], id)
    const declared = mediaType(request.headers['content-type']) as UploadType
    const started = process.hrtime.bigint()
    const processed = await queue.run(async () => {
      // A client that went while its upload waited (its place is free already) is not worth the work.
      if (request.raw.socket.destroyed) throw new HttpProblem(408, 'request-timeout', 'The connection closed before the picture was processed')
      return await images.process(request.body as Buffer, declared)
    })
      .catch((err: unknown) => { if (err instanceof HttpProblem && err.status === 400) metrics.refused('invalid'); throw err })
    metrics.processed(Number(process.hrtime.bigint() - started) / 1e9)
    const added: NewPhoto = {
      photo: {
        id: randomBytes(12).toString('base64url'),
        width: processed.width,
        height: processed.height,
        urls: {
          thumb: FILES_PATH + processed.thumb.name,
          display: FILES_PATH + processed.display.name,
          full: FILES_PATH + processed.full.name
        }
      },
      files: [processed.thumb, processed.display, processed.full],
      // The image worker's files arrive in one buffer of their own (image-worker.ts).
      movable: true
    }
    const updated = await store.addPhoto(id, added, expected, writeMetaOf(request))
    return reply.code(201)
      .header('cache-control', 'no-store')
      .header('etag', etagOf(updated))
      .header('location', `/v3/plant/${id}/photos/${added.photo.id}`)
      .send(added.photo)
  })

  // Where an upload's Location points: the photo's record (its files are under /v3/photos/).
  app.get('/v3/plant/:id/photos/:photoId', {
    preValidation: canonicalId,
    schema: {
      operationId: 'get-plant-photo',
      tags,
      summary: 'One photo of a plant (the Location of an upload)',
      params: PhotoParams,
      response: {
        200: { ...ref(Photo), description: 'The photo', headers: { ...HEADERS.requestId } },
        ...problemResponses(...readGuards, [400, 'Invalid plant id'], [404, 'Plant or photo not found'], 503)
      }
    }
  }, async (request) => {
    const { id, photoId } = request.params
    const plant = await store.get(id)
    if (!plant) throw new PlantNotFound()
    const photo = plant.photos.find((p) => p.id === photoId)
    if (!photo) throw new HttpProblem(404, 'photo-not-found', 'The plant has no photo with that id')
    return photo
  })

  app.delete('/v3/plant/:id/photos/:photoId', {
    preValidation: canonicalId,
    schema: {
      operationId: 'delete-plant-photo',
      tags,
      security,
      summary: 'Remove a photo from a plant (files no photo uses any more are deleted)',
      params: PhotoParams,
      headers: Type.Object({
        'if-match': Type.Optional(Type.String({ description: 'Apply only if the plant still has this ETag (else 412).' }))
      }),
      response: {
        204: Type.Null({ description: 'Removed; the plant\'s version increased', headers: { etag: { type: 'string', description: 'The plant\'s new ETag.' } } }),
        ...problemResponses(...writeGuards, [400, 'Invalid plant id'], [404, 'Plant or photo not found'], 412, 503)
      }
    }
  }, async (request, reply) => {
    const { id, photoId } = request.params
    const expected = ifMatchVersions(request.headers['if-match'], id)
    if (!PHOTO_ID.test(photoId)) {
      // No stored photo has such an id, but the plant's absence is still what a client hears first.
      if (!await store.get(id)) throw new PlantNotFound()
      throw new HttpProblem(404, 'photo-not-found', 'The plant has no photo with that id')
    }
    const updated = await store.removePhoto(id, photoId, expected, writeMetaOf(request))
    return reply.code(204).header('cache-control', 'no-store').header('etag', etagOf(updated)).send(null)
  })

  /**
   * A photo file's answer: 404, 304, the headers alone (HEAD), or the body. One read tells whether
   * the file exists (asked first even for a 304: a precondition only applies to a file that
   * exists, RFC 9110 13.2.1) and its size, with the first chunk only when a body is sent: a HEAD or
   * a 304 reads none of the bytes. A file of one chunk (thumbs, most display sizes) is sent as it
   * is; a larger one a chunk at a time as the client takes it (file-body.ts).
   */
  async function serveFile (request: FastifyRequest, reply: FastifyReply, withBody: boolean): Promise<FastifyReply> {
    const { file } = request.params as { file: string }
    const match = FILE_NAME.exec(file)
    if (!match) throw new HttpProblem(404, 'photo-not-found', 'No photo file has that name')
    const etag = `"${match[1]}"`
    const notModified = ifNoneMatchHits(request.headers['if-none-match'], etag)
    const found = await store.photoFile(file, withBody && !notModified ? 0 : undefined)
    if (!found) throw new HttpProblem(404, 'photo-not-found', 'No photo file has that name')
    reply.header('etag', etag).header('cache-control', IMMUTABLE)
    if (notModified) return reply.code(304).send()
    reply.type(CONTENT_TYPE_OF_EXT[match[2]])
    if (!found.chunk) return reply.header('content-length', String(found.size)).send()
    if (found.chunk.length >= found.size) return reply.send(asBuffer(found.chunk))
    holdFileSlot(request)
    // After the address's own cap (429): a client over its share must not take the others' room.
    queued.admit(reply.raw, found.size, FILE_CHUNK_BYTES)
    return reply.header('content-length', String(found.size)).send(new FileBody((n) => store.photoFile(file, n), found.chunk, found.size))
  }

  app.get('/v3/photos/:file', {
    // HEAD has a route of its own (below): Fastify's twin of this one would read the body to drop it.
    exposeHeadRoute: false,
    schema: {
      operationId: 'get-photo-file',
      tags,
      summary: 'A photo file (its name comes from a photo\'s urls)',
      description: 'File names are derived from the content, so a file never changes: it is served with ' +
        `\`Cache-Control: ${IMMUTABLE}\` and an ETag. Any instance serves any photo. ` +
        'HEAD answers the headers (Content-Length included) without reading the bytes; a large file is sent a chunk at a time as the client reads it. ' +
        `A file over ${LARGE_ANSWER_BYTES / 1024} KiB is a large answer: past MAX_QUEUED_BYTES queued to clients that have not read them, it is 503 with Retry-After.`,
      params: FileParams,
      headers: Type.Object({ 'if-none-match': Type.Optional(Type.String({ description: 'Answer 304 if it holds the file\'s ETag.' })) }),
      response: {
        200: {
          description: 'The bytes, as image/webp (thumb, display) or the uploaded format (full)',
          headers: { ...HEADERS.requestId, etag: { type: 'string' }, 'cache-control': { type: 'string' } },
          content: Object.fromEntries(UPLOAD_TYPES.map((type) => [type, { schema: { contentMediaType: type } }]))
        },
        304: Type.Null({ description: 'Not modified', headers: { etag: { type: 'string' } } }),
        ...problemResponses(...readGuards, [404, 'No such photo file'], [503, QUEUE_FULL_OR_STORAGE])
      }
    }
  }, async (request, reply) => serveFile(request, reply as FastifyReply, true))
  app.head('/v3/photos/:file', { schema: { hide: true, params: FileParams } }, async (request, reply) => serveFile(request, reply as FastifyReply, false))

  // Another method on these paths is 405 with Allow, as on every other path (a GET of a plant's
  // photos is the first thing a newcomer tries: they are in the plant's record).
  methodNotAllowed(app, '/v3/plant/:id/photos', ['POST'])
  methodNotAllowed(app, '/v3/plant/:id/photos/:photoId', ['GET', 'DELETE'])
  methodNotAllowed(app, '/v3/photos/:file', ['GET'])
}
