import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { HISTORY_PAGE_DEFAULT } from '../catalogue/history.js'
import { PlantNotFound, VersionNotKept } from '../catalogue/errors.js'
import { writeMetaOf, writeSecurity } from '../http/auth/auth.js'
import { ref } from '../http/schemas/components.js'
import { ifMatchVersions } from '../http/resources/etag.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { decodePair, encodePair } from '../http/resources/positions.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problems/problem.js'
import { admitLargePages, QUEUE_FULL_OR_STORAGE } from '../http/connections/queued-bytes.js'
import { canonicalId, guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { SKU_TAKEN } from './routes.js'
import { sendPlant, tags } from './record.js'
import { HistoryPage, HistoryQuery, RevertBody, type HistoryEntry } from './history-schemas.js'
import { IdParams, UpdateHeaders } from './schemas.js'
import { Plant } from './record.js'

// A plant's history and its revert: GET /v3/plant/{id}/history, newest first, readable
// while the plant is in the trash; POST /v3/plant/{id}/revert gives it a version's fields back.

/** A cursor names the plant and the oldest version of the page before: the next page is older. */
function decodeCursor (cursor: string | undefined, id: number): number | undefined {
  if (cursor === undefined) return undefined
  const [plant, version] = decodePair(cursor, 1)
  if (plant !== id) {
    throw new HttpProblem(400, 'invalid-input', 'cursor is for another plant\'s history: pass the nextCursor of a page of this one', [{ path: '/cursor', message: 'is for another plant' }])
  }
  return version
}

const NOT_KEPT: [number, string] = [404, 'No plant with this id (not-found), or the version is not kept (version-not-kept: older than HISTORY_RETENTION_DAYS, from before history was kept, or above the plant\'s current version)']

export const historyRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { store, queued }) => {
  app.get('/v3/plant/:id/history', {
    preValidation: canonicalId,
    onSend: admitLargePages(queued),
    schema: {
      operationId: 'plant-history',
      tags,
      summary: 'A plant\'s versions, newest first, each with the fields it changed (before and after), who made it and when; one page at a time',
      description: 'Versions are kept HISTORY_RETENTION_DAYS (default 365). Readable while the plant is in the trash; a purged plant\'s history goes with it. ' +
        'A cursor handed out before the catalogue was restored from a backup is 410: read the history again from its first page.',
      params: IdParams,
      querystring: HistoryQuery,
      response: {
        200: { ...ref(HistoryPage), description: 'A page of the history; pass nextCursor back as cursor for the next, older one', headers: HEADERS.requestId },
        ...problemResponses(...guardStatuses(false), [400, 'Invalid ID supplied, or invalid input'], [404, 'No plant with this id, live or in the trash'],
          [410, 'The cursor was handed out before the catalogue was restored from a backup: read the history again without one'], [503, QUEUE_FULL_OR_STORAGE])
      }
    }
  }, async (request, reply) => {
    const { id } = request.params
    const { limit = HISTORY_PAGE_DEFAULT, cursor } = request.query
    const entries = await store.history(id, decodeCursor(cursor, id), limit + 1)
    if (entries === undefined) throw new PlantNotFound()
    const more = entries.length > limit
    const items = more ? entries.slice(0, limit) : entries
    reply.header('cache-control', 'no-store')
    return { items: items as HistoryEntry[], nextCursor: more ? encodePair(id, items[items.length - 1].version) : null }
  })

  methodNotAllowed(app, '/v3/plant/:id/history', ['GET'])

  app.post('/v3/plant/:id/revert', {
    preValidation: canonicalId,
    config: { bodyTakes: 'a revert takes only version and status' },
    schema: {
      operationId: 'revert-plant',
      tags,
      security: writeSecurity,
      summary: 'Give a plant back the fields of one of its versions, as a new version (photos, and unless asked the status, stay as they are)',
      description: 'One `updated` change in the feed, by the key that sent it, and a `reverted` version in the plant\'s history. The status stays as it is (a sale or a hold happened in the world) ' +
        'unless the body says `"status": true`. Checks in this order: the path id and the body (400), the plant (404), ' +
        'If-Match (412), the version (404 version-not-kept), the SKU (409 sku-taken: another plant has taken it since). A revert to the fields the ' +
        'plant has already answers the plant as it is: no new version, no change.',
      params: IdParams,
      headers: UpdateHeaders,
      body: ref(RevertBody),
      response: {
        200: { ...ref(Plant), description: 'The plant with the version\'s fields, and its new ETag', headers: { ...HEADERS.requestId, ...HEADERS.etag, ...HEADERS.location } },
        ...problemResponses(...guardStatuses(true), [400, 'Invalid ID supplied, or invalid input'], NOT_KEPT, SKU_TAKEN, 412, 413, 503)
      }
    }
  }, async (request, reply) => {
    const { id } = request.params
    const { version, status } = request.body
    let plant
    try {
      plant = await store.revert(id, version, { expectedVersions: ifMatchVersions(request.headers['if-match'], id), status }, writeMetaOf(request))
    } catch (err) {
      // A version the plant never reached is not one the retention dropped: say so, with the newest.
      if (err instanceof VersionNotKept) {
        const now = await store.get(id).catch(() => undefined)
        if (now !== undefined && version > now.version) {
          throw new HttpProblem(404, 'version-not-kept', `plant ${id} has no version ${version}; its current version is ${now.version}`)
        }
      }
      throw err
    }
    reply.header('cache-control', 'no-store')
    return sendPlant(reply, plant)
  })

  methodNotAllowed(app, '/v3/plant/:id/revert', ['POST'])
}
