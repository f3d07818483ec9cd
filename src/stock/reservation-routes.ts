import { randomUUID } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { plantsOf, type PlantCounts, type ReservationLine } from '../catalogue/reservation.js'
import { ReservationNotFound, ReservationShort } from '../catalogue/stock.js'
import { securityFor, writeMetaOf } from '../http/auth/auth.js'
import { ref } from '../http/schemas/components.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problems/problem.js'
import { guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { idempotencyClaimKey } from '../http/resources/idempotency.js'
import { requestHash } from '../store/idempotency.js'
import { WriteHeaders } from '../plants/schemas.js'
import type { IdempotencyClaim } from '../store/idempotency.js'
import { CommitResult, HeldReservation, NewReservation, Reservation, ReservationParams } from './reservation-schemas.js'

// Reservations' routes: a checkout holds units (all lines or none), reads its reservation, commits
// it into sales or releases it. Scope `sell` (a till's, and any above it).

const tags = ['stock']
const security = securityFor('sell')
const GONE: [number, string] = [410, 'reservation-gone: committed, released or expired (`state` says which): nothing was applied']
const NOT_FOUND: [number, string] = [404, 'reservation-not-found: no reservation with this id']
const NOT_LISTED = 'reservations are not listed: a checkout reads its own by id (GET /v3/reservations/{id}, the Location of the POST that made it); this path takes POST'
const location = { location: { type: 'string', description: '/v3/reservations/{id} of the reservation.' } }

/** The claim of an Idempotency-Key over what the request asks (`what`): a retry with the same key and request answers the first result. */
function claimOf (request: Parameters<typeof idempotencyClaimKey>[0], what: unknown): IdempotencyClaim | undefined {
  const key = request.headers['idempotency-key']
  return typeof key !== 'string' ? undefined : { key: idempotencyClaimKey(request, key), requestHash: requestHash(what) }
}

/** The plants' counts as they are now (by id), for a replayed answer that did not keep them. */
async function countsNow (store: RouteOptions['store'], lines: ReservationLine[]): Promise<PlantCounts[]> {
  const counts: PlantCounts[] = []
  for (const id of plantsOf(lines)) {
    const plant = await store.get(id)
    if (plant?.stock) counts.push({ id, version: plant.version, stock: plant.stock })
  }
  return counts
}

export const reservationRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { store }) => {
  app.post('/v3/reservations', {
    schema: {
      operationId: 'reserve-stock',
      tags,
      security,
      summary: 'Hold units of plants for a checkout: every line or none',
      description: 'One write that checks and applies: each line\'s units are held at its location (`reserved` rises, `available` drops: a till cannot sell them), ' +
        'and each plant touched gets a new version, one `updated` change and a history entry (reason `reserve`); status follows stock as for a movement: holding the last ' +
        'available units sets `sold`, and a release or expiry that makes some available again sets `available` (a commit changes neither). Lines of one plant and location ' +
        'count together; when any cannot be held, 409 insufficient-stock names every short line (`lines`, and `errors` with `/lines/2`; a plant that does not track stock is said so, and a line short at its place names the plant\'s other places with units, in words and as the line\'s `elsewhere`) and nothing is held. ' +
        'At `expiresAt` the units are released by themselves. With an Idempotency-Key a retry answers the first reservation and holds nothing more. ' +
        'Reservations are not listed: GET /v3/reservations is 405 (Allow: POST); a checkout reads its own by id.',
      headers: WriteHeaders,
      body: ref(NewReservation),
      response: {
        201: { ...ref(HeldReservation), description: 'The reservation, held, with each plant\'s new version and totals', headers: { ...HEADERS.requestId, ...location, ...HEADERS.idempotentReplayed } },
        ...problemResponses(...guardStatuses(true), 400, [404, 'A line names a plant (not-found) or a location (location-not-found) that does not exist: `errors` names each line'],
          [409, 'insufficient-stock: `lines` names every line that cannot be held, with what is available'], 413, 422, 503)
      }
    }
  }, async (request, reply) => {
    const { replayed, reservation, plants } = await store.stock.reserve({ id: randomUUID(), ...request.body }, claimOf(request, ['reserve', request.body]), writeMetaOf(request)).catch(async (err: unknown) => {
      // A plant that does not track stock has none available: the refusal says why, and what starts it;
      // a line short at its place names the plant's other places with units available.
      if (err instanceof ReservationShort) {
        for (const line of err.lines) {
          if (line.available === 0) line.untracked = (await store.get(line.plant))?.stock === null
          if (line.untracked !== true) line.elsewhere = ((await store.stock.levels(line.plant)) ?? []).filter((l) => l.location !== line.location && l.available > 0)
        }
      }
      throw err
    })
    reply.code(201).header('cache-control', 'no-store').header('location', `/v3/reservations/${reservation.id}`)
    if (replayed) reply.header('idempotent-replayed', 'true')
    // A replay of a hold answered before its answer kept the plants' counts has none: they are read now.
    return { ...reservation, plants: (plants as PlantCounts[] | undefined) ?? await countsNow(store, reservation.lines) }
  })
  // Not listed (the contract has no list; a checkout keeps the id POST answered): GET says so, where any other path's 405 says only what it takes.
  const refuse = async (request: FastifyRequest): Promise<never> => {
    throw new HttpProblem(405, 'method-not-allowed', request.method === 'GET' || request.method === 'HEAD' ? NOT_LISTED : `${request.method} is not served on this path; use POST`, undefined, { allow: 'POST' })
  }
  app.route({ method: ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'], url: '/v3/reservations', schema: { hide: true }, config: { allow: 'POST' }, onRequest: refuse, handler: refuse })

  app.get('/v3/reservations/:id', {
    schema: {
      operationId: 'get-reservation',
      tags,
      security,
      summary: 'A reservation and its state (a checkout asks whether its hold still stands)',
      params: ReservationParams,
      response: {
        200: { ...ref(Reservation), description: 'The reservation; a held one past expiresAt shows as expired', headers: HEADERS.requestId },
        ...problemResponses(...guardStatuses(false), 400, NOT_FOUND, 503)
      }
    }
  }, async (request, reply) => {
    const reservation = await store.stock.reservation(request.params.id)
    if (reservation === undefined) throw new ReservationNotFound(request.params.id)
    reply.header('cache-control', 'no-store')
    return reservation
  })

  app.delete('/v3/reservations/:id', {
    schema: {
      operationId: 'release-reservation',
      tags,
      security,
      summary: 'Release a held reservation: its units are available again',
      description: 'A held reservation is released (204). One past its expiresAt that the expirer has not let go yet is let go at once as expired ' +
        '(history reason `expire`, actor `expiry`) and answered 410 reservation-gone with `state: expired`, as an expired one is; one committed or released is 410 and nothing is applied.',
      params: ReservationParams,
      response: {
        204: { type: 'null', description: 'Released', headers: HEADERS.requestId },
        ...problemResponses(...guardStatuses(true), 400, NOT_FOUND, GONE, 503)
      }
    }
  }, async (request, reply) => {
    await store.stock.releaseReservation(request.params.id, writeMetaOf(request))
    reply.code(204)
  })
  methodNotAllowed(app, '/v3/reservations/:id', ['GET', 'DELETE'])

  app.post('/v3/reservations/:id/commit', {
    schema: {
      operationId: 'commit-reservation',
      tags,
      security,
      summary: 'Commit a held reservation: each line becomes a sale',
      description: 'Each line becomes a movement with reason `sale` and the reservation\'s id as `reference`: onHand and reserved drop together (available stays). ' +
        'Each plant gets one new version and one `updated` change. Once committed, released or expired it is 410 reservation-gone; with an Idempotency-Key a ' +
        'retried commit answers the first result instead.',
      params: ReservationParams,
      headers: WriteHeaders,
      response: {
        200: { ...ref(CommitResult), description: 'The sales and each plant\'s new counts', headers: { ...HEADERS.requestId, ...HEADERS.idempotentReplayed } },
        ...problemResponses(...guardStatuses(true), 400, NOT_FOUND, GONE, 422, 503)
      }
    }
  }, async (request, reply) => {
    const { id } = request.params
    const { replayed, ...result } = await store.stock.commitReservation(id, claimOf(request, ['commit', id]), writeMetaOf(request))
    reply.header('cache-control', 'no-store')
    if (replayed) reply.header('idempotent-replayed', 'true')
    return result
  })
  methodNotAllowed(app, '/v3/reservations/:id/commit', ['POST'])
}
