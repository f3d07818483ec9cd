import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { sendProblem } from '../http/error-handler.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problems/problem.js'
import { StorageUnavailable } from '../catalogue/errors.js'
import type { PlantStore } from '../store/plant-store.js'

const Health = Type.Object({ status: Type.String() })
const alive = { ...Health, description: 'The process answers', headers: HEADERS.requestId }
const ready = { ...Health, description: 'Storage answers and the service is not shutting down', headers: HEADERS.requestId }

export interface Readiness {
  /** Set on SIGTERM: /readyz answers 503 so load balancers stop sending. */
  draining: boolean
  /** When the last request arrived, so the shutdown grace can end early once traffic stops. */
  lastRequestAt: number
}

/** Errno codes of a storage that cannot be reached, in words (SQLite and SQLSTATE codes are shown as they are). */
const ERRNO: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ETIMEDOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ENOTFOUND: 'host name not found',
  EAI_AGAIN: 'host name lookup failed'
}

/**
 * Why the storage is unavailable, for the readiness answer and the log: the cause's code and
 * PostgreSQL's own words, never an address, a path or a stack.
 */
export function unavailableReason (err: unknown): string {
  const cause = (err instanceof StorageUnavailable ? err.cause : err) as { code?: unknown, message?: unknown, severity?: unknown } | undefined
  const code = typeof cause?.code === 'string' ? cause.code : undefined
  if (code !== undefined && typeof cause?.severity === 'string') return `${String(cause.message)} (SQLSTATE ${code})`
  if (code !== undefined) return ERRNO[code] ? `${ERRNO[code]} (${code})` : code
  const message = err instanceof Error ? err.message : String(err)
  return /no (answer|commit) within/.test(message) ? message.replace(/^\w+: /, '') : 'unreachable'
}

/** Liveness (the process answers) and readiness (storage answers, and we are not shutting down). */
export const healthRoutes: FastifyPluginAsyncTypebox<{ store: PlantStore, readiness: Readiness }> = async (app, { store, readiness }) => {
  app.get('/healthz', {
    schema: { tags: ['operations'], operationId: 'health', summary: 'Liveness', response: { 200: alive } }
  }, async () => ({ status: 'ok' }))

  // Readiness changes are logged once each; a load balancer probing every second must not fill the log.
  let drainingLogged = false
  let lastReason: string | undefined
  app.get('/readyz', {
    schema: {
      tags: ['operations'],
      operationId: 'ready',
      summary: 'Readiness: 503 while storage is unreachable (the detail says why) or the service is shutting down',
      response: { 200: ready, ...problemResponses(503) }
    }
  }, async (request, reply) => {
    if (readiness.draining) {
      if (!drainingLogged) request.log.info('readiness answers 503: shutting down')
      drainingLogged = true
      return sendProblem(reply, new HttpProblem(503, 'shutting-down', 'The service is shutting down', undefined, { 'retry-after': '1' }))
    }
    try {
      await store.ping()
    } catch (err) {
      if (!(err instanceof StorageUnavailable)) throw err
      const reason = unavailableReason(err)
      if (reason !== lastReason) request.log.warn({ reason }, 'readiness answers 503: storage is unavailable')
      lastReason = reason
      return sendProblem(reply, new HttpProblem(503, 'storage-unavailable', `Storage is unavailable: ${reason}`, undefined, { 'retry-after': '1' }))
    }
    if (lastReason !== undefined) request.log.info('readiness answers 200: storage is reachable again')
    lastReason = undefined
    return { status: 'ready' }
  })
}
