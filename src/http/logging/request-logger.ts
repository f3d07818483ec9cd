import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, FastifyServerOptions } from 'fastify'
import type { RefusalLog } from './refusal-log.js'

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'
type ChildOptions = Parameters<FastifyBaseLogger['child']>[1]
/** pino's logger, which Fastify hands to the factory when logging is on. */
type Parent = FastifyBaseLogger & { isLevelEnabled (level: string): boolean }

/**
 * Fastify gives every request a child logger carrying its request id. pino builds a child by
 * serialising its bindings and rebuilding its log methods, about a microsecond per request, yet
 * at the default level most requests log nothing. This child is made on the first line that will
 * actually be written.
 */
class RequestLogger {
  private made: FastifyBaseLogger | undefined
  constructor (private readonly parent: Parent, private readonly bindings: Record<string, unknown>, private readonly options: ChildOptions) {
    // A route with its own log level gets its child at once: the parent's level no longer decides.
    if (options?.level !== undefined) this.made = parent.child(bindings, options)
  }

  private get real (): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options)
    return this.made
  }

  private write (level: Level, args: unknown[]): void {
    if (this.made === undefined && !this.parent.isLevelEnabled(level)) return
    ;(this.real[level] as (...a: unknown[]) => void)(...args)
  }

  get level (): string { return this.made?.level ?? this.parent.level }
  set level (level: string) { this.real.level = level }
  fatal (...args: unknown[]): void { this.write('fatal', args) }
  error (...args: unknown[]): void { this.write('error', args) }
  warn (...args: unknown[]): void { this.write('warn', args) }
  info (...args: unknown[]): void { this.write('info', args) }
  debug (...args: unknown[]): void { this.write('debug', args) }
  trace (...args: unknown[]): void { this.write('trace', args) }
  silent (): void {}
  child (bindings: Record<string, unknown>, options?: ChildOptions): FastifyBaseLogger { return this.real.child(bindings, options) }
  isLevelEnabled (level: string): boolean { return (this.made as Parent | undefined ?? this.parent).isLevelEnabled(level) }
}

export const lazyRequestLoggers: NonNullable<FastifyServerOptions['childLoggerFactory']> = (logger, bindings, options) =>
  new RequestLogger(logger as Parent, bindings, options) as unknown as FastifyBaseLogger

/** What the error handler knows of an answer that the access log cannot see in the reply. */
export interface ProblemNote {
  /** The problem body's `type`. */
  type: string
  detail: string
  /** For a 5xx: the error behind it (its stack), when there is one. */
  err?: unknown
  /** Which limit refused (HttpProblem's `limit`). */
  limit?: string
}

/**
 * 503s the service chose to shed load (bytes queued, a query over its time, streams or pictures
 * all taken, a shutdown): a flood makes as many of them as a flood of 4xx, and none is a fault
 * with a stack worth reading, so they are refusals too, at `warn`.
 */
const SHED_LOAD = new Set(['service-busy', 'send-queue-full', 'query-too-slow', 'images-busy', 'shutting-down'])
// Only answers that are problems get an entry: a success costs nothing here.
const notes = new WeakMap<FastifyRequest, ProblemNote>()

/** Called as a problem is sent, so the request's one access-log line can say what it was. */
export function noteProblem (request: FastifyRequest, note: ProblemNote): void {
  notes.set(request, note)
}

/** The name of the key the request carried (never its secret); absent when none was checked. */
const keyOf = (request: FastifyRequest): string | undefined => request.writer === '' ? undefined : request.writer

/**
 * The access log an operator reads at `info`: one line per 4xx or 5xx answer, with the request id
 * (from the request's logger), method, route, URL (key-like query values redacted by the `url`
 * serializer), status, the client address (request.ip, which TRUST_PROXY decides), and the problem's
 * type and detail. A 5xx is at `error` with its cause, one line each, always: each is a fault to
 * read; but a 503 that sheds load is a refusal at `warn`. A 4xx is a refusal, at `info`, through
 * the refusal log: a client can repeat any 4xx as fast as it likes (an unknown query parameter as
 * cheaply as a missing key), so every refusal is summarised when its reason (below) recurs within
 * the interval.
 * Successes are one debug line each. Readiness probes are left out: health logs readiness changes
 * once, not every probe of a load balancer.
 */
export function registerAccessLog (app: FastifyInstance, refusals: RefusalLog): void {
  app.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode
    if (status < 400) {
      request.log.debug({ method: request.method, url: request.url, status, client: request.ip, key: keyOf(request), ms: Math.round(reply.elapsedTime) }, 'request completed')
    } else if (request.url !== '/readyz') {
      const route = request.is404 ? 'unmatched' : request.routeOptions.url
      const { type, detail, err, limit } = notes.get(request) ?? {}
      const line = { method: request.method, route, url: request.url, status, type, detail, client: request.ip, key: keyOf(request), ms: Math.round(reply.elapsedTime) }
      const shed = status >= 500 && SHED_LOAD.has(type?.slice(type.lastIndexOf('/') + 1) ?? '')
      if (status >= 500 && !shed) request.log.error({ ...line, err }, 'request answered with an error')
      else refusals.refused(reasonOf(status, type, line.key, limit), line, 'request refused', { log: request.log, id: request.id }, shed ? 'warn' : 'info')
    }
    done()
  })
}

/**
 * A refusal's reason: its status and problem code (`401 unauthorized`), and the key's name when the
 * request carried a known one (`403 insufficient-scope, key till-3`): the access log names who was
 * refused, so each key's refusals are summarised apart; and which limit refused, where a code has
 * several (`429 too-many-requests (read budget)`). Never anything a client can choose freely.
 */
function reasonOf (status: number, type: string | undefined, key: string | undefined, limit: string | undefined): string {
  const code = type === undefined ? String(status) : `${status} ${type.slice(type.lastIndexOf('/') + 1)}`
  const reason = limit === undefined ? code : `${code} (${limit})`
  return key === undefined ? reason : `${reason}, key ${key}`
}
