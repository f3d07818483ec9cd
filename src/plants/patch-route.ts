import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { securityFor, writeMetaOf } from '../http/auth/auth.js'
import { ref } from '../http/schemas/components.js'
import { ifMatchVersions } from '../http/resources/etag.js'
import { strictJsonParser } from '../http/input/json-body.js'
import { allowHeader } from '../http/problems/unserved.js'
import { HEADERS, problemResponses } from '../http/problems/problem.js'
import { canonicalId, guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { SKU_TAKEN } from './routes.js'
import { sendPlant, tags } from './record.js'
import { IdParams, PlantPatch, UpdateHeaders } from './schemas.js'
import { Plant } from './record.js'

/**
 * PATCH /v3/plant/{id}: a JSON merge patch (RFC 7396), merged by the store inside the write's
 * transaction against the current plant, so concurrent patches of different fields both stay.
 * Its own plugin: the merge-patch media type is accepted here and nowhere else.
 */
export const patchRoute: FastifyPluginAsyncTypebox<RouteOptions> = async (app, options) => {
  app.addContentTypeParser('application/merge-patch+json', { parseAs: 'buffer' }, strictJsonParser(app))
  app.patch('/v3/plant/:id', {
    // onRequest, before the body is read: a bad path id is the first thing refused, even with a malformed body.
    onRequest: canonicalId,
    schema: {
      operationId: 'patch-plant',
      tags,
      // A till's `sell` key may send `status` alone; any other member needs `write` (checked once the body is parsed).
      security: securityFor('sell'),
      summary: 'Change some fields of a plant (JSON merge patch, RFC 7396; `{}` changes nothing)',
      description: 'Send `application/merge-patch+json` (or `application/json`). Members sent replace the stored ones (`tags` as a whole list, ' +
        '`category: null` removes the category); members absent are kept. Checks in this order: the path id (400 invalid-id), the body ' +
        '(400 invalid-input), the plant (404), If-Match (412), the SKU (409 sku-taken). `{}` answers the current plant: no new version, no change in the feed; members equal to the plant\'s are still a write (a new version). ' +
        'Needs a key of scope `write`, or `sell` (a till) when the body is `status` alone; a `sell` key\'s patch of anything else is 403 insufficient-scope naming each member it may not change (`/price`).',
      consumes: ['application/merge-patch+json', 'application/json'],
      params: IdParams,
      headers: UpdateHeaders,
      body: ref(PlantPatch),
      response: {
        200: { ...ref(Plant), description: 'The plant after the patch, with its ETag', headers: { ...HEADERS.requestId, ...HEADERS.etag, ...HEADERS.location } },
        ...problemResponses(...guardStatuses(true), [400, 'Invalid ID supplied, or invalid input'], 404, SKU_TAKEN, 412, 413, 503)
      }
    },
    config: { allow: allowHeader(['GET', 'DELETE', 'PATCH']), scopeOfBody: scopeOfPatch }
  }, async (request, reply) => {
    const { id } = request.params
    const plant = await options.store.patch(id, request.body, ifMatchVersions(request.headers['if-match'], id), writeMetaOf(request))
    reply.header('cache-control', 'no-store')
    return sendPlant(reply, plant)
  })
}

/** The scope a patch needs, and the members that need `write` (a till's refusal names them). */
function scopeOfPatch (body: unknown): { scope: 'sell' | 'write', paths: string[] } {
  const scope = statusOnlyIsSelling(body)
  if (scope === 'sell' || typeof body !== 'object' || body === null) return { scope, paths: [] }
  return { scope, paths: Object.keys(body).filter((member) => member !== 'status').map((member) => `/${member}`) }
}

/** A body of `status` and nothing else is a sale (or its undoing): `sell`. Anything else is an edit: `write`. */
export function statusOnlyIsSelling (body: unknown): 'sell' | 'write' {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'write'
  const members = Object.keys(body)
  return members.length === 1 && members[0] === 'status' ? 'sell' : 'write'
}
