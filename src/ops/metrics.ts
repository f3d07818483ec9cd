import cluster from 'node:cluster'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Counter, Gauge, Registry, collectDefaultMetrics, type Metric } from 'prom-client'
import { writeSecurity } from '../http/auth/auth.js'
import { COMMIT_SIZE_BUCKETS, commitSizes } from '../store/commit-sizes.js'
import { QueryTooSlow, StorageUnavailable } from '../catalogue/errors.js'
import { HttpProblem } from '../http/problems/problem.js'
import { clusterMetricsReader, exposition } from './cluster-metrics.js'
import { parserRefusals } from './malformed-requests.js'

const NAME = 'http_request_duration_seconds'
const HELP = 'Time to answer HTTP requests, by method, route and status'
const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

type Labels = { method: string, route: string, status_code: number }

/**
 * One label set's latency histogram, kept as plain numbers. prom-client's own Histogram validates
 * and hashes the label set on every observe, a few percent of a read's CPU; this is read only
 * when /metrics is scraped.
 */
class Series {
  private readonly buckets = new Float64Array(BUCKETS.length)
  private sum = 0
  private count = 0
  constructor (private readonly labels: Labels) {}

  observe (seconds: number): void {
    // A plain loop: a findIndex callback would allocate a closure on every request.
    let i = 0
    while (i < BUCKETS.length && seconds > BUCKETS[i]) i++
    if (i < BUCKETS.length) this.buckets[i]++
    this.sum += seconds
    this.count++
  }

  /** The series in prom-client's form: cumulative buckets, +Inf, sum, count. */
  values (): Array<{ metricName: string, labels: Record<string, string | number>, value: number }> {
    let cumulative = 0
    const buckets = BUCKETS.map((le, i) => {
      cumulative += this.buckets[i]
      return { metricName: `${NAME}_bucket`, labels: { le, ...this.labels }, value: cumulative }
    })
    return [
      ...buckets,
      { metricName: `${NAME}_bucket`, labels: { le: '+Inf', ...this.labels }, value: this.count },
      { metricName: `${NAME}_sum`, labels: this.labels, value: this.sum },
      { metricName: `${NAME}_count`, labels: this.labels, value: this.count }
    ]
  }
}

/** Prometheus metrics: request latency by route and status (its _count is the request count) and process figures. */
export function registerMetrics (app: FastifyInstance): Registry {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const all: Series[] = []
  const seriesOf = (cache: Map<string, Series>, method: string, route: string, status: number): Series => {
    const key = `${method} ${status}`
    let series = cache.get(key)
    if (series === undefined) {
      series = new Series({ method, route, status_code: status })
      cache.set(key, series)
      all.push(series)
    }
    return series
  }
  const observer = (route: string) => {
    const cache = new Map<string, Series>()
    return (request: FastifyRequest, reply: FastifyReply, done: () => void): void => {
      seriesOf(cache, request.method, route, reply.statusCode).observe(reply.elapsedTime / 1000)
      done()
    }
  }
  // Each route observes with its own label: no per-request lookup of the route (request.routeOptions builds an object).
  app.addHook('onRoute', (route) => {
    const hooks = route.onResponse === undefined ? [] : Array.isArray(route.onResponse) ? route.onResponse : [route.onResponse]
    route.onResponse = [...hooks, observer(route.url)]
  })
  const unmatched = observer('unmatched')
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) unmatched(request, reply, done)
    else done()
  })
  registry.registerMetric({
    name: NAME,
    get: async () => ({ name: NAME, help: HELP, type: 'histogram', aggregator: 'sum', values: all.flatMap((s) => s.values()) })
  } as unknown as Metric)
  registerStorageMetrics(app, registry)
  registry.registerMetric({
    name: 'http_parser_refusals_total',
    get: async () => ({
      name: 'http_parser_refusals_total',
      help: 'Requests the HTTP parser refused (400, 408, 431) before any route, by error code',
      type: 'counter',
      aggregator: 'sum',
      values: [...parserRefusals].map(([code, value]) => ({ labels: { code }, value }))
    })
  } as unknown as Metric)
  // In a cluster the answering worker asks the primary for every worker's figures, summed.
  const read = cluster.isWorker ? clusterMetricsReader(registry, app.log) : async () => exposition(await registry.metrics())
  // Behind the write keys when keys are configured (the write-auth hook reads `security`).
  app.get('/metrics', { schema: { hide: true, security: writeSecurity } }, async (_request, reply) => {
    reply.type(registry.contentType)
    return read()
  })
  return registry
}

/** Storage failures answered 503, by engine and cause; reads refused for their cost; writes per group commit, by engine. */
function registerStorageMetrics (app: FastifyInstance, registry: Registry): void {
  const errors = new Counter({
    name: 'storage_errors_total',
    help: 'Requests that found the storage unavailable (answered 503), by engine and cause (SQLite code, SQLSTATE, errno or timeout)',
    labelNames: ['engine', 'cause'],
    registers: [registry]
  })
  // Reads refused for what they cost: a client over its budget (429), a query past its time limit (503).
  const overBudget = new Counter({
    name: 'read_budget_refusals_total',
    help: 'Lists, counts, searches, feed, history and trash pages refused 429 because the client had READ_BUDGET of them running, by client (address, or key: a budget per API key)',
    labelNames: ['client'],
    registers: [registry]
  })
  const tooSlow = new Counter({
    name: 'query_too_slow_total',
    help: 'Reads answered 503 query-too-slow (past the query time limit, or a search that rejected too many names), by engine',
    labelNames: ['engine'],
    registers: [registry]
  })
  app.addHook('onError', (request, _reply, error, done) => {
    if (error instanceof StorageUnavailable) {
      const code = (error.cause as { code?: unknown } | undefined)?.code
      errors.inc({ engine: app.store.engine, cause: typeof code === 'string' ? code : /within/.test(error.message) ? 'timeout' : 'unavailable' })
    } else if (error instanceof QueryTooSlow) {
      tooSlow.inc({ engine: app.store.engine })
    } else if (error instanceof HttpProblem && error.limit === 'read budget') {
      overBudget.inc({ client: request.writer === '' ? 'address' : 'key' })
    }
    done()
  })
  const name = 'storage_commit_writes'
  registry.registerMetric({
    name,
    get: async () => ({
      name,
      help: 'Writes carried by each group commit (one transaction, one fsync), by engine',
      type: 'histogram',
      aggregator: 'sum',
      values: Object.entries(commitSizes).flatMap(([engine, s]) => {
        let cumulative = 0
        return [
          ...COMMIT_SIZE_BUCKETS.map((le, i) => ({ metricName: `${name}_bucket`, labels: { le, engine }, value: (cumulative += s.buckets[i]) })),
          { metricName: `${name}_bucket`, labels: { le: '+Inf', engine }, value: s.count },
          { metricName: `${name}_sum`, labels: { engine }, value: s.sum },
          { metricName: `${name}_count`, labels: { engine }, value: s.count }
        ]
      })
    })
  } as unknown as Metric)
}

/** What the change feed reports: its open event streams and how far behind the slowest one is. */
export interface FeedStats { readonly streamsOpen: number, lag (): number }

/** The feed's gauges, read when /metrics is scraped (nothing is counted on the streams' path). */
export function registerFeedMetrics (registry: Registry, feed: FeedStats): void {
  // eslint-disable-next-line no-new
  new Gauge({
    name: 'feed_event_streams_open',
    help: 'Event streams (GET /v3/plant/events) open on this process',
    registers: [registry],
    collect () { this.set(feed.streamsOpen) }
  })
  // eslint-disable-next-line no-new
  new Gauge({
    name: 'feed_lag_changes',
    help: 'Changes between the head of the feed and the open event stream furthest behind (0 with none open)',
    registers: [registry],
    aggregator: 'max',
    collect () { this.set(feed.lag()) }
  })
}

/** What the bytes queued to clients report (src/http/connections/queued-bytes.ts). */
export interface QueuedStats { readonly queued: number, readonly bound: number, readonly connectionsCharged: number }

/** The bytes queued to clients in large answers and their bound, read when /metrics is scraped. */
export function registerQueuedMetrics (registry: Registry, account: QueuedStats): void {
  // eslint-disable-next-line no-new
  new Gauge({
    name: 'queued_bytes',
    help: 'Bytes queued to clients in large answers (photo files and pages over 128 KiB, event streams): what the service holds for them and what the kernel holds unacknowledged',
    registers: [registry],
    collect () { this.set(account.queued) }
  })
  // eslint-disable-next-line no-new
  new Gauge({
    name: 'queued_bytes_limit',
    help: 'MAX_QUEUED_BYTES (each worker\'s share, summed): past it a new large answer is refused with 503 send-queue-full',
    registers: [registry],
    collect () { this.set(account.bound) }
  })
  // eslint-disable-next-line no-new
  new Gauge({
    name: 'queued_bytes_connections',
    help: 'Open connections that have carried a large answer, each charged in queued_bytes what is queued on it until it closes',
    registers: [registry],
    collect () { this.set(account.connectionsCharged) }
  })
}
