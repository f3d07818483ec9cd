import { Type, type Static } from '@sinclair/typebox'
import type { Plant } from '../../catalogue/plant.js'
import { component, ref } from '../schemas/components.js'

const TITLES = {
  'invalid-input': 'Invalid input',
  'invalid-id': 'Invalid ID supplied',
  'not-found': 'Plant not found',
  'route-not-found': 'Not found',
  'method-not-allowed': 'Method not allowed',
  'precondition-failed': 'Precondition failed',
  'version-not-kept': 'Version not kept',
  'sku-taken': 'SKU taken',
  'insufficient-stock': 'Insufficient stock',
  'stock-changed': 'Stock changed',
  'stock-held': 'Stock held',
  'location-not-found': 'Location not found',
  'location-name-taken': 'Location name taken',
  'location-not-empty': 'Location not empty',
  'reservation-not-found': 'Reservation not found',
  'reservation-gone': 'Reservation gone',
  'idempotency-key-reused': 'Idempotency key reused for another request',
  'payload-too-large': 'Payload too large',
  'headers-too-large': 'Request header fields too large',
  'request-timeout': 'Request timeout',
  unauthorized: 'Unauthorized',
  'insufficient-scope': 'Insufficient scope',
  'key-not-found': 'Key not found',
  'key-name-taken': 'Key name taken',
  'key-from-environment': 'Key from the environment',
  'revoking-own-key': 'Revoking the key in use',
  'too-many-requests': 'Too many requests',
  gone: 'Gone',
  'storage-unavailable': 'Storage unavailable',
  'unsupported-media-type': 'Unsupported media type',
  'photo-not-found': 'Photo not found',
  'webhook-not-found': 'Webhook not found',
  'webhook-url-taken': 'Webhook URL taken',
  'too-many-photos': 'Too many photos',
  'images-busy': 'Too many pictures in progress',
  'service-busy': 'Service busy',
  'send-queue-full': 'Too many bytes queued to clients',
  'query-too-slow': 'Query too slow',
  'shutting-down': 'Service shutting down',
  internal: 'Internal server error'
} as const
export type ProblemCode = keyof typeof TITLES
/** Every code a problem can carry: each has a page at its `type` (problem-types.ts). */
export const PROBLEM_CODES = Object.keys(TITLES) as ProblemCode[]
export const problemTitle = (code: ProblemCode): string => TITLES[code]

/** A place a refused sale or reservation line could take units from instead (the plant's other locations with units available). */
export const PlaceAvailable = component('PlaceAvailable', Type.Object({
  location: Type.String({ description: 'The location: name it as `location` to move or hold the units there.' }),
  available: Type.Integer({ minimum: 1, description: 'What the plant has available there now.' })
}, { description: 'One of the plant\'s other places with units available.' }))
const Elsewhere = Type.Array(ref(PlaceAvailable), {
  description: 'The plant\'s other places with units available, by name (empty: none has any); absent when the plant does not track stock. The detail says the same in words.'
})

// The one error body of the contract (RFC 9457 members plus `errors` and `requestId`).
export const Problem = component('Problem', Type.Object({
  type: Type.String({ description: `A URI reference naming the kind of problem; its last segment is the stable code, one of ${Object.keys(TITLES).join(', ')}. GET it for what the problem means and what to do (get-problem-type).` }),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.Optional(Type.String()),
  errors: Type.Optional(Type.Array(Type.Object({
    path: Type.String({ description: 'JSON pointer to the offending member of the request part.' }),
    message: Type.String()
  }))),
  requestId: Type.String(),
  // By name, not by import: the Plant schema is the plant resource's (plants/schemas.ts), a floor this module does not reach up to.
  current: Type.Optional(Type.Unsafe<Plant>({
    $ref: 'Plant',
    description: '412 only: the plant as it is now, its ETag in the ETag header, so a client can merge and retry without reading it first.'
  })),
  holder: Type.Optional(Type.Integer({ minimum: 1, description: '409 sku-taken only: the id of the plant that has the SKU.' })),
  available: Type.Optional(Type.Integer({ minimum: 0, description: '409 insufficient-stock only: what the location has available.' })),
  onHand: Type.Optional(Type.Integer({ minimum: 0, description: '409 stock-changed only: the location\'s onHand now (a count compares with it).' })),
  location: Type.Optional(Type.String({ description: '409 insufficient-stock and stock-changed: the location moved at.' })),
  elsewhere: Type.Optional({ ...Elsewhere, description: `409 insufficient-stock of a movement only: ${Elsewhere.description}` }),
  lines: Type.Optional(Type.Array(Type.Object({
    path: Type.String({ description: 'The line, as a JSON pointer (`/lines/2`).' }),
    plant: Type.Integer({ minimum: 1 }),
    location: Type.String(),
    quantity: Type.Integer({ minimum: 1 }),
    available: Type.Integer({ minimum: 0, description: 'What the plant has available at the location now (the lines of one plant and location count together).' }),
    elsewhere: Type.Optional(Elsewhere)
  }), { description: '409 insufficient-stock of a reservation only: every line that cannot be held.' })),
  state: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['committed', 'released', 'expired'], description: '410 reservation-gone only: what became of the reservation.' })),
  scope: Type.Optional(Type.Unsafe<string>({ type: 'string', enum: ['read', 'sell', 'write', 'admin'], description: '403 insufficient-scope only: the scope the request needs (also in WWW-Authenticate, as RFC 6750 says).' }))
}, { description: 'Problem details (RFC 9457), served as application/json.' }))
export type Problem = Static<typeof Problem>
export type PlaceAvailable = Static<typeof PlaceAvailable>
export type FieldError = { path: string, message: string }

/** An error the client can act on: a status, a stable code, and what to say. */
export class HttpProblem extends Error {
  /** A 412's `current`: the record as it is now. */
  current?: Plant
  /** A 409 sku-taken's `holder`: the plant that has the SKU. */
  holder?: number
  /** A 403 insufficient-scope's `scope`: the scope the request needs. */
  scope?: string
  /** Stock's 409s: what the location has available (insufficient-stock), its onHand (stock-changed), and which location. */
  available?: number
  onHand?: number
  location?: string
  /** A movement's 409 insufficient-stock: the plant's other places with units available. */
  elsewhere?: PlaceAvailable[]
  /** A reservation's 409 insufficient-stock: every short line. */
  lines?: Array<{ path: string, plant: number, location: string, quantity: number, available: number, elsewhere?: PlaceAvailable[] }>
  /** A 410 reservation-gone's `state`. */
  state?: string
  /**
   * Which limit refused, where one code has several (a 429 of the read budget, of the event
   * streams, of the rate limit): the log summarises each apart, so an operator sees which one bites.
   */
  limit?: string

  constructor (
    readonly status: number,
    readonly code: ProblemCode,
    detail?: string,
    readonly errors?: FieldError[],
    readonly headers: Record<string, string> = {}
  ) {
    super(detail ?? TITLES[code])
  }
}

/** The `type` member of a problem with this code. */
export const problemType = (code: ProblemCode): string => `/v3/problems/${code}`

export function problemBody (status: number, code: ProblemCode, requestId: string, detail?: string, errors?: FieldError[]): Problem {
  const body: Problem = { type: problemType(code), title: TITLES[code], status, requestId }
  if (detail !== undefined) body.detail = detail
  if (errors !== undefined && errors.length > 0) body.errors = errors
  return body
}

const DESCRIPTIONS: Record<number, string> = {
  400: 'Invalid input',
  401: 'No API key, or one that is unknown, revoked or expired, or sent in a way this service does not read (the detail says which): only when the service has keys (reads: with READS=keys, or when a key is sent); a key in the URL (?api_key=) always',
  404: 'Plant not found',
  405: 'Invalid input',
  410: 'That point of the feed is older than the retention',
  409: 'The plant already has the most photos allowed',
  412: 'If-Match does not match the current ETag: `current` is the plant as it is now, the ETag header and the detail its ETag; the detail also says when If-Match lacks the quotes of an ETag (`3.2` for `"3.2"`) or is weak (`W/"3.2"`), which never match',
  413: 'Body larger than 64 KiB',
  415: 'Content-Type is not one the operation accepts',
  422: 'Idempotency-Key used before for another request (another method or path, or a different body): the detail says when, and until when the key is kept',
  429: 'Rate limit exceeded (see Retry-After): only when a rate limit is set',
  503: 'Storage unavailable or shutting down (see Retry-After)'
}

const header = (description: string) => ({ type: 'string', description })
/** Response headers for the OpenAPI document (fast-json-stringify ignores `headers`). */
export const HEADERS = {
  requestId: { 'x-request-id': header('The request id, also in the body of errors and in the logs.') },
  etag: { etag: header('The version of the plant, for If-Match and If-None-Match.') },
  location: { location: header('/v3/plant/{id} of the plant.') },
  allow: { allow: header('The methods this path serves.') },
  retryAfter: { 'retry-after': header('Seconds to wait before retrying.') },
  feedPosition: {
    'feed-position': header('The newest change (`seq`) this read already reflects (a little older at most, never newer): ' +
      'follow /v3/plant/changes or /v3/plant/events from it to keep what was read up to date.')
  },
  wwwAuthenticate: { 'www-authenticate': header('Bearer realm="plant-catalogue"') },
  /** Sent only on a replay, so the document marks it (x-present) for checkers that expect every header. */
  idempotentReplayed: {
    'idempotent-replayed': {
      type: 'string',
      enum: ['true'],
      'x-present': 'only on a replay',
      description: '`true` when this is the answer to an earlier request with the same Idempotency-Key and body, sent again ' +
        '(nothing was written this time); absent on an answer written now.'
    }
  }
}
const PROBLEM_HEADERS: Record<number, object> = {
  401: HEADERS.wwwAuthenticate,
  403: { 'www-authenticate': header('insufficient-scope: Bearer realm="plant-catalogue", error="insufficient_scope", scope="write" (the scope needed, RFC 6750)') },
  405: HEADERS.allow,
  412: { etag: header('The current ETag of the plant (the version `current` shows): send it as If-Match to retry.') },
  429: HEADERS.retryAfter,
  503: HEADERS.retryAfter
}

/** Response schemas for error statuses: a status, or [status, description] to name the route's meaning. */
export function problemResponses (...statuses: Array<number | [number, string]>): Record<number, ReturnType<typeof ref<typeof Problem>>> {
  return Object.fromEntries(statuses.map((s) => {
    const [status, description] = Array.isArray(s) ? s : [s, DESCRIPTIONS[s]]
    return [status, { ...ref(Problem), description, headers: { ...HEADERS.requestId, ...PROBLEM_HEADERS[status] } }]
  }))
}
