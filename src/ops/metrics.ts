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
  // prom-client hashes a label set on every observe; one labelled child per set is looked up instead.
  const series = new Map<string, Histogram.Internal<'method' | 'route' | 'status_code'>>()
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched'
    const key = `${request.method} ${reply.statusCode} ${route}`
    let child = series.get(key)
    if (child === undefined) {
      child = duration.labels({ method: request.method, route, status_code: reply.statusCode })
      series.set(key, child)
    }
    child.observe(reply.elapsedTime / 1000)
    done()
  })
  app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
    reply.type(registry.contentType)
    return registry.metrics()
  })
  return registry
}
