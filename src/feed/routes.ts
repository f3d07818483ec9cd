import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ref } from '../http/components.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problem.js'
import { methodNotAllowed } from '../http/method-not-allowed.js'
import { guardStatuses, type RouteOptions } from '../plants/routes.js'
import { CHANGES_PAGE_SIZE, ChangePage, ChangesQuery, EventsHeaders, EventsQuery } from './schemas.js'
import { streamChanges } from './event-stream.js'

const tags = ['plant']

/** The change feed: a catch-up page endpoint and a live Server-Sent Events stream over the same log. */
export const changeRoutes: FastifyPluginAsyncTypebox<RouteOptions> = async (app, options) => {
  const { store } = options
  const guards = guardStatuses(false)
  app.get('/v3/plant/changes', {
    schema: {
      operationId: 'list-plant-changes',
      tags,
      summary: 'Changes after a sequence number, oldest first (410 when that point is older than the retention)',
      querystring: ChangesQuery,
      response: {
        200: { ...ref(ChangePage), description: 'A page of changes; send next as after for the following page', headers: HEADERS.requestId },
        ...problemResponses(...guards, 400, 410, 503)
      }
    }
  }, async (request) => store.changes(request.query.after ?? 0, request.query.limit ?? CHANGES_PAGE_SIZE))

  app.get('/v3/plant/events', {
    schema: {
      operationId: 'stream-plant-events',
      tags,
      summary: 'The change feed as Server-Sent Events: `id` is the sequence, `event` the kind, `data` the change',
      querystring: EventsQuery,
      headers: EventsHeaders,
      response: {
        200: { description: 'An endless text/event-stream', headers: HEADERS.requestId, content: { 'text/event-stream': { schema: { type: 'string' } } } },
        ...problemResponses(...guards, 400, 410, 503)
      }
    }
  }, async (request, reply) => {
    const lastEventId = request.headers['last-event-id']
    const after = lastEventId !== undefined ? Number(lastEventId) : request.query.after ?? 0
    if (!Number.isSafeInteger(after)) throw new HttpProblem(400, 'invalid-input', 'Last-Event-ID is too large')
    await store.changes(after, 1) // 410 or 503 now, while a problem body can still be sent
    reply.hijack()
    streamChanges(request, reply, store, after)
  })

  methodNotAllowed(app, '/v3/plant/changes', ['GET'])
  methodNotAllowed(app, '/v3/plant/events', ['GET'])
}
