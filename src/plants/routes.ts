import { createHash } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { writeSecurity } from '../http/auth.js'
import { ref } from '../http/components.js'
import { etagOf, ifMatchVersions, ifNoneMatchHits } from '../http/etag.js'
import { allowHeader, methodNotAllowed } from '../http/method-not-allowed.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problem.js'
import { feedPositionHook } from '../feed/position.js'
import { PlantNotFound } from '../catalogue/errors.js'
import { toRecord, type StoredPlant } from '../catalogue/plant.js'
import { identityFields } from '../catalogue/store-fields.js'
import { positionOf } from '../catalogue/query.js'
import type { PlantStore } from '../store/plant-store.js'
import { decodeCursor, encodeCursor, plantQueryOf } from './query.js'
import {
  IdParams, ListQuery, PAGE_SIZE, NewPlant, Plant, PlantPage, PlantUpdate, ReadHeaders, UpdateHeaders, WriteHeaders, type PlantFields
} from './schemas.js'

const COLLECTION_ALLOW = allowHeader(['GET', 'POST', 'PUT'])
// Path ids must be written canonically: the text coercion would otherwise read "1e3" or "0x10" as numbers.
const CANONICAL_ID = /^[1-9][0-9]*$/
const invalidId = (message: string) => new HttpProblem(400, 'invalid-id', `/id ${message}`, [{ path: '/id', message }])
// A callback hook, not an async one: it runs on every read by id, and a promise per request shows in the profile.
export function canonicalId (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const { id } = request.params as { id: string }
  if (!CANONICAL_ID.test(id)) done(invalidId('must be a positive integer written in decimal digits'))
  // Longer than any safe integer: say the limit (16 digits over it are left to the schema's maximum, with the same words).
  else if (id.length > 16) done(invalidId(`must be at most ${Number.MAX_SAFE_INTEGER}`))
  else done()
}
export const tags = ['plant']

/** The 409 of a write that gives a plant another plant's SKU. */
export const SKU_TAKEN: [number, string] = [409, 'sku-taken: another plant has this SKU (ignoring case); `holder` is its id']

export function sendPlant (reply: FastifyReply, plant: StoredPlant): Plant {
  reply.header('etag', etagOf(plant)).header('location', `/v3/plant/${plant.id}`)
  return toRecord(plant)
}

/** An Idempotency-Key as stored: scoped per API key by a prefix, so one client's key never replays another's response. */
export const idempotencyClaimKey = (request: FastifyRequest, key: string): string => request.writer === '' ? key : `${request.writer}:${key}`

export interface RouteOptions {
  store: PlantStore
}

/**
 * The statuses of the guards a deployment may switch on: 401 on writes (when API keys are
 * configured) and 429 (when a rate limit is set). Declared whatever the settings, with those words,
 * so every deployment serves one document and a generated client knows every status it can meet.
 */
export const guardStatuses = (write: boolean): number[] => write ? [401, 429] : [429]

export const plantRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, options) => {
  const { store } = options
  // Declared on every write; enforced only when keys are configured (src/http/auth.ts).
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
        200: { ...ref(Plant), description: 'Plant successfully added', headers: { ...HEADERS.requestId, ...HEADERS.etag, ...HEADERS.location } },
        ...problemResponses(...writeGuards, [400, 'createdAt or updatedAt in the body: they are read-only'], 405, SKU_TAKEN, 413, 422, 503)
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
          requestHash: createHash('sha256').update(JSON.stringify(identityFields(fields))).digest('base64url')
        }
    const { plant } = await store.create(fields, claim)
    reply.header('cache-control', 'no-store')
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
    const plant = await store.update(id, fields, ifMatchVersions(request.headers['if-match'], id))
    reply.header('cache-control', 'no-store')
    return sendPlant(reply, plant)
  })

  app.get('/v3/plant', {
    preHandler: feedPosition,
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
        ...problemResponses(...readGuards, 400, 503)
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
      summary: 'Delete a plant (its id is never reused)',
      params: IdParams,
      response: {
        204: Type.Null({ description: 'Deleted' }),
        ...problemResponses(...writeGuards, [400, 'Invalid ID supplied'], 404, 503)
      }
    }
  }, async (request, reply) => {
    await store.remove(request.params.id)
    return reply.code(204).header('cache-control', 'no-store').send(null)
  })

  methodNotAllowed(app, '/v3/plant/:id', ['GET', 'DELETE', 'PATCH'])
}
