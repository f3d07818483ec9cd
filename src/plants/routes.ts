import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply } from 'fastify'
import { writeMetaOf, writeSecurity } from '../http/auth/auth.js'
import { ref } from '../http/schemas/components.js'
import { etagOf, ifMatchVersions, ifNoneMatchHits } from '../http/resources/etag.js'
import { allowHeader, methodNotAllowed } from '../http/problems/unserved.js'
import { HEADERS, problemResponses } from '../http/problems/problem.js'
import { admitLargePages } from '../http/connections/queued-bytes.js'
import { canonicalId, guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { feedPositionHook } from '../http/resources/positions.js'
import { idempotencyClaimKey } from '../http/resources/idempotency.js'
import { requestHash } from '../store/idempotency.js'
import { PlantNotFound } from '../catalogue/errors.js'
import { toRecord } from '../catalogue/plant.js'
import { identityFields } from '../catalogue/price-sku-barcode.js'
import { positionOf } from '../catalogue/query.js'
import { decodeCursor, encodeCursor, plantQueryOf } from './query.js'
import { sendPlant, tags } from './record.js'
import { IdParams, ListQuery, PAGE_SIZE, NewPlant, PlantPage, PlantUpdate, ReadHeaders, UpdateHeaders, WriteHeaders, type PlantFields } from './schemas.js'
import { Plant } from './record.js'

/** The 503s a list or search may answer, each by its code. */
const LIST_UNAVAILABLE = 'Storage unavailable (storage-unavailable) or shutting down (shutting-down); the query ran past its time limit (query-too-slow: the detail says whether it ' +
  'waited for a reader first; narrow it or retry); or, for an answer over 128 KiB, too many bytes queued to clients that have not read them (send-queue-full: MAX_QUEUED_BYTES); see Retry-After'

const COLLECTION_ALLOW = allowHeader(['GET', 'POST', 'PUT'])
/** The 409 of a write that gives a plant another plant's SKU. */
export const SKU_TAKEN: [number, string] = [409, 'sku-taken: another plant has this SKU (ignoring case); `holder` is its id']

export const plantRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, options) => {
  const { store, queued } = options
  // Declared on every write; enforced only when keys are configured (src/http/auth/auth.ts).
  const security = writeSecurity
  const writeGuards = guardStatuses(true)
  const readGuards = guardStatuses(false)
  const feedPosition = feedPositionHook(store)
  app.post('/v3/plant', {
    schema: {
      operationId: 'add-plant',
      tags,
      security,
      summary: 'Add a new plant',
      body: ref(NewPlant),
      headers: WriteHeaders,
      response: {
        200: { ...ref(Plant), description: 'Plant successfully added', headers: { ...HEADERS.requestId, ...HEADERS.etag, ...HEADERS.location, ...HEADERS.idempotentReplayed } },
        ...problemResponses(...writeGuards, [400, 'createdAt, updatedAt or version in the body: they are read-only'], 405, SKU_TAKEN, 413, 422, 503)
      }
    },
    config: { invalidStatus: 405, allow: COLLECTION_ALLOW }
  }, async (request, reply) => {
    const key = request.headers['idempotency-key']
    const fields = request.body as PlantFields
    const claim = key === undefined
      ? undefined
      : {
          key: idempotencyClaimKey(request, key),
          // The validated, defaulted fields in a fixed order: the same plant sent with its members reordered is the same request.
          requestHash: requestHash(identityFields(fields))
        }
    const { plant, replayed } = await store.create(fields, claim, writeMetaOf(request))
    reply.header('cache-control', 'no-store')
    // A client that retried after a lost answer learns that this one was written before.
    if (replayed) reply.header('idempotent-replayed', 'true')
    return sendPlant(reply, plant)
  })

  app.put('/v3/plant', {
    schema: {
      operationId: 'update-plant',
      tags,
      security,
      summary: 'Update an existing plant (named by id in the body; the whole plant is replaced)',
      body: ref(PlantUpdate),
      headers: UpdateHeaders,
      response: {
        200: { ...ref(Plant), description: 'Plant successfully updated', headers: { ...HEADERS.requestId, ...HEADERS.etag, ...HEADERS.location } },
        ...problemResponses(...writeGuards, [400, 'Invalid ID supplied, or invalid input'], 404, SKU_TAKEN, 412, 413, 503)
      }
    },
    config: { allow: COLLECTION_ALLOW, idInBody: true }
  }, async (request, reply) => {
    const { id, ...fields } = request.body as PlantUpdate & PlantFields
    const plant = await store.update(id, fields, ifMatchVersions(request.headers['if-match'], id), writeMetaOf(request))
    reply.header('cache-control', 'no-store')
    return sendPlant(reply, plant)
  })

  app.get('/v3/plant', {
    preHandler: feedPosition,
    // A page of 500 plants may be megabytes, which a client that does not read leaves queued.
    onSend: admitLargePages(queued),
    schema: {
      operationId: 'list-plants',
      tags,
      summary: 'Find plants: filter by status (any of), tags (all of), category and name terms (q), sorted by id or name, one keyset page at a time',
      querystring: ListQuery,
      response: {
        200: {
          ...ref(PlantPage),
          description: 'A page of plants; pass nextCursor back as cursor for the next',
          headers: { ...HEADERS.requestId, ...HEADERS.feedPosition }
        },
        ...problemResponses(...readGuards, 400, [503, LIST_UNAVAILABLE])
      }
    },
    config: { allow: COLLECTION_ALLOW }
  }, async (request) => {
    const { limit = PAGE_SIZE, cursor } = request.query
    const query = plantQueryOf(request.query)
    const after = decodeCursor(cursor, query)
    const plants = await store.list({ ...query, afterId: after?.id ?? 0, afterKey: after?.key, afterValue: after?.value, limit: limit + 1 })
    const more = plants.length > limit
    const items = more ? plants.slice(0, limit) : plants
    return { items: items.map(toRecord), nextCursor: more ? encodeCursor(query, positionOf(items[items.length - 1], query.sort)) : null }
  })

  methodNotAllowed(app, '/v3/plant', ['GET', 'POST', 'PUT'])

  app.get('/v3/plant/:id', {
    preValidation: canonicalId,
    preHandler: feedPosition,
    schema: {
      operationId: 'get-plant',
      tags,
      summary: 'Find a plant by id',
      params: IdParams,
      headers: ReadHeaders,
      response: {
        200: { ...ref(Plant), description: 'The plant, with its ETag', headers: { ...HEADERS.requestId, ...HEADERS.etag, ...HEADERS.feedPosition } },
        304: Type.Null({ description: 'Not modified: the plant still has the ETag in If-None-Match', headers: { ...HEADERS.etag, ...HEADERS.feedPosition } }),
        ...problemResponses(...readGuards, [400, 'Invalid ID supplied'], 404, 503)
      }
    }
  }, async (request, reply) => {
    const plant = await store.get(request.params.id)
    if (!plant) throw new PlantNotFound()
    const etag = etagOf(plant)
    reply.header('etag', etag)
    // No payload at all: a 304 must not carry Content-Type or Content-Length.
    if (ifNoneMatchHits(request.headers['if-none-match'], etag)) return (reply as FastifyReply).code(304).send()
    return toRecord(plant)
  })

  app.delete('/v3/plant/:id', {
    preValidation: canonicalId,
    schema: {
      operationId: 'delete-plant',
      tags,
      security,
      summary: 'Delete a plant: it moves to the trash with its photos (GET /v3/trash), where it can be restored; its id is never reused',
      params: IdParams,
      headers: Type.Object({
        'if-match': Type.Optional(Type.String({ description: 'Delete only if the plant still has this ETag (else 412 with the plant as it is now).' }))
      }),
      response: {
        204: Type.Null({ description: 'Deleted' }),
        ...problemResponses(...writeGuards, [400, 'Invalid ID supplied'], 404, 412, 503)
      }
    }
  }, async (request, reply) => {
    const { id } = request.params
    await store.remove(id, ifMatchVersions(request.headers['if-match'], id), writeMetaOf(request))
    return reply.code(204).header('cache-control', 'no-store').send(null)
  })

  methodNotAllowed(app, '/v3/plant/:id', ['GET', 'DELETE', 'PATCH'])
}
