import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { PlantNotFound } from '../catalogue/errors.js'
import { InsufficientStock, MAIN_LOCATION, MOVEMENTS_PAGE_DEFAULT, SELL_REASONS, type MovementInput, type MovementResult as MovementAnswer, type Reason } from '../catalogue/stock.js'
import { securityFor, writeMetaOf, writeSecurity } from '../http/auth/auth.js'
import { ref } from '../http/schemas/components.js'
import { etagOf, ifMatchVersions } from '../http/resources/etag.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problems/problem.js'
import { canonicalId, guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { Plant, sendPlant } from '../plants/record.js'
import { idempotencyClaimKey } from '../http/resources/idempotency.js'
import { requestHash } from '../store/idempotency.js'
import { IdParams, UpdateHeaders, WriteHeaders } from '../plants/schemas.js'
import { Location, LocationList, LocationParams, MovementBody, MovementPage, MovementQuery, MovementResult, NewLocation, StockLevels } from './schemas.js'

// Stock's routes: locations, a plant's levels, its movements and ledger, and stopping tracking.

const tags = ['stock']
/** A movement's headers: an Idempotency-Key, and If-Match. */
const MovementHeaders = Type.Object({ ...WriteHeaders.properties, ...UpdateHeaders.properties })
const INSUFFICIENT: [number, string] = [409, 'insufficient-stock (`available`: what the location has; `elsewhere`: the plant\'s other places with units), stock-changed (a count\'s `expected` is not the location\'s onHand: `onHand` is)']

/**
 * A body that is both a delta and a count matches neither branch, and the schema's nearest branch
 * would call one of the two "not a known field": say they are exclusive, before the schema speaks.
 */
function deltaOrCount (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void {
  const body = request.body
  if (typeof body !== 'object' || body === null || !('delta' in body) || !('set' in body)) return done()
  const why = 'a movement is a delta or a count, not both: send delta (with received, sale, return, damaged or correction) or set (with count), one or the other'
  done(new HttpProblem(400, 'invalid-input', why, [{ path: '/delta', message: 'cannot be sent with set' }, { path: '/set', message: 'cannot be sent with delta' }]))
}

/** A till (`sell`) records sales and returns; every other reason needs `write`. */
function scopeOfMovement (body: unknown): { scope: 'sell' | 'write', paths: string[] } {
  const reason = (body as { reason?: unknown } | null)?.reason
  return SELL_REASONS.includes(reason as Reason) ? { scope: 'sell', paths: [] } : { scope: 'write', paths: ['/reason'] }
}

export const stockRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { store }) => {
  /**
   * A till that names no place sells at main: when the units are elsewhere, the refusal says where;
   * a plant that tracks no stock has none anywhere, and is said so.
   */
  const sayWhereElse = async (err: InsufficientStock, id: number): Promise<void> => {
    const levels = await store.stock.levels(id)
    err.elsewhere = (levels ?? []).filter((l) => l.location !== err.location && l.available > 0)
    err.untracked = levels !== undefined && (await store.get(id))?.stock === null
  }

  app.get('/v3/locations', {
    schema: {
      operationId: 'list-locations',
      tags,
      summary: 'The store\'s locations (`main` always among them)',
      response: { 200: { ...ref(LocationList), description: 'Every location, by name', headers: HEADERS.requestId }, ...problemResponses(...guardStatuses(false), 503) }
    }
  }, async (_request, reply) => {
    reply.header('cache-control', 'no-store')
    return { items: await store.stock.locations() }
  })

  app.post('/v3/locations', {
    schema: {
      operationId: 'add-location',
      tags,
      security: securityFor('admin'),
      summary: 'Add a location',
      body: ref(NewLocation),
      response: {
        201: { ...ref(Location), description: 'The location added', headers: HEADERS.requestId },
        ...problemResponses(...guardStatuses(true), 400, [409, 'location-name-taken: a location has this name'], 413, 503)
      }
    }
  }, async (request, reply) => {
    const location = await store.stock.addLocation(request.body.name)
    reply.code(201).header('cache-control', 'no-store')
    return location
  })
  methodNotAllowed(app, '/v3/locations', ['GET', 'POST'])

  app.delete('/v3/locations/:name', {
    schema: {
      operationId: 'delete-location',
      tags,
      security: securityFor('admin'),
      summary: 'Delete a location that holds no stock (`main` stays)',
      params: LocationParams,
      response: {
        204: { type: 'null', description: 'Deleted', headers: HEADERS.requestId },
        ...problemResponses(...guardStatuses(true), [400, 'Invalid input, or `main` (every catalogue has it)'], [404, 'No location with this name'],
          [409, 'location-not-empty: a plant (live or in the trash) holds stock there'], 503)
      }
    }
  }, async (request, reply) => {
    const { name } = request.params
    if (name === MAIN_LOCATION) throw new HttpProblem(400, 'invalid-input', 'main is every catalogue\'s location: it cannot be deleted', [{ path: '/name', message: 'is main, which always exists' }])
    await store.stock.removeLocation(name)
    reply.code(204)
  })
  methodNotAllowed(app, '/v3/locations/:name', ['DELETE'])

  app.get('/v3/plant/:id/stock', {
    preValidation: canonicalId,
    schema: {
      operationId: 'plant-stock',
      tags,
      summary: 'A plant\'s stock at each location',
      params: IdParams,
      response: {
        200: { ...ref(StockLevels), description: 'The levels, by location (none for a plant that does not track stock)', headers: HEADERS.requestId },
        ...problemResponses(...guardStatuses(false), [400, 'Invalid ID supplied'], 404, 503)
      }
    }
  }, async (request, reply) => {
    const levels = await store.stock.levels(request.params.id)
    if (levels === undefined) throw new PlantNotFound()
    reply.header('cache-control', 'no-store')
    return { items: levels }
  })

  app.delete('/v3/plant/:id/stock', {
    preValidation: canonicalId,
    schema: {
      operationId: 'untrack-stock',
      tags,
      security: writeSecurity,
      summary: 'Stop tracking a plant\'s stock (only when it holds none): its stock becomes null, its status is set by hand again',
      params: IdParams,
      headers: UpdateHeaders,
      response: {
        200: { ...ref(Plant), description: 'The plant, its stock null, and its ETag', headers: { ...HEADERS.requestId, ...HEADERS.etag, ...HEADERS.location } },
        ...problemResponses(...guardStatuses(true), [400, 'Invalid ID supplied'], 404, [409, 'stock-held: the plant holds stock (on hand or reserved)'], 412, 503)
      }
    }
  }, async (request, reply) => {
    const { id } = request.params
    const plant = await store.stock.untrack(id, ifMatchVersions(request.headers['if-match'], id), writeMetaOf(request))
    reply.header('cache-control', 'no-store')
    return sendPlant(reply, plant)
  })
  methodNotAllowed(app, '/v3/plant/:id/stock', ['GET', 'DELETE'])

  app.post('/v3/plant/:id/stock/movements', {
    preValidation: [canonicalId, deltaOrCount],
    schema: {
      operationId: 'move-stock',
      tags,
      // A till's `sell` key records sales and returns; any other reason needs `write` (checked once the body is parsed).
      security: securityFor('sell'),
      summary: 'Move stock: a delta with its reason, or a count (compare and set)',
      description: 'A body is a delta or a count, one or the other (both: 400). One write that checks and applies: a movement that would take the location\'s available below 0 is 409 insufficient-stock naming what is ' +
        'available (and, in its detail, the plant\'s other places with units available, or that the plant does not track stock yet), and nothing is applied. The plant tracks stock from its first movement; each movement is a new version (ETag), one `updated` change in the ' +
        'feed and an entry in its history (with the reason); a count that finds the level as it is (a tracked plant) is kept in the ledger (delta 0) but changes ' +
        'no plant: no new version, change or history entry, and the answer carries the version as it was. Status follows stock: to 0 available sets `sold`, above 0 from `sold` sets `available`; `pending` stays. ' +
        'With an Idempotency-Key a retry answers the first result and moves nothing (a till that retries a sale sells once). If-Match is optional.',
      params: IdParams,
      headers: MovementHeaders,
      body: ref(MovementBody),
      response: {
        201: { ...ref(MovementResult), description: 'The movement, the location\'s and the plant\'s new counts', headers: { ...HEADERS.requestId, ...HEADERS.etag, ...HEADERS.idempotentReplayed } },
        ...problemResponses(...guardStatuses(true), [400, 'Invalid ID supplied, or invalid input (a delta of 0, or of the wrong sign for its reason)'],
          [404, 'No plant with this id, or no location with this name'], INSUFFICIENT, 412, 413, 422, 503)
      }
    },
    config: { scopeOfBody: scopeOfMovement }
  }, async (request, reply) => {
    const { id } = request.params
    const input = request.body as MovementInput
    const key = request.headers['idempotency-key']
    const claim = key === undefined
      ? undefined
      : { key: idempotencyClaimKey(request, key), requestHash: requestHash(['stock', id, input, request.headers['if-match'] ?? null]) }
    let result: MovementAnswer
    try {
      result = await store.stock.move(id, input, claim, ifMatchVersions(request.headers['if-match'], id), writeMetaOf(request))
    } catch (err) {
      if (err instanceof InsufficientStock) await sayWhereElse(err, id)
      throw err
    }
    reply.code(201).header('cache-control', 'no-store').header('etag', etagOf(result))
    if (result.replayed) reply.header('idempotent-replayed', 'true')
    // Sent as the store answers it: the response's schema writes MovementResult's members alone, so
    // `replayed` (said by the header) stays off the wire without a copy of the answer made to drop it.
    return result
  })

  app.get('/v3/plant/:id/stock/movements', {
    preValidation: canonicalId,
    schema: {
      operationId: 'stock-movements',
      tags,
      summary: 'A plant\'s ledger of movements, newest first, one page at a time',
      params: IdParams,
      querystring: MovementQuery,
      response: {
        200: { ...ref(MovementPage), description: 'A page of the ledger; pass nextCursor back as cursor for the next, older one', headers: HEADERS.requestId },
        ...problemResponses(...guardStatuses(false), [400, 'Invalid ID supplied, or invalid input'], 404, 503)
      }
    }
  }, async (request, reply) => {
    const { id } = request.params
    const { limit = MOVEMENTS_PAGE_DEFAULT, cursor } = request.query
    const page = await store.stock.movements(id, cursor === undefined ? undefined : Number(cursor), limit + 1)
    if (page === undefined) throw new PlantNotFound()
    const more = page.length > limit
    const items = more ? page.slice(0, limit) : page
    reply.header('cache-control', 'no-store')
    return { items, nextCursor: more ? String(items[items.length - 1].seq) : null }
  })
  methodNotAllowed(app, '/v3/plant/:id/stock/movements', ['GET', 'POST'])
}
