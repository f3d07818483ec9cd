import type { FastifyRequest } from 'fastify'

// Which key a request presents, read from its headers, or why its headers cannot be read as one key.
// A 401 that says what was wrong (the Basic scheme, two keys, the wrong header) saves a client an
// afternoon; the answer never repeats what was sent, since that may be a secret.

/**
 * - `none`: no credentials at all;
 * - `key`: one key (Authorization: Bearer, or api_key);
 * - `foreign`: only credentials this service does not read (another Authorization scheme, an
 *   X-API-Key header): refused where a key is needed, ignored on an open read, where they may be a
 *   proxy's own (a Basic login in front of the staff page reaches every request);
 * - `refused`: credentials that contradict each other (two keys): refused wherever they are sent.
 */
export type Presented =
  | { kind: 'none' }
  | { kind: 'key', secret: string }
  | { kind: 'foreign', why: string }
  | { kind: 'refused', why: string }

const NONE: Presented = { kind: 'none' }
const HOW = 'send the key as Authorization: Bearer <key> (or api_key: <key>)'
const ONE = 'send one key, in one header: Authorization: Bearer <key> or api_key: <key>'
/** Headers other APIs take keys in: read only to say which header this one reads. */
const OTHER_HEADERS: Array<[string, string]> = [['x-api-key', 'X-API-Key'], ['api-key', 'api-key']]

/** How many times a header was sent (Node keeps the first Authorization only, and joins repeated others). */
function timesSent (request: FastifyRequest, name: string): number {
  const raw = request.raw.rawHeaders
  let n = 0
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === name.length && raw[i].toLowerCase() === name) n++
  return n
}

/** The key a request presents, or why it presents none that can be used. */
export function presentedKey (request: FastifyRequest): Presented {
  const headers = request.headers
  const authorization = headers.authorization
  const apiKey = typeof headers.api_key === 'string' && headers.api_key !== '' ? headers.api_key : undefined
  const other = OTHER_HEADERS.find(([name]) => typeof headers[name] === 'string' && headers[name] !== '')
  // The common case, a request without credentials, costs these few lookups.
  if (authorization === undefined && apiKey === undefined && other === undefined) return NONE

  if (authorization !== undefined && timesSent(request, 'authorization') > 1) {
    return { kind: 'refused', why: `Two Authorization headers were sent: ${ONE}` }
  }
  if (apiKey !== undefined && timesSent(request, 'api_key') > 1) {
    return { kind: 'refused', why: `Two api_key headers were sent: ${ONE}` }
  }
  let bearer: string | undefined
  let scheme: string | undefined
  if (authorization !== undefined) {
    const match = /^Bearer(?:[ \t]+(\S*))?[ \t]*$/i.exec(authorization)
    if (match === null) {
      if (/^Bearer\s/i.test(authorization)) return { kind: 'refused', why: `Authorization: Bearer must be followed by the key alone: ${HOW}` }
      scheme = /^Basic(\s|$)/i.test(authorization)
        ? `Authorization uses the Basic scheme, which this service does not read: ${HOW}`
        : `Authorization must use the Bearer scheme: ${HOW}`
    } else if (match[1] === undefined || match[1] === '') {
      return { kind: 'refused', why: `Authorization: Bearer carries no key: ${HOW}` }
    } else {
      bearer = match[1]
    }
  }
  if (bearer !== undefined && apiKey !== undefined && bearer !== apiKey) {
    return { kind: 'refused', why: `Authorization and api_key carry different keys: ${ONE}` }
  }
  const key = bearer ?? apiKey
  if (other !== undefined) {
    const [name, shown] = other
    if (key !== undefined && headers[name] !== key) {
      return { kind: 'refused', why: `${bearer !== undefined ? 'Authorization' : 'api_key'} and ${shown} carry different keys: send one key (this service reads Authorization and api_key, not ${shown})` }
    }
    if (key === undefined && scheme === undefined) return { kind: 'foreign', why: `The key was sent as ${shown}, a header this service does not read: ${HOW}` }
  }
  if (key !== undefined) return { kind: 'key', secret: key }
  return { kind: 'foreign', why: scheme! }
}

/**
 * A key in the query string (`?api_key=`, `?access_token=`, RFC 6750's form): refused, as a URL ends
 * up in access logs, proxies and browser history (the logs here redact it, others may not).
 */
const KEY_IN_QUERY = /[?&](api(?:_|-|%5f|%2d)?key|access(?:_|%5f)token)(?:=|&|$)/i

/** The refusal of a request whose URL carries a key, or undefined. */
export function keyInUrl (url: string): string | undefined {
  const q = url.indexOf('?')
  if (q < 0) return undefined
  const match = KEY_IN_QUERY.exec(url.slice(q))
  if (match === null) return undefined
  const name = decodeURIComponent(match[1])
  return `An API key in the URL (?${name}=) is refused: a URL ends up in logs and browser history. ${HOW[0].toUpperCase()}${HOW.slice(1)}, and treat the key as exposed`
}
