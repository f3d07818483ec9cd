import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ref } from '../http/schemas/components.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problems/problem.js'
import { feedPositionHook } from '../http/resources/positions.js'
import { plantQueryOf } from './query.js'
import { guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { tags } from './record.js'
import { COUNT_EXACT_UP_TO, CountQuery, PlantCount } from './schemas.js'

/** The 503s a count may answer, each by its code. */
const COUNT_UNAVAILABLE = 'Storage unavailable (storage-unavailable) or shutting down (shutting-down); or the count ran past its time limit (query-too-slow: narrow it or retry); see Retry-After'

/**
 * GET /v3/plant/count: how many plants the list's filters match ("1–20 of 240"). The store counts
 * one past the exact range and no further, so a filter matching most of a large catalogue costs
 * about what a long page does, never a scan of every plant.
 */
const PAGING = ['sort', 'limit', 'cursor']

export const countRoute: FastifyPluginAsyncTypebox<RouteOptions> = async (app, options) => {
  const upTo = COUNT_EXACT_UP_TO.toLocaleString('en')
  // A static path: Fastify's router prefers it to /v3/plant/:id whatever the order of registration.
  app.get('/v3/plant/count', {
    // The list's paging parameters, sent to the count as a client builds both from one query, are
    // named for what they are rather than "not a known field".
    preValidation: async (request) => {
      const paging = PAGING.filter((name) => Object.hasOwn(request.query as object, name))
      if (paging.length > 0) {
        throw new HttpProblem(400, 'invalid-input', `querystring ${paging.map((p) => `/${p}`).join(', ')}: count takes no sort, limit or cursor (they page the list); send the filters alone`,
          paging.map((p) => ({ path: `/${p}`, message: 'count takes no sort, limit or cursor' })))
      }
    },
    preHandler: feedPositionHook(options.store),
    schema: {
      operationId: 'count-plants',
      tags,
      summary: `Count the plants the list's filters match: exact up to ${upTo}`,
      description: 'Takes the filters of `GET /v3/plant` (not its sort, limit or cursor) with the same rules; an unknown parameter is 400. ' +
        `Beyond ${upTo} matches it answers \`{ "count": ${COUNT_EXACT_UP_TO}, "exact": false }\` without counting further.`,
      querystring: CountQuery,
      response: {
        200: { ...ref(PlantCount), description: 'The number of matching plants', headers: { ...HEADERS.requestId, ...HEADERS.feedPosition } },
        ...problemResponses(...guardStatuses(false), 400, [503, COUNT_UNAVAILABLE])
      }
    }
  }, async (request, reply) => {
    const n = await options.store.count(plantQueryOf(request.query), COUNT_EXACT_UP_TO + 1)
    reply.header('cache-control', 'no-store')
    return n > COUNT_EXACT_UP_TO ? { count: COUNT_EXACT_UP_TO, exact: false } : { count: n, exact: true }
  })
  methodNotAllowed(app, '/v3/plant/count', ['GET'])
}
