import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { ref } from '../http/schemas/components.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problems/problem.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { guardStatuses, type RouteOptions } from '../http/resources/route-parts.js'
import { FeedGone } from '../catalogue/errors.js'
import type { PlantStore } from '../store/plant-store.js'
import { CHANGES_PAGE_SIZE, ChangePage, ChangesQuery, EventsHeaders, EventsQuery } from './schemas.js'
import { EVENT_STREAM_HEADERS, EventStream } from './event-stream.js'
import type { FeedHub } from './hub.js'
import type { StreamLimits } from '../http/limits/stream-limits.js'
import { admitLargePages, QUEUE_FULL_OR_STORAGE } from '../http/connections/queued-bytes.js'

const tags = ['plant']

export interface FeedRouteOptions extends RouteOptions {
  hub: FeedHub
  limits: StreamLimits
}

const GONE = {
  expired: 'Changes after that sequence are no longer kept; reload the list and follow the feed from the Feed-Position of its first page',
  ahead: 'That sequence is beyond the head of this feed (a restored or another database); reload the list and follow the feed from the Feed-Position of its first page'
}

/** FeedGone as the contract's 410, saying which way the position is out of the log. */
async function orGone<T> (work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    if (err instanceof FeedGone) throw new HttpProblem(410, 'gone', GONE[err.reason])
    throw err
  }
}

/** Where a stream starts: after Last-Event-ID, else after `?after`, else at the head (live changes only, never 410). */
async function startOf (request: FastifyRequest, store: PlantStore): Promise<number> {
  const lastEventId = request.headers['last-event-id']
  const given = lastEventId !== undefined ? Number(lastEventId) : (request.query as { after?: number }).after
  if (given === undefined) return await store.head()
  if (!Number.isSafeInteger(given)) {
    const message = `must be at most ${Number.MAX_SAFE_INTEGER}`
    throw new HttpProblem(400, 'invalid-input', `headers /last-event-id ${message}`, [{ path: '/last-event-id', message }])
  }
  await orGone(store.changes(given, 1)) // 410 now, while a problem body can still be sent
  return given
}

/** The change feed: a catch-up page endpoint and a live Server-Sent Events stream over the same log. */
export const changeRoutes: FastifyPluginAsyncTypebox<FeedRouteOptions> = async (app, options) => {
  const { store, hub, limits, queued } = options
  const guards = guardStatuses(false)
  app.get('/v3/plant/changes', {
    onSend: admitLargePages(queued),
    schema: {
      operationId: 'list-plant-changes',
      tags,
      summary: 'Changes after a sequence number, oldest first',
      description: '410 when `after` is older than the retention or beyond the head of the feed (a restored or another ' +
        'database): never an empty page that would make a client skip what comes next. A client that gets 410 reloads ' +
        'the list and follows the feed from the `Feed-Position` header of the first page it loads.',
      querystring: ChangesQuery,
      response: {
        200: { ...ref(ChangePage), description: 'A page of changes; send next as after for the following page', headers: HEADERS.requestId },
        ...problemResponses(...guards, 400, [410, 'That point is older than the retention, or beyond the head'], [503, QUEUE_FULL_OR_STORAGE])
      }
    }
  }, async (request) => orGone(store.changes(request.query.after ?? 0, request.query.limit ?? CHANGES_PAGE_SIZE)))

  const eventsSchema = {
    querystring: EventsQuery,
    headers: EventsHeaders
  }
  // Declared before the GET so Fastify does not derive a HEAD from it (which would open a stream and never end).
  app.head('/v3/plant/events', { schema: { ...eventsSchema, hide: true } }, async (request, reply) => {
    await startOf(request, store)
    return reply.headers(EVENT_STREAM_HEADERS).send()
  })

  app.get('/v3/plant/events', {
    schema: {
      operationId: 'stream-plant-events',
      tags,
      summary: 'The change feed as Server-Sent Events: `id` is the sequence, `event` the kind, `data` the change',
      description: 'Resumes after `Last-Event-ID` (or `?after=`); with neither it starts at the head and sends live changes ' +
        'only (never 410). The first message is a bare `id:` naming where the stream starts, so a browser that reconnects ' +
        'before any change resumes there. 410 when the position is older than the retention or beyond the head. Streams are ' +
        'capped per instance (503; where API keys exist, streams without one take at most half the places) and per client address (429), both with Retry-After; a client that reads nothing for 30 s is cut off. ' +
        'A new stream is also 503 when the bytes queued to clients that have not read them leave no room for it (MAX_QUEUED_BYTES).',
      ...eventsSchema,
      response: {
        200: { description: 'An endless text/event-stream', headers: HEADERS.requestId, content: { 'text/event-stream': { schema: { type: 'string' } } } },
        ...problemResponses(...guards, 400, [410, 'That point is older than the retention, or beyond the head'],
          [429, 'Too many event streams from this client address (see Retry-After)'],
          [503, 'Too many event streams on this instance (or, without a key, too many streams without one), or too many bytes queued to clients that have not read them (send-queue-full), or storage unavailable (see Retry-After)'])
      }
    }
  }, async (request, reply) => {
    // Where keys exist, streams without one take at most half the places: a keyed client always finds one.
    const anonymous = request.writer === '' && await app.keyCache.keysRequired()
    const release = limits.acquire(request.ip, anonymous)
    let after: number
    try {
      after = await startOf(request, store)
      queued.admitStream(reply.raw)
    } catch (err) {
      release()
      throw err
    }
    reply.hijack()
    new EventStream(request, reply, hub, after, release).start()
  })
  // Before the server waits for its connections: ended streams resume elsewhere with Last-Event-ID.
  app.addHook('preClose', (done) => { hub.close(); done() })

  methodNotAllowed(app, '/v3/plant/changes', ['GET'])
  methodNotAllowed(app, '/v3/plant/events', ['GET'])
}
