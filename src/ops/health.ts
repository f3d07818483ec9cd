import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { HEADERS, HttpProblem, problemResponses } from '../http/problem.js'
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

/** Liveness (the process answers) and readiness (storage answers, and we are not shutting down). */
export const healthRoutes: FastifyPluginAsyncTypebox<{ store: PlantStore, readiness: Readiness }> = async (app, { store, readiness }) => {
  app.get('/healthz', {
    schema: { tags: ['operations'], operationId: 'health', summary: 'Liveness', response: { 200: alive } }
  }, async () => ({ status: 'ok' }))

  app.get('/readyz', {
    schema: {
      tags: ['operations'],
      operationId: 'ready',
      summary: 'Readiness: 503 while storage is unreachable or the service is shutting down',
      response: { 200: ready, ...problemResponses(503) }
    }
  }, async () => {
    if (readiness.draining) throw new HttpProblem(503, 'shutting-down', 'The service is shutting down', undefined, { 'retry-after': '1' })
    await store.ping()
    return { status: 'ready' }
  })
}
