import type { FastifyInstance } from 'fastify'
import { Histogram, Registry, collectDefaultMetrics } from 'prom-client'

/** Prometheus metrics: request latency by route and status (its _count is the request count) and process figures. */
export function registerMetrics (app: FastifyInstance): Registry {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const duration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer HTTP requests, by method, route and status',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry]
  })
  app.addHook('onResponse', (request, reply, done) => {
    duration.observe({ method: request.method, route: request.routeOptions.url ?? 'unmatched', status_code: reply.statusCode }, reply.elapsedTime / 1000)
    done()
  })
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(registry.contentType)
    return registry.metrics()
  })
  return registry
}
