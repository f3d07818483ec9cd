import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PhotoOrderInvalid, PlantNotFound, VersionMismatch } from '../catalogue/errors.js'
import { photoOrderProblem } from '../catalogue/photo.js'
import { writeMetaOf, writeSecurity } from '../http/auth/auth.js'
import { ref } from '../http/schemas/components.js'
import { ifMatchVersions } from '../http/resources/etag.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problems/problem.js'
import { canonicalId, guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { sendPlant, tags } from '../plants/record.js'
import { IdParams, UpdateHeaders } from '../plants/schemas.js'
import { Plant } from '../plants/record.js'
import { PhotoOrder } from './schemas.js'

const refuse = (problem: { at?: number, message: string }): HttpProblem =>
  new HttpProblem(400, 'invalid-input', `order ${problem.message}`, [{ path: problem.at === undefined ? '/order' : `/order/${problem.at}`, message: problem.message }])

/**
 * PUT /v3/plant/{id}/photos/order: the plant's photos in a new order, the first the cover. A write
 * like any other: a new version, If-Match, one `updated` change. The order is checked against the
 * plant as read first, to say what is wrong with it; the write checks it again in its transaction,
 * against the photos as they are then.
 */
export const photoOrderRoute: FastifyPluginAsyncTypebox<RouteOptions> = async (app, options) => {
  const { store } = options
  app.put('/v3/plant/:id/photos/order', {
    // onRequest, before the body is read: a bad path id is the first thing refused.
    onRequest: canonicalId,
    schema: {
      operationId: 'order-plant-photos',
      tags,
      security: writeSecurity,
      summary: 'Put a plant\'s photos in a new order (the first is the cover)',
      description: '`order` names every photo id of the plant, each once. Checks in this order: the path id (400 invalid-id), the body ' +
        '(400 invalid-input), the plant (404), If-Match (412), then the ids (400 invalid-input naming the one at fault). ' +
        'The plant\'s version increases (a new ETag) and the feed gets one `updated` change. The order the photos already have ' +
        'changes nothing (as PATCH `{}`): 200 with the plant as it is, the same ETag, no new version, no change in the feed.',
      params: IdParams,
      headers: UpdateHeaders,
      body: ref(PhotoOrder),
      response: {
        200: { ...ref(Plant), description: 'The plant with its photos in the new order, and its new ETag (the same when the order is the one it had)', headers: { ...HEADERS.requestId, ...HEADERS.etag, ...HEADERS.location } },
        ...problemResponses(...guardStatuses(true), [400, 'Invalid ID supplied, or invalid input (an order that does not name each of the plant\'s photos once)'],
          404, 412, 413, 503)
      }
    }
  }, async (request, reply) => {
    const { id } = request.params
    const expected = ifMatchVersions(request.headers['if-match'], id)
    const { order } = request.body
    const plant = await store.get(id)
    if (!plant) throw new PlantNotFound()
    if (expected && !expected.includes(plant.version)) throw new VersionMismatch()
    const problem = photoOrderProblem(plant.photos, order)
    if (problem) throw refuse(problem)
    // The order the plant already has asks for no change, as PATCH {} does: the plant as it is (same
    // ETag), no new version, no change in the feed. A PATCH that sends members, even the values the
    // plant holds, is a write (CONTRACT.md): it names fields; an order is the photos' one state.
    const unchanged = order.every((photoId, i) => plant.photos[i].id === photoId)
    const ordered = unchanged
      ? plant
      : await store.orderPhotos(id, order, expected, writeMetaOf(request)).catch((err: unknown) => {
        // The photos changed between the read and the write.
        if (err instanceof PhotoOrderInvalid) throw refuse({ message: 'must name every photo of the plant, each once (they changed meanwhile: read the plant again)' })
        throw err
      })
    reply.header('cache-control', 'no-store')
    return sendPlant(reply, ordered)
  })
  methodNotAllowed(app, '/v3/plant/:id/photos/order', ['PUT'])
}
