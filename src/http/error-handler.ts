import type { Socket } from 'node:net'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import {
  FeedGone, HistoryCursorGone, IdempotencyKeyReused, PhotoLimitReached, PhotoNotFound, PlantNotFound, QueryTooSlow, SkuTaken, StorageUnavailable, TrashedNotFound, VersionMismatch, VersionNotKept
} from '../catalogue/errors.js'
import { toRecord } from '../catalogue/plant.js'
import { etagOf, ifMatchMistake } from './resources/etag.js'
import { messageOf, type AjvError } from './problems/messages.js'
import { DuplicateMember } from './input/json-body.js'
import { HttpProblem, problemBody, problemType, type FieldError, type ProblemCode } from './problems/problem.js'
import { noteProblem } from './logging/request-logger.js'
import { routeNotFound } from './problems/unserved.js'
import { answerAndClose } from './connections/one-request-per-connection.js'
import { stockProblem } from './problems/stock-problems.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Status for invalid input on this route (the seed's POST says 405; everything else 400). */
    invalidStatus?: number
    /** The methods the route's path serves, for the Allow header of a 405. */
    allow?: string
    /** The body names the resource by `id`: a bad id is "Invalid ID supplied", checked before other fields. */
    idInBody?: boolean
    /**
     * What a body that is not a plant takes, said of any other member (`a revert takes only version`):
     * the plant's read-only hints (photos, createdAt) would send its sender the wrong way.
     */
    bodyTakes?: string
  }
}

/** One place turns every error into the contract's body: 4xx detail shown, 5xx detail logged only. */
export function registerErrorHandler (app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const problem = toProblem(error, request)
    if (error instanceof VersionMismatch) return sendStale(request, reply, problem)
    return sendProblem(reply, problem, problem.status >= 500 ? causeOf(error) : undefined)
  })

  app.setNotFoundHandler((request, reply) => sendProblem(reply, routeNotFound(request)))
}

/**
 * A 412 hands back the plant as it is now and its ETag: the client that lost a race merges and
 * retries without reading the plant first. Read after the refused write, so the record and its ETag
 * are one version; if that read fails (or the plant is gone) the 412 goes without them.
 */
async function sendStale (request: FastifyRequest, reply: FastifyReply, problem: HttpProblem): Promise<FastifyReply> {
  const id = plantIdOf(request)
  const plant = id === undefined ? undefined : await request.server.store.get(id).catch(() => undefined)
  const mistake = ifMatchMistake(request.headers['if-match'])
  if (plant === undefined) return sendProblem(reply, mistake === undefined ? problem : new HttpProblem(412, problem.code, mistake))
  const etag = etagOf(plant)
  const detail = mistake === undefined ? `${problem.message}, ${etag}` : `${mistake}; the plant's current ETag is ${etag}`
  const stale = new HttpProblem(412, problem.code, detail, undefined, { etag })
  stale.current = toRecord(plant)
  return sendProblem(reply, stale)
}

/** The plant a conditional write names: the path's id (PATCH, photos), else the body's (PUT). */
function plantIdOf (request: FastifyRequest): number | undefined {
  const raw = (request.params as { id?: unknown } | undefined)?.id ?? (request.body as { id?: unknown } | undefined)?.id
  const id = Number(raw)
  return Number.isSafeInteger(id) && id > 0 ? id : undefined
}

/**
 * The error a 5xx is logged with (by the access log, in its one line): the storage's own error
 * rather than its wrapper; none for a 503 the service chose (load shedding, shutting down), which
 * has no stack worth reading.
 */
function causeOf (error: FastifyError): unknown {
  if (error instanceof StorageUnavailable) return error.cause ?? error
  if (error instanceof HttpProblem) return error.cause
  return error
}

// Headers that describe a representation: left over from a file whose stream failed, they would lie about the problem body.
const REPRESENTATION_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-range', 'etag', 'last-modified', 'accept-ranges']

/** Sends the problem, and tells the access log its type, detail and (for a 5xx) `cause`. */
export function sendProblem (reply: FastifyReply, problem: HttpProblem, cause?: unknown): FastifyReply {
  const status = problem.status
  const message = status >= 500 && problem.code === 'internal' ? undefined : problem.message
  noteProblem(reply.request, { type: problemType(problem.code), detail: problem.message, err: cause, limit: problem.limit })
  // A stream reply copies its headers onto node's response before the stream opens; if the open fails
  // (EMFILE), a text/css content type there would make Fastify refuse to serialise this body.
  if (!reply.raw.headersSent) for (const name of REPRESENTATION_HEADERS) reply.raw.removeHeader(name)
  reply.removeHeader('etag').removeHeader('last-modified').removeHeader('accept-ranges').removeHeader('content-encoding')
  reply.code(status).headers(problem.headers).header('cache-control', 'no-store')
  if (status === 405 && !problem.headers.allow) reply.header('allow', reply.request.routeOptions.config.allow ?? '')
  const body = problemBody(status, problem.code, reply.request.id, message, problem.errors)
  if (problem.current !== undefined) body.current = problem.current
  if (problem.holder !== undefined) body.holder = problem.holder
  if (problem.available !== undefined) body.available = problem.available
  if (problem.onHand !== undefined) body.onHand = problem.onHand
  if (problem.location !== undefined) body.location = problem.location
  if (problem.elsewhere !== undefined) body.elsewhere = problem.elsewhere
  if (problem.lines !== undefined) body.lines = problem.lines
  if (problem.state !== undefined) body.state = problem.state
  if (problem.scope !== undefined) body.scope = problem.scope
  return reply.send(body)
}

function toProblem (error: FastifyError, request: FastifyRequest): HttpProblem {
  if (error instanceof HttpProblem) return error
  const config = request.routeOptions.config ?? {}
  const invalidStatus = config.invalidStatus ?? 400
  if (error.validation) return validationProblem(error.validation as AjvError[], error.validationContext, invalidStatus, config.idInBody === true, config.bodyTakes)
  if (error instanceof PlantNotFound) return new HttpProblem(404, 'not-found')
  const stock = stockProblem(error)
  if (stock !== undefined) return stock
  if (error instanceof TrashedNotFound) return new HttpProblem(404, 'not-found', 'No plant with this id in the trash')
  if (error instanceof VersionMismatch) return new HttpProblem(412, 'precondition-failed', 'If-Match does not match the current ETag of the plant')
  if (error instanceof VersionNotKept) {
    return new HttpProblem(404, 'version-not-kept', 'The plant\'s history no longer keeps that version (older than HISTORY_RETENTION_DAYS, or from before history was kept): GET its history for the versions kept')
  }
  if (error instanceof SkuTaken) {
    const taken = new HttpProblem(409, 'sku-taken', `sku ${error.sku} is taken by plant ${error.holder} (SKUs are unique ignoring case)`,
      [{ path: '/sku', message: `is taken by plant ${error.holder}` }])
    taken.holder = error.holder
    return taken
  }
  if (error instanceof IdempotencyKeyReused) {
    const hours = Math.round((error.keptUntil - error.usedAt) / 3_600_000)
    return new HttpProblem(422, 'idempotency-key-reused',
      `This Idempotency-Key was used for another request (another method or path, or the same one with a different body) at ${new Date(error.usedAt).toISOString()}, and is kept until ` +
      `${new Date(error.keptUntil).toISOString()} (${hours} hours from that use): send a new request with a new key`)
  }
  if (error instanceof PhotoNotFound) return new HttpProblem(404, 'photo-not-found', 'The plant has no photo with that id')
  if (error instanceof PhotoLimitReached) return new HttpProblem(409, 'too-many-photos', 'The plant already has 12 photos; delete one first')
  if (error instanceof FeedGone) return new HttpProblem(410, 'gone', 'Changes after that sequence are no longer kept; reload the list and follow the feed from its head')
  if (error instanceof HistoryCursorGone) {
    return new HttpProblem(410, 'gone', 'This cursor was handed out before the catalogue was restored from a backup; read the history again from its first page (no cursor)')
  }
  if (error instanceof QueryTooSlow) return new HttpProblem(503, 'query-too-slow', tooSlowDetail(error, request), undefined, { 'retry-after': '1' })
  if (error instanceof StorageUnavailable) return new HttpProblem(503, 'storage-unavailable', 'Storage is unavailable; retry shortly', undefined, { 'retry-after': '1' })
  if (OUT_OF_DESCRIPTORS.has(error.code ?? '')) {
    return new HttpProblem(503, 'storage-unavailable', 'The service has run out of file descriptors; retry shortly', undefined, { 'retry-after': '1' })
  }
  if (error instanceof DuplicateMember) return new HttpProblem(invalidStatus, 'invalid-input', error.message, [{ path: error.path, message: 'is given more than once' }])
  const code = error.code ?? ''
  if (code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    const limit = request.routeOptions.bodyLimit ?? 64 * 1024
    return new HttpProblem(413, 'payload-too-large', `The request body is larger than ${limit >= 1048576 ? `${limit / 1048576} MiB` : `${limit / 1024} KiB`}`)
  }
  // A route that documents 415 answers it (a photo upload: the contract's 415 for a picture's type);
  // every JSON body keeps the contract's invalid input for a wrong or missing Content-Type.
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' && request.routeOptions.schema?.response !== undefined && 415 in (request.routeOptions.schema.response as object)) {
    return new HttpProblem(415, 'unsupported-media-type', bodyMessage(code, error.message, mergePatch(request)))
  }
  if (code.startsWith('FST_ERR_CTP_') || (error instanceof SyntaxError && error.statusCode === 400)) {
    return new HttpProblem(invalidStatus, 'invalid-input', bodyMessage(code, error.message, mergePatch(request)))
  }
  const status = error.statusCode ?? 500
  if (status >= 400 && status < 500) return new HttpProblem(status, status === 429 ? 'too-many-requests' : 'invalid-input', error.message)
  if (status === 503) return new HttpProblem(503, 'shutting-down', error.message, undefined, { 'retry-after': '1' })
  return new HttpProblem(500, 'internal')
}

const OUT_OF_DESCRIPTORS = new Set(['EMFILE', 'ENFILE'])

/**
 * Where a query's time went, and what would help: the limit counts only its running, so a long wait
 * for a reader (every one busy) is said apart; the advice to narrow names only filters the request
 * has (a keyed client with neither tag nor q was told to use a rarer tag and a longer q).
 */
function tooSlowDetail (error: QueryTooSlow, request: FastifyRequest): string {
  const query = request.query as { q?: unknown, tag?: unknown } | undefined
  const narrow = query?.q !== undefined || query?.tag !== undefined ? 'a rarer tag, a longer q' : 'a filter, a smaller limit'
  if (error.waitedMs === undefined) return `${error.message}; narrow it (${narrow}) or retry`
  const ran = `${error.message} while running, after waiting ${error.waitedMs} ms for a reader thread (the limit does not count the wait)`
  // A host so busy its reads queue runs each of them slower too: a retry may well do.
  return error.waitedMs >= 1000
    ? `${ran}: every reader was busy (SQLITE_READERS) and the host is loaded; retry shortly, or narrow it (${narrow})`
    : `${ran}: the query itself is slow; narrow it (${narrow}) or retry`
}

/**
 * Requests Fastify refuses before any route runs, which it would otherwise answer with its own body:
 * a malformed percent-encoding in the path, a path parameter over maxParamLength.
 */
export function frameworkErrors (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  // No onRequest hook ran: the headers every response carries are set here.
  reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff')
  if (error.code === 'FST_ERR_BAD_URL') {
    sendProblem(reply, new HttpProblem(400, 'invalid-input', 'The path holds a malformed percent-encoding'))
  } else if (error.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    sendProblem(reply, new HttpProblem(414, 'invalid-input', 'A path segment is too long'))
  } else {
    reply.log.error({ err: error }, 'request failed before routing')
    sendProblem(reply, new HttpProblem(500, 'internal'))
  }
}

/** The route takes a JSON merge patch (a plant's PATCH; a webhook's takes plain JSON, and is told so). */
const mergePatch = (request: FastifyRequest): boolean =>
  ((request.routeOptions.schema as { consumes?: string[] } | undefined)?.consumes ?? []).includes('application/merge-patch+json')

function bodyMessage (code: string, message: string, patch: boolean): string {
  if (code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return `The body must be sent as Content-Type: ${patch ? 'application/merge-patch+json (or application/json)' : 'application/json'}`
  }
  if (code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return 'The body must be a JSON object, not empty'
  if (code === 'FST_ERR_CTP_INVALID_UTF8' || code === 'FST_ERR_CTP_TOO_DEEP') return message
  if (code === 'FST_ERR_CTP_INVALID_JSON_BODY') return 'The body is not valid JSON, or holds a forbidden __proto__ or constructor.prototype member'
  return `The body could not be read: ${message}`
}

/**
 * A refusal names at most this many errors: a small body of many wrong tags once made an answer
 * and a log line many times the request's size. The first ones say what to fix.
 */
export const MAX_FIELD_ERRORS = 20

function validationProblem (errors: AjvError[], context: string | undefined, invalidStatus: number, idInBody: boolean, bodyTakes?: string): HttpProblem {
  const all = fieldErrors(errors, context === 'body' ? bodyTakes : undefined)
  const fields = all.slice(0, MAX_FIELD_ERRORS)
  // A key's name is one its admin chose, as in the body that created it: a malformed one is input, not an id.
  if (context === 'params' && fields[0].path !== '/name') return new HttpProblem(400, 'invalid-id', `${fields[0].path} ${fields[0].message}`, fields)
  if (context === 'params') return new HttpProblem(400, 'invalid-input', `${fields[0].path} ${fields[0].message}`, fields)
  const where = context === 'body' ? '' : `${context} `
  const more = all.length > fields.length ? `; and ${all.length - fields.length} more errors like these` : ''
  const detail = fields.map((f) => `${where}${f.path || '(body)'} ${f.message}`).join('; ') + more
  if (context === 'body' && idInBody) {
    const notAnObject = all.some((f) => f.path === '')
    const idErrors = all.filter((f) => f.path === '/id')
    // PUT checks the id before the other fields: a bad id is all the client hears about.
    if (!notAnObject && idErrors.length > 0) {
      return new HttpProblem(400, 'invalid-id', idErrors.map((f) => `/id ${f.message}`).join('; '), idErrors)
    }
  }
  // The contract answers a read-only member with 400 on every write, POST's 405 for invalid input included.
  const status = context === 'body' && all.some((f) => READ_ONLY_MESSAGES.includes(f.message)) ? 400 : invalidStatus
  return new HttpProblem(status, 'invalid-input', detail, fields)
}

/** The record's times, which the service sets: a client that sends a record back is told so. */
const READ_ONLY_TIMES = ['createdAt', 'updatedAt']
const READ_ONLY_TIME = 'is read-only: the service sets createdAt and updatedAt'
/** The record's version: a client that sends a record back to write over that version means If-Match. */
const READ_ONLY_VERSION = 'is read-only: the service sets the version; to write only over this version, send "<id>.<version>" as If-Match (a batch operation\'s ifMatch)'
/** The stock's totals, which only movements change. */
const READ_ONLY_STOCK = 'is read-only: the stock changes by movements (POST /v3/plant/{id}/stock/movements); lowStockAt is the field a plant body may set'
const READ_ONLY_MESSAGES = [READ_ONLY_TIME, READ_ONLY_VERSION, READ_ONLY_STOCK]
/** Where a body holds a plant's members: the body itself, or a batch operation's plant or patch. */
const PLANT_AT = /^(\/operations\/\d+\/(plant|patch))?$/

/**
 * The errors as the contract names them, one a value where one says it all: the allowed values
 * when there is a list of them, else the wrong type, else every rule broken.
 */
export function fieldErrors (errors: AjvError[], bodyTakes?: string): FieldError[] {
  errors = nearestBranches(errors)
  const at = (keyword: string) => new Set(errors.filter((e) => e.keyword === keyword).map((e) => e.instancePath))
  const listed = at('enum')
  const mistyped = at('type')
  return errors.filter((e) => listed.has(e.instancePath)
    ? e.keyword === 'enum'
    : !mistyped.has(e.instancePath) || e.keyword === 'type').map((e) => fieldError(e, bodyTakes))
}

/**
 * An object that matches no branch of a union (a movement is a delta or a count) hears the errors
 * of the branch it came nearest, the one with the fewest: "/delta must be at most 1000000000", not
 * that and every other branch's complaints and "must match a schema in anyOf". A scalar's union (a
 * value or null) keeps every branch's type, which together say what it may be.
 */
function nearestBranches (errors: AjvError[]): AjvError[] {
  let kept = errors
  for (const union of errors.filter((e) => (e.keyword === 'anyOf' || e.keyword === 'oneOf') && isObject(e.data))) {
    const prefix = `${union.schemaPath ?? ''}/`
    const branches = new Map<string, AjvError[]>()
    for (const e of kept) {
      if (e === union || !e.schemaPath?.startsWith(prefix) || !e.instancePath.startsWith(union.instancePath)) continue
      const branch = e.schemaPath.slice(prefix.length).split('/')[0]
      branches.set(branch, [...branches.get(branch) ?? [], e])
    }
    if (branches.size === 0) continue
    const nearest = [...branches.values()].reduce((a, b) => (b.length < a.length ? b : a))
    kept = kept.filter((e) => e !== union && (!e.schemaPath?.startsWith(prefix) || !e.instancePath.startsWith(union.instancePath) || nearest.includes(e)))
  }
  return kept
}

const isObject = (value: unknown): boolean => typeof value === 'object' && value !== null && !Array.isArray(value)

/** One validation error as the contract names it: a JSON pointer and a message (`bodyTakes`: see FastifyContextConfig). */
export function fieldError (e: AjvError, bodyTakes?: string): FieldError {
  if (e.keyword === 'required') return { path: `${e.instancePath}/${String(e.params.missingProperty)}`, message: 'is required' }
  if (e.keyword === 'additionalProperties' && bodyTakes !== undefined && e.instancePath === '') {
    return { path: `/${escapePointer(String(e.params.additionalProperty))}`, message: `is not a known field (${bodyTakes})` }
  }
  if (e.keyword === 'additionalProperties') {
    const field = String(e.params.additionalProperty)
    // Every record carries photos, so a client that reads, changes and sends back a plant meets this one.
    const message = field === 'photos' && e.instancePath === ''
      ? 'is read-only: send the plant without photos, createdAt, updatedAt and version; add a photo with POST /v3/plant/{id}/photos, ' +
        'remove one with DELETE /v3/plant/{id}/photos/{photoId}, reorder them with PUT /v3/plant/{id}/photos/order'
      : !PLANT_AT.test(e.instancePath) ? 'is not a known field' : READ_ONLY_TIMES.includes(field) ? READ_ONLY_TIME : field === 'version' ? READ_ONLY_VERSION : field === 'stock' ? READ_ONLY_STOCK : 'is not a known field'
    return { path: `${e.instancePath}/${escapePointer(field)}`, message }
  }
  return { path: e.instancePath, message: messageOf(e) }
}

/**
 * Requests the HTTP parser refuses before any route sees them (a broken request line, headers too
 * large, a header timeout) still get the contract's body, then the connection is closed.
 */
export function clientErrorHandler (error: Error & { code?: string }, socket: Socket): void {
  if (!socket.writable) {
    socket.destroy()
    return
  }
  const [status, code, detail]: [number, ProblemCode, string] = error.code === 'HPE_HEADER_OVERFLOW'
    ? [431, 'headers-too-large', 'The request headers are too large']
    : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request-timeout', 'The request took too long to arrive']
      : [400, 'invalid-input', 'The request is not valid HTTP']
  answerAndClose(socket, status, code, detail)
}

const escapePointer = (s: string): string => s.replace(/~/g, '~0').replace(/\//g, '~1')
