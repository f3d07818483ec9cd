import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { VersionMismatch } from '../catalogue/errors.js'
import type { TrashedPlant as Trashed, TrashPosition } from '../catalogue/trash.js'
import { TRASH_PAGE_DEFAULT } from '../catalogue/trash.js'
import { toRecord } from '../catalogue/plant.js'
import { securityFor, writeMetaOf, writeSecurity } from '../http/auth/auth.js'
import { ref } from '../http/schemas/components.js'
import { etagOf, ifMatchMistake, ifMatchVersions } from '../http/resources/etag.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { decodePair, encodePair } from '../http/resources/positions.js'
import { HEADERS, HttpProblem, Problem, problemResponses } from '../http/problems/problem.js'
import { admitLargePages, QUEUE_FULL_OR_STORAGE } from '../http/connections/queued-bytes.js'
import { canonicalId, guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { SKU_TAKEN } from './routes.js'
import { sendPlant } from './record.js'
import { IdParams } from './schemas.js'
import { Plant } from './record.js'
import { TrashPage, TrashQuery, type TrashedPlant } from './trash-schemas.js'

// The trash: DELETE /v3/plant/{id} puts a plant here (plants/routes.ts); these list it,
// bring a plant back, and purge one. Listing and restoring need `write` (the staff who delete),
// purging `admin` (it cannot be undone).

const tags = ['trash']
const TRASH_NOT_FOUND: [number, string] = [404, 'No plant with this id in the trash (never deleted, restored, or purged)']

/**
 * A trash entry as the API shows it, with when the purge takes it (`retentionMs` after the delete).
 * The record as it was deleted: its version is the one before the delete's (the entry's own), also
 * for an entry kept before the record carried a version.
 */
export const entryOf = (t: Trashed, retentionMs: number): TrashedPlant => ({
  id: t.plant.id,
  version: t.version,
  trashedAt: new Date(t.trashedAt).toISOString(),
  purgeAt: new Date(t.trashedAt + retentionMs).toISOString(),
  trashedBy: t.trashedBy,
  plant: toRecord({ ...t.plant, version: t.version - 1 })
})

/** A cursor names the last entry of the page before, by its place in the trash's order. */
function decodeCursor (cursor: string | undefined): TrashPosition | undefined {
  if (cursor === undefined) return undefined
  const [trashedAt, id] = decodePair(cursor, 0)
  return { trashedAt, id }
}

export const trashRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, { store, queued }) => {
  const guards = guardStatuses(true)

  app.get('/v3/trash', {
    onSend: admitLargePages(queued),
    schema: {
      operationId: 'list-trash',
      tags,
      security: writeSecurity,
      summary: 'The trash: deleted plants (when, by whom), newest first, one page at a time',
      description: 'A plant stays TRASH_RETENTION_DAYS (default 30) after its delete, then the hourly purge takes it with its photos: each entry\'s `purgeAt` says when.',
      querystring: TrashQuery,
      response: {
        200: { ...ref(TrashPage), description: 'A page of the trash; pass nextCursor back as cursor for the next', headers: HEADERS.requestId },
        ...problemResponses(...guards, 400, [503, QUEUE_FULL_OR_STORAGE])
      }
    }
  }, async (request, reply) => {
    const { limit = TRASH_PAGE_DEFAULT, cursor } = request.query
    const entries = await store.trash(decodeCursor(cursor), limit + 1)
    const more = entries.length > limit
    const items = more ? entries.slice(0, limit) : entries
    const last = items[items.length - 1]
    reply.header('cache-control', 'no-store')
    return { items: items.map((t) => entryOf(t, store.trashRetentionMs)), nextCursor: more ? encodePair(last.trashedAt, last.plant.id) : null }
  })

  methodNotAllowed(app, '/v3/trash', ['GET'])

  app.post('/v3/trash/:id/restore', {
    preValidation: canonicalId,
    schema: {
      operationId: 'restore-plant',
      tags,
      security: writeSecurity,
      summary: 'Bring a plant back from the trash: same id, fields and photos, as a new version (a `created` change in the feed)',
      params: IdParams,
      headers: Type.Object({
        'if-match': Type.Optional(Type.String({ description: 'Restore only if the trash entry still has this ETag, `"<id>.<version>"` with the version the trash lists (else 412).' }))
      }),
      response: {
        200: { ...ref(Plant), description: 'The plant, live again, with its new ETag', headers: { ...HEADERS.requestId, ...HEADERS.etag, ...HEADERS.location } },
        ...problemResponses(...guards, [400, 'Invalid ID supplied'], TRASH_NOT_FOUND, SKU_TAKEN, 503),
        // No `current`: the entry is not a plant one can read (GET /v3/trash lists it); its ETag is sent.
        412: {
          ...ref(Problem),
          description: 'If-Match is not the trash entry\'s ETag (it was restored and deleted again since): the detail and the ETag header name the entry\'s current one',
          headers: { ...HEADERS.requestId, etag: { type: 'string', description: 'The trash entry\'s current ETag, `"<id>.<version>"`: send it as If-Match to restore it as it now is.' } }
        }
      }
    }
  }, async (request, reply) => {
    const { id } = request.params
    let plant
    try {
      plant = await store.restoreTrashed(id, ifMatchVersions(request.headers['if-match'], id), writeMetaOf(request))
    } catch (err) {
      if (err instanceof VersionMismatch) throw await staleEntry(id, request.headers['if-match'])
      throw err
    }
    reply.header('cache-control', 'no-store')
    return sendPlant(reply, plant)
  })

  /**
   * A refused restore's 412, as near a plant's 412 as an entry allows: the entry's current ETag in the
   * detail and the ETag header (read after the refusal), and what is wrong with an unquoted or weak If-Match.
   */
  async function staleEntry (id: number, ifMatch: string | undefined): Promise<HttpProblem> {
    const entry = await store.trashed(id).catch(() => undefined)
    const mistake = ifMatchMistake(ifMatch)
    if (entry === undefined) return new HttpProblem(412, 'precondition-failed', mistake ?? 'If-Match does not match the trash entry\'s current ETag')
    const etag = etagOf({ id, version: entry.version })
    const detail = mistake === undefined ? `If-Match does not match the trash entry's current ETag, ${etag}` : `${mistake}; the trash entry's current ETag is ${etag}`
    return new HttpProblem(412, 'precondition-failed', detail, undefined, { etag })
  }

  methodNotAllowed(app, '/v3/trash/:id/restore', ['POST'])

  app.delete('/v3/trash/:id', {
    preValidation: canonicalId,
    schema: {
      operationId: 'purge-plant',
      tags,
      security: securityFor('admin'),
      summary: 'Purge a plant from the trash now, for good; photo files nothing else names go with it',
      params: IdParams,
      response: {
        204: Type.Null({ description: 'Purged' }),
        ...problemResponses(...guards, [400, 'Invalid ID supplied'], TRASH_NOT_FOUND, 503)
      }
    }
  }, async (request, reply) => {
    await store.purgeTrashed(request.params.id)
    // It cannot be undone: the log keeps who did it (the key's name, never its secret).
    request.log.info({ key: writeMetaOf(request).actor, plant: request.params.id }, 'plant purged from the trash')
    return reply.code(204).header('cache-control', 'no-store').send(null)
  })

  methodNotAllowed(app, '/v3/trash/:id', ['DELETE'])
}
