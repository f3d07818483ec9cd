import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ref } from '../http/schemas/components.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { HEADERS, problemResponses } from '../http/problems/problem.js'
import { feedPositionHook } from '../http/resources/positions.js'
import { guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { tags } from './record.js'
import { Inventory } from './schemas.js'

/** GET /v3/store/inventory (the Petstore's getInventory): counts the store keeps with every write, read in one snapshot. */
export const inventoryRoute: FastifyPluginAsyncTypebox<RouteOptions> = async (app, options) => {
  app.get('/v3/store/inventory', {
    preHandler: feedPositionHook(options.store),
    schema: {
      operationId: 'get-inventory',
      tags,
      summary: 'The number of plants of each status',
      description: 'Exact at one moment (never a mix of before and after a write), and as cheap on a million plants as on ten: ' +
        'the counts are kept in the transaction of every write, not counted per request.',
      response: {
        200: { ...ref(Inventory), description: 'The counts of each status', headers: { ...HEADERS.requestId, ...HEADERS.feedPosition } },
        ...problemResponses(...guardStatuses(false), 503)
      }
    }
  }, async (_request, reply) => {
    reply.header('cache-control', 'no-store')
    return await options.store.inventory()
  })
  methodNotAllowed(app, '/v3/store/inventory', ['GET'])
}
