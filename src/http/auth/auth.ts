import { hash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ConfigError, type Config } from '../../config.js'
import { ANONYMOUS, type WriteMeta } from '../../catalogue/changes.js'
import { SCOPES, scopeIncludes, type KeyCheck, type Scope } from '../../catalogue/keys.js'
import { keyInUrl, presentedKey, type Presented } from './credentials.js'
import { HttpProblem, problemResponses, type FieldError } from '../problems/problem.js'

const sha256 = (s: string): Buffer => hash('sha256', s, 'buffer')

/**
 * The OpenAPI security of a route that needs a key of `scope` (or more): either header carries it.
 * The scope rides in the requirement, so the document says what each operation needs and the hook
 * below enforces exactly that.
 */
export function securityFor (scope: Scope): Array<Record<string, string[]>> {
  return [{ bearerAuth: [scope] }, { apiKeyHeader: [scope] }]
}
export const writeSecurity = securityFor('write')
const SCOPE_LIST = 'Scopes: `read` < `sell` < `write` < `admin`, each including those before it (see SECURITY.md).'
export const securitySchemes = {
  bearerAuth: { type: 'http', scheme: 'bearer', description: `An API key, required when the service has keys (API_KEYS, API_KEYS_FILE or keys made with plants keys create or POST /v3/keys); for reads (scope read) with READS=keys; with READS=public a key sent with a read is still checked (a wrong one is 401). Sent as Bearer or api_key, never in the URL. ${SCOPE_LIST}` },
  apiKeyHeader: { type: 'apiKey', in: 'header', name: 'api_key', description: `The same key in the Petstore header. ${SCOPE_LIST}` }
} as const

/** The scope a route's schema declares (undefined: open to anyone). */
function declaredScope (security: unknown): Scope | undefined {
  const first = (security as Array<Record<string, string[]>> | undefined)?.[0]
  const scope = first === undefined ? undefined : Object.values(first)[0]?.[0]
  return SCOPES.includes(scope as Scope) ? scope as Scope : security === undefined ? undefined : 'write'
}

/** A key of API_KEYS or API_KEYS_FILE: its name (given, or `env-N` by its place) and its SHA-256 digest. */
export interface EnvKey { name: string, hash: Buffer }

/**
 * The keys that may write: API_KEYS in clear, API_KEYS_FILE as hex digests (one a line, `#`
 * comments), so a deployment need not keep usable keys on disk. A key without a name is `env-N`,
 * N its place among all of them.
 */
export function loadEnvKeys (config: Config): EnvKey[] {
  const keys = config.apiKeys.map((entry, i) => typeof entry === 'string'
    ? { name: `env-${i + 1}`, hash: sha256(entry) }
    : { name: entry.name, hash: sha256(entry.secret) })
  const file = config.apiKeysFile
  if (file === undefined) return keys
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError(`Invalid configuration: API_KEYS_FILE ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`)
  }
  let digests = 0
  for (const [n, raw] of text.split('\n').entries()) {
    const line = raw.replace(/#.*/, '').trim().replace(/^sha256:/, '')
    if (line === '') continue
    if (!/^[0-9a-f]{64}$/i.test(line)) throw new ConfigError(`Invalid configuration: API_KEYS_FILE ${file} line ${n + 1} is not a SHA-256 hex digest`)
    keys.push({ name: `env-${keys.length + 1}`, hash: Buffer.from(line, 'hex') })
    digests++
  }
  // An empty file is a mistake, not a wish for anonymous writes (protected mode would blame the wrong thing).
  if (digests === 0) throw new ConfigError(`Invalid configuration: API_KEYS_FILE ${file} holds no keys (expected SHA-256 hex digests, one a line)`)
  return keys
}

/** The keys of API_KEYS and API_KEYS_FILE by their hex digest. */
export function envKeyNames (keys: EnvKey[]): Map<string, string> {
  return new Map(keys.map(({ name, hash }) => [hash.toString('hex'), name]))
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The name of the key that made this request ('' when no key was needed or keys are off). */
    writer: string
  }
  interface FastifyContextConfig {
    /**
     * A route whose body decides the scope it needs (PATCH: `status` alone is a till's `sell`), read
     * once the body is valid; a batch also names the operations that need it (`/operations/1`).
     */
    scopeOfBody?: (body: unknown) => Scope | { scope: Scope, paths: string[] }
    /**
     * A read about the key itself (GET /v3/keys/current): it needs one once keys exist, even where
     * reads are open, and is refused by the hook as every other route is.
     */
    needsKey?: boolean
  }
}

/** Who makes a write (recorded on its change): the key's name, or `anonymous` when no key was checked. */
export const writeMetaOf = (request: FastifyRequest): WriteMeta => ({ actor: request.writer === '' ? ANONYMOUS : request.writer })

export interface AuthOptions {
  keys: KeyChecker
  /** READS=keys: every read under /v3 needs a key of scope `read` (else `read` routes are open to anyone). */
  readsNeedKey: boolean
}

const WHY = { unknown: 'The API key is not valid', revoked: 'The API key has been revoked', expired: 'The API key has expired' }
const challenge = { 'www-authenticate': 'Bearer realm="plant-catalogue"' }
/** Every 401 of the service: the same type and WWW-Authenticate, whatever was wrong with the key. */
const unauthorized = (why: string): HttpProblem => new HttpProblem(401, 'unauthorized', why, undefined, challenge)

/** The scope of the key the hook accepted for a request (undefined: no key was checked). */
const heldScopes = new WeakMap<FastifyRequest, Scope>()
export const heldScope = (request: FastifyRequest): Scope | undefined => heldScopes.get(request)

/**
 * A key in the URL is refused by every route that reads keys, whether or not keys exist yet (a
 * photo's address with ?api_key= copied into a page would hand the key to anyone who sees it). The
 * probes and the document ignore a query, as they ignore any other.
 */
function keyInUrlRefusal (request: FastifyRequest): HttpProblem | undefined {
  const refusal = keyInUrl(request.url)
  return refusal === undefined ? undefined : unauthorized(refusal)
}

/** RFC 6750's answer to a key without the scope: the scope needed, in the body and in WWW-Authenticate. */
function insufficient (needed: Scope, held: Scope, errors?: FieldError[]): HttpProblem {
  // Nothing is above admin: "(or above)" would send someone looking for a scope that does not exist.
  const problem = new HttpProblem(403, 'insufficient-scope', `This needs a key of scope ${needed}${needed === 'admin' ? '' : ' (or above)'}; this key has scope ${held}`, errors,
    { 'www-authenticate': `Bearer realm="plant-catalogue", error="insufficient_scope", scope="${needed}"` })
  problem.scope = needed
  return problem
}

/**
 * Every route that declares `security` needs a key holding the scope it names, once keys exist
 * (API_KEYS, or any stored key). No key or an unknown, revoked or expired one: 401 with
 * WWW-Authenticate; a key without the scope: 403 insufficient-scope. Reads under /v3 are given
 * `read` here as they are registered: with READS=keys every read needs a key; with READS=public a
 * read needs none, but a key that is sent must be a valid one.
 */
/** What the auth hook asks of the keys (keys/key-cache.ts answers). */
export interface KeyChecker {
  keysRequired (): boolean | Promise<boolean>
  check (secret: string): KeyCheck | Promise<KeyCheck>
}

export function registerAuth (app: FastifyInstance, { keys, readsNeedKey }: AuthOptions): void {
  app.decorateRequest('writer', '')

  const authorize = async (request: FastifyRequest, needed: Scope, presented: Presented): Promise<void> => {
    if (!await keys.keysRequired()) return
    if (presented.kind === 'foreign' || presented.kind === 'refused') throw unauthorized(presented.why)
    if (presented.kind === 'none') {
      // The one read behind a key without READS=keys is /metrics: say what needs it, not "writes".
      const what = request.method === 'GET' || request.method === 'HEAD' ? 'This resource needs' : 'Writes need'
      throw unauthorized(`${what} an API key: send Authorization: Bearer <key> or api_key: <key>`)
    }
    const found = await keys.check(presented.secret)
    if (!found.ok) {
      // A known key, revoked or expired, is named in the access log (never its secret).
      if (found.why !== 'unknown') request.writer = found.name
      throw unauthorized(WHY[found.why])
    }
    request.writer = found.name
    const config = request.routeOptions.config
    if (config.needsKey === true || config.scopeOfBody !== undefined) heldScopes.set(request, found.scope)
    if (config.scopeOfBody !== undefined) return
    if (!scopeIncludes(found.scope, needed)) throw insufficient(needed, found.scope)
  }
  // The body decides, once it is valid: a typo is answered 400 naming it, never "ask for a broader key".
  const bodyScope = (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
    const held = heldScopes.get(request)
    const rule = request.routeOptions.config.scopeOfBody
    if (held === undefined || rule === undefined) return done()
    const answer = rule(request.body)
    const { scope, paths } = typeof answer === 'string' ? { scope: answer, paths: [] } : answer
    if (scopeIncludes(held, scope)) return done()
    done(insufficient(scope, held, paths.map((path) => ({ path, message: `needs a key of scope ${scope} (this key has scope ${held})` }))))
  }

  app.addHook('onRoute', (route) => {
    const schema = route.schema
    if (schema === undefined) return
    const methods = [route.method].flat()
    // Declared whatever READS says, like `write` whether or not keys exist: one document for every deployment.
    if (schema.security === undefined && route.url.startsWith('/v3') && !isApiDescription(route.url) &&
      methods.every((m) => m === 'GET' || m === 'HEAD')) schema.security = securityFor('read')
    if (schema.security === undefined) return
    const declared = declaredScope(schema.security)!
    const responses = schema.response as Record<number, unknown> | undefined
    if (responses !== undefined) {
      const needed = [...(route.config?.scopeOfBody === undefined ? [] : ['write']), declared].join(' or ')
      if (!(401 in responses)) Object.assign(responses, problemResponses(401))
      if (!(403 in responses)) Object.assign(responses, problemResponses([403, `The key's scope does not include ${needed} (insufficient-scope)`]))
    }
    // The check is a hook of the routes that need one, a callback rather than a promise per request.
    // An open read (READS=public) checks only a key that is sent: a client with a mistyped or revoked
    // key learns it at its first read, not at its first write. Without one it pays a few lookups.
    if (declared === 'read' && !readsNeedKey && route.config?.needsKey !== true) {
      const checkSent = (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
        const inUrl = keyInUrlRefusal(request)
        if (inUrl !== undefined) return done(inUrl)
        const presented = presentedKey(request)
        if (presented.kind === 'none' || presented.kind === 'foreign') return done()
        authorize(request, declared, presented).then(() => { done() }, done)
      }
      route.onRequest = [...[route.onRequest ?? []].flat(), checkSent]
      return
    }
    const check = (request: FastifyRequest, _reply: FastifyReply, done: (err?: Error) => void): void => {
      const inUrl = keyInUrlRefusal(request)
      if (inUrl !== undefined) return done(inUrl)
      authorize(request, declared, presentedKey(request)).then(() => { done() }, done)
    }
    route.onRequest = [...[route.onRequest ?? []].flat(), check]
    if (route.config?.scopeOfBody !== undefined) route.preHandler = [bodyScope, ...[route.preHandler ?? []].flat()]
  })
}

/**
 * The API's description, open whatever READS says: the document, the docs page (its files
 * included) and the problem types' pages hold no catalogue data, and a client needs them to learn how to authenticate.
 */
export const isApiDescription = (url: string): boolean => url === '/v3/openapi.json' || url === '/v3/docs' || url.startsWith('/v3/docs/') || url.startsWith('/v3/problems/')

/** What stays open to a request without a key when READS=keys (the start-up line and docs/configuration.md say the same). */
export const OPEN_WITH_READ_KEYS = '/healthz, /readyz, /v3/openapi.json, /v3/docs, the problem types (/v3/problems/…) and the staff page\'s own files (/, /page/…)'

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost|\[::1\])$/i

/** Protected mode: without keys, only a loopback listener may take anonymous writes, unless allowed. */
export function protectedModeRefusal (config: Config, keyCount: number): string | undefined {
  if (keyCount > 0 || config.allowAnonymousWrites || LOOPBACK.test(config.host)) return undefined
  return `Refusing to listen on ${config.host} with no API keys: set API_KEYS or API_KEYS_FILE, or create a key (plants keys create NAME --scope admin, with --create before the first start), or set ALLOW_ANONYMOUS_WRITES=true to accept anonymous writes`
}
