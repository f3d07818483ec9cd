import cluster from 'node:cluster'
import { randomUUID } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import cors from '@fastify/cors'
import rateLimit from '@fastify/rate-limit'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import pino from 'pino'
import { workerCount, type Config } from './config.js'
import { FeedHub } from './feed/hub.js'
import { changeRoutes } from './feed/routes.js'
import { StreamLimits } from './http/limits/stream-limits.js'
import { QueuedBytes } from './http/connections/queued-bytes.js'
import { envKeyNames, loadEnvKeys, registerAuth } from './http/auth/auth.js'
import { registerReadBudget } from './http/limits/read-budget.js'
import { registerQueryEncodingCheck } from './http/input/query-encoding.js'
import { registerComponents } from './http/schemas/components.js'
import { apiIndexRoutes } from './http/openapi/api-index.js'
import { problemTypeRoutes } from './http/openapi/problem-pages.js'
import { corsOptions } from './http/auth/cors.js'
import { connectionTurns } from './http/connections/one-request-per-connection.js'
import { capConnectionsPerClient } from './http/connections/client-connections.js'
import { LazySchemas } from './http/schemas/lazy-schemas.js'
import { clientErrorHandler, frameworkErrors, registerErrorHandler } from './http/error-handler.js'
import { registerJsonBody } from './http/input/json-body.js'
import { registerOpenApi } from './http/openapi/openapi-document.js'
import { refuseUnexpectedBodies } from './http/input/no-body.js'
import { answerUnknownPathsEarly } from './http/problems/unserved.js'
import { redactedRequest, redactUrl } from './http/logging/redact-url.js'
import { HttpProblem, problemResponses } from './http/problems/problem.js'
import { RefusalLog } from './http/logging/refusal-log.js'
import { lazyRequestLoggers, registerAccessLog } from './http/logging/request-logger.js'
import { registerValidators } from './http/input/validation.js'
import { stockRoutes } from './stock/routes.js'
import { reservationRoutes } from './stock/reservation-routes.js'
import { ReservationExpirer } from './stock/expirer.js'
import { KeyCache } from './keys/key-cache.js'
import { keyRoutes } from './keys/routes.js'
import { docsPage } from './ops/docs-page.js'
import { healthRoutes, type Readiness } from './ops/health.js'
import { registerFeedMetrics, registerMetrics, registerQueuedMetrics } from './ops/metrics.js'
import { observedClientErrors } from './ops/malformed-requests.js'
import { versionRoutes } from './ops/version.js'
import { PhotoMetrics } from './photos/metrics.js'
import { photoOrderRoute } from './photos/order-route.js'
import { photoRoutes } from './photos/routes.js'
import { pageDirectory, pageRoutes } from './page/page-routes.js'
import { batchRoute } from './plants/batch-route.js'
import { countRoute } from './plants/count-route.js'
import { historyRoutes } from './plants/history-routes.js'
import { inventoryRoute } from './plants/inventory-route.js'
import { patchRoute } from './plants/patch-route.js'
import { plantRoutes } from './plants/routes.js'
import { trashRoutes } from './plants/trash-routes.js'
import { openStore } from './store/open/open-store.js'
import { WebhookDeliverer, type DelivererOptions } from './webhooks/deliverer.js'
import { WEBHOOKS_DOCUMENT } from './webhooks/openapi.js'
import { WebhookMetrics } from './webhooks/metrics.js'
import { PACE_WINDOW_MS } from './webhooks/pacer.js'
import { webhookRoutes } from './webhooks/routes.js'
import { privateReach } from './webhooks/target.js'
import type { PlantStore } from './store/plant-store.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: PlantStore
    readiness: Readiness
    /** How many API keys may write (0: writes are anonymous): API_KEYS's, and 1 more when the database holds keys. */
    writeKeyCount: number
    /** Whether the database held keys at start (the 1 more of writeKeyCount; the start-up line says where keys come from). */
    storedKeys: boolean
    /** Which key a secret names, from memory (src/keys/key-cache.ts). */
    keyCache: KeyCache
    /** The change feed every event stream of this process reads from. */
    feedHub: FeedHub
    /** Pushes the change feed to the webhooks this process holds the lease of. */
    webhookDeliverer: WebhookDeliverer
    /** Releases reservations past their expiresAt while this process holds the expirer's lease. */
    reservationExpirer: ReservationExpirer
    /** The routes' validators and serialisers, compiled when first used (server.ts compiles the rest after listening). */
    lazySchemas: LazySchemas
  }
}

export interface AppOptions {
  /** Use this store instead of opening the one the config names (the app then does not close it). */
  store?: PlantStore
  /** Write the log here instead of stdout (tests read it). */
  logStream?: NodeJS.WritableStream
  /** Webhook delivery settings beyond the config's (tests shrink the retry delays and time limit). */
  webhooks?: Omit<DelivererOptions, 'allowPrivate'>
  /** How long a client may take to send its headers and its whole request, and how often that is checked (tests shorten them). */
  timeouts?: Partial<Timeouts>
  /** How long a picture may take to process before the upload is given up with 503 (default 20 s). */
  pictureDeadlineMs?: number
  /** How long a recurring refusal's count is gathered before its summary line (default 1 s; tests shorten it). */
  refusalSummaryMs?: number
}

interface Timeouts { headersMs: number, requestMs: number, checkEveryMs: number }
/**
 * A slowloris client trickling headers is cut off after 10 s, one trickling a body after 30 s
 * (checked every 2 s), without holding others up.
 */
const TIMEOUTS: Timeouts = { headersMs: 10_000, requestMs: 30_000, checkEveryMs: 2_000 }

const hasBody = (headers: IncomingHttpHeaders): boolean =>
  headers['transfer-encoding'] !== undefined || (headers['content-length'] !== undefined && headers['content-length'] !== '0')

/** A worker's share of MAX_QUEUED_BYTES: the bound is the host's, whatever the number of processes serving. */
function queuedBytesShare (config: Config): number {
  if (!cluster.isWorker) return config.maxQueuedBytes
  return Math.floor(config.maxQueuedBytes / workerCount(config))
}

const OPERATIONS_PATHS = new Set(['/healthz', '/readyz', '/metrics'])
const SANE_REQUEST_ID = /^[\w.:@/+=-]{1,128}$/

export function loggerOptions (config: Config, stream?: NodeJS.WritableStream): FastifyServerOptions['logger'] {
  if (config.logLevel === 'silent') return false
  return {
    level: config.logLevel,
    // ISO times and level names: readable by a person and by any log store without a pino decoder.
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    redact: { paths: ['req.headers.authorization', 'req.headers.api_key', 'req.headers["api-key"]'], censor: '[redacted]' },
    // A key sent in the query string (?api_key=) is redacted wherever a URL is logged.
    serializers: { url: redactUrl, req: redactedRequest },
    // Pretty only for a person at a terminal; JSON for everything that collects logs.
    ...(stream ? { stream } : process.stdout.isTTY ? { transport: { target: 'pino-pretty', options: { translateTime: 'SYS:HH:MM:ss.l' } } } : {})
  }
}

// Fastify names a plugin without a display name by looking for it among the exports of every module
// loaded (require.cache) each time it is registered, a cost that grows with the modules a process has
// loaded (a test process builds hundreds of apps): these are named once, as Fastify would name them.
for (const plugin of [docsPage, apiIndexRoutes, problemTypeRoutes, plantRoutes, trashRoutes, historyRoutes, patchRoute, batchRoute, inventoryRoute, stockRoutes, reservationRoutes, countRoute, changeRoutes, photoRoutes, photoOrderRoute, webhookRoutes, keyRoutes, healthRoutes, versionRoutes, pageRoutes]) {
  Object.defineProperty(plugin, Symbol.for('fastify.display-name'), { value: plugin.name })
}

/** Builds the configured service without listening: tests use it through inject, server.ts runs it. */
export async function buildApp (config: Config, options: AppOptions = {}): Promise<FastifyInstance> {
  const lazySchemas = new LazySchemas()
  const timeouts = { ...TIMEOUTS, ...options.timeouts }
  // Made before the app: the server and the parser's refusals are built with it (it asks for app.log only when it writes).
  const refusals = new RefusalLog((): FastifyBaseLogger => app.log, options.refusalSummaryMs)
  const app = Fastify({
    logger: loggerOptions(config, options.logStream),
    bodyLimit: 64 * 1024,
    requestIdHeader: false,
    genReqId: (req) => {
      const given = req.headers['x-request-id']
      return typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID()
    },
    // One debug line per request (below); Fastify's two info lines per request cost throughput.
    logController: new LogController({ disableRequestLogging: true }),
    ...(config.logLevel === 'silent' ? {} : { childLoggerFactory: lazyRequestLoggers }),
    connectionTimeout: 60_000,
    requestTimeout: timeouts.requestMs,
    keepAliveTimeout: 5_000,
    http: { headersTimeout: timeouts.headersMs, connectionsCheckingInterval: timeouts.checkEveryMs },
    return503OnClosing: false,
    trustProxy: config.trustProxy,
    clientErrorHandler: observedClientErrors(clientErrorHandler, refusals),
    // One request at a time per connection, and node's own answers in the contract's shape (see one-request-per-connection.ts).
    serverFactory: (handler, options) => {
      const server = connectionTurns(handler, options)
      capConnectionsPerClient(server, { perClient: config.maxConnectionsPerClient, trustProxy: config.trustProxy }, (client) => {
        refusals.refused('connections per client', { client, limit: config.maxConnectionsPerClient }, 'connection refused: too many open from this client')
      })
      return server
    },
    frameworkErrors,
    exposeHeadRoutes: true,
    schemaController: { compilersFactory: { buildSerializer: lazySchemas.serializers() } }
  }).withTypeProvider<TypeBoxTypeProvider>()
  app.decorate('lazySchemas', lazySchemas)

  const envKeys = loadEnvKeys(config) // before the store opens: a bad key file leaves nothing open
  const store = options.store ?? await openStore({
    ...config,
    onPurgeError: (err) => { app.log.error({ err }, 'the retention purge failed (the feed, keys, trash and history past their retention stay until it works); the next hour tries again') }
  })
  if (!options.store) app.addHook('onClose', async () => { await store.close() })
  app.decorate('store', store)
  app.decorate('readiness', { draining: false, lastRequestAt: 0 })
  const keyCache = new KeyCache(store.keys, envKeyNames(envKeys), { onError: (err) => { app.log.warn({ err }, 'last-used times of API keys not written') } })
  app.addHook('onClose', async () => { await keyCache.close() })
  app.decorate('keyCache', keyCache)
  // An unreachable database at start (PostgreSQL keeps trying) is taken as no stored keys here; requests ask again.
  const storedKeys = await store.keys.anyKeys().catch(() => false)
  app.decorate('writeKeyCount', envKeys.length + (storedKeys ? 1 : 0))
  app.decorate('storedKeys', storedKeys)

  registerValidators(app, lazySchemas)
  registerJsonBody(app)
  registerErrorHandler(app)
  app.addHook('onRequest', (request, reply, done) => {
    app.readiness.lastRequestAt = Date.now()
    reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff')
    done()
  })
  // An answer given before the request's body has all arrived (an unknown path, a refused key)
  // ends the connection: node would wait for the rest of the body, and once the request timeout
  // passed answer the same request a second time (408), which the client never asked for.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (request.raw.complete === false && hasBody(request.raw.headers)) reply.header('connection', 'close')
    done(null, payload)
  })
  if (config.corsOrigins.length > 0) {
    await app.register(cors, corsOptions(config.corsOrigins))
  }
  if (config.rateLimit > 0) {
    await app.register(rateLimit, {
      // One app-wide onRequest hook (below), not the plugin's per-route one: a route's hooks run
      // after the app's, so a refused key (401) and an unknown path (404) went uncounted.
      global: false,
      max: config.rateLimit,
      timeWindow: 60_000,
      enableDraftSpec: true,
      allowList: (request) => OPERATIONS_PATHS.has(request.url),
      errorResponseBuilder: (_request, context) => {
        const refused = new HttpProblem(429, 'too-many-requests', `Rate limit of ${context.max} requests a minute exceeded; retry in ${context.after}`)
        refused.limit = 'rate limit'
        return refused
      }
    })
    // Before the key check and the answer to an unknown path: guessing either counts.
    app.addHook('onRequest', app.rateLimit())
  }
  registerQueryEncodingCheck(app)
  registerAuth(app, { keys: keyCache, readsNeedKey: config.readsNeedKey })
  registerReadBudget(app, config.readBudget)
  registerAccessLog(app, refusals)
  // After the server has closed (Fastify's own onClose runs first), so no refusal is still to come: the last counts are written.
  app.addHook('onClose', async () => { refusals.close() })
  answerUnknownPathsEarly(app)

  registerComponents(app)
  // Unknown query parameters are refused on every API operation, not only on those that take some:
  // `DELETE /v3/plant/1?dryRun=true` must not delete. Probes (/healthz, /readyz) and photo files
  // (an image loader may add `?w=256`) ignore them: a query there changes nothing.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/v3') && route.url !== '/v3/photos/:file' &&
      route.schema?.operationId !== undefined && route.schema.querystring === undefined) {
      route.schema.querystring = Type.Object({}, { additionalProperties: false })
      const responses = route.schema.response as Record<number, unknown> | undefined
      const invalidStatus = (route.config as { invalidStatus?: number } | undefined)?.invalidStatus ?? 400
      if (responses !== undefined && !(invalidStatus in responses)) Object.assign(responses, problemResponses([invalidStatus, 'Unknown query parameter']))
    }
  })
  refuseUnexpectedBodies(app)
  await registerOpenApi(app, WEBHOOKS_DOCUMENT)
  await app.register(docsPage)

  const registry = registerMetrics(app)
  const queued = new QueuedBytes(queuedBytesShare(config), config.socketSendBufferBytes)
  registerQueuedMetrics(registry, queued)
  const routeOptions = { store, queued }
  const hub = new FeedHub(store, app.log)
  registerFeedMetrics(registry, hub)
  app.decorate('feedHub', hub)
  await app.register(apiIndexRoutes, { currency: config.currency })
  await app.register(problemTypeRoutes)
  await app.register(plantRoutes, routeOptions)
  await app.register(trashRoutes, routeOptions)
  await app.register(historyRoutes, routeOptions)
  await app.register(patchRoute, routeOptions)
  await app.register(batchRoute, routeOptions)
  await app.register(inventoryRoute, routeOptions)
  await app.register(stockRoutes, routeOptions)
  await app.register(reservationRoutes, routeOptions)
  const expirer = new ReservationExpirer(store, app.log, { pollMs: config.reservationExpiryPollMs, leaseMs: config.reservationLeaseMs })
  app.decorate('reservationExpirer', expirer)
  app.addHook('onReady', async () => { expirer.start() })
  app.addHook('preClose', async () => { await expirer.close() })
  await app.register(countRoute, routeOptions)
  await app.register(changeRoutes, { ...routeOptions, hub, limits: new StreamLimits('event streams', config.feedMaxStreams, config.feedMaxStreamsPerClient, Math.max(1, Math.floor(config.feedMaxStreams / 2))) })
  await app.register(photoRoutes, { ...routeOptions, metrics: new PhotoMetrics(registry), trustProxy: config.trustProxy, pictureDeadlineMs: options.pictureDeadlineMs })
  await app.register(photoOrderRoute, routeOptions)
  // Time spent in requests, for the webhook pacer: requests queueing on a busy process come before deliveries.
  let requestMs = 0
  app.addHook('onResponse', (_request, reply, done) => {
    requestMs += Math.min(reply.elapsedTime, PACE_WINDOW_MS)
    done()
  })
  const spentInRequests = (): number => { const ms = requestMs; requestMs = 0; return ms }
  const deliverer = new WebhookDeliverer(store, app.log, { leaseMs: config.webhookLeaseMs, pacing: { requestMs: spentInRequests }, ...options.webhooks, allowPrivate: privateReach(config) }, new WebhookMetrics(registry))
  app.decorate('webhookDeliverer', deliverer)
  // Stopped before the store closes; another instance takes over its webhooks at once (leases released).
  app.addHook('onReady', async () => { deliverer.start() })
  app.addHook('preClose', async () => { await deliverer.close() })
  await app.register(webhookRoutes, { store, deliverer, allowPrivate: privateReach(config) })
  await app.register(keyRoutes, { keys: store.keys, cache: keyCache })
  await app.register(healthRoutes, { store, readiness: app.readiness })
  await app.register(versionRoutes, { store, registry })
  await app.register(pageRoutes, { dir: pageDirectory(), secured: app.writeKeyCount > 0 })
  return app
}
