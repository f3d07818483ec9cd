import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { ENV_KEY_NAME, KeyNameTaken, KeyNotFound, SCOPES, scopeIncludes } from '../catalogue/keys.js'
import { heldScope, securityFor, writeMetaOf } from '../http/auth/auth.js'
import { ref } from '../http/schemas/components.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problems/problem.js'
import type { KeyStore } from '../store/key-store.js'
import type { KeyCache } from './key-cache.js'
import { createKey, newKeyProblem, parseExpiry } from './manage.js'
import { ApiKeyList, CreatedApiKey, CurrentKey, environmentKeyRecord, KeyName, keyRecord, NewApiKey } from './schemas.js'

export interface KeyRouteOptions {
  keys: KeyStore
  cache: KeyCache
  now?: () => number
}

const tags = ['keys']
const security = securityFor('admin')
const NameParams = Type.Object({ name: KeyName('The key\'s name') })
const RevokeQuery = Type.Object({
  confirm: Type.Optional(Type.Boolean({ default: false, description: 'true: revoke the key this request is made with (without it, that is refused with 409 revoking-own-key, since the answer would be the last thing the key does).' }))
}, { additionalProperties: false })

/** GET, POST /v3/keys and DELETE /v3/keys/{name}: what `plants keys` does, over HTTP, with an admin key. */
export const keyRoutes: FastifyPluginAsyncTypebox<KeyRouteOptions> = async (app, { keys, cache, now = Date.now }) => {
  app.get('/v3/keys', {
    schema: {
      operationId: 'list-keys',
      tags,
      security,
      summary: 'List the API keys: name, scope, created, expires, last used, revoked, source (never a secret)',
      description: 'The stored keys, oldest first, then the keys of API_KEYS and API_KEYS_FILE, marked source environment (named as the operator named them, or env-1, env-2, … by their place).',
      response: {
        200: { ...ref(ApiKeyList), description: 'Every key, stored or of the environment', headers: HEADERS.requestId },
        ...problemResponses(429, 503)
      }
    }
  }, async (_request, reply) => {
    reply.header('cache-control', 'no-store')
    const at = now()
    const environment = cache.environmentKeys().map(environmentKeyRecord)
    const stored = (await keys.list()).map((key) => ({ ...keyRecord(key, at), source: 'stored' as const }))
    return { items: [...stored, ...environment] }
  })

  app.get('/v3/keys/current', {
    schema: {
      operationId: 'get-current-key',
      tags,
      // Any valid key: read is the lowest scope, and the auth hook checks a key that is sent.
      security: securityFor('read'),
      summary: 'What the key this request is made with may do: its name, scope and the scopes it holds',
      description: 'Any valid key may ask, whatever its scope, so a client (the staff page, a till) can turn off what its key may not do before trying it. Without a key, 401 once the service has keys; with none, 200 with keysRequired false.',
      response: {
        200: { ...ref(CurrentKey), description: 'The key\'s name and what it may do', headers: HEADERS.requestId },
        ...problemResponses(429, 503)
      }
    },
    // This read is about the key, so it needs one even where reads are open: the hook refuses it without.
    config: { needsKey: true }
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store')
    // The hook's own verdict, not a second look that could differ from it: no key checked means none was needed.
    const scope = heldScope(request)
    if (scope === undefined) return { name: null, scope: 'admin' as const, scopes: [...SCOPES], keysRequired: false }
    return { name: request.writer, scope, scopes: SCOPES.filter((s) => scopeIncludes(scope, s)), keysRequired: true }
  })

  app.post('/v3/keys', {
    schema: {
      operationId: 'create-key',
      tags,
      security,
      summary: 'Create an API key: the answer holds its secret, this once',
      description: 'Two keys may be live for one client while it rotates: create the new one, move the client, revoke the old one.',
      body: ref(NewApiKey),
      response: {
        201: { ...ref(CreatedApiKey), description: 'The key and its secret (only its hash is kept)', headers: HEADERS.requestId },
        ...problemResponses(400, [409, 'A key (live, revoked or expired, stored or of API_KEYS) already has this name'], 413, 429, 503)
      }
    }
  }, async (request, reply) => {
    const { name, scope, expiresAt } = request.body
    const at = now()
    let expires: number | null = null
    if (expiresAt !== undefined) {
      const expiry = parseExpiry(expiresAt)
      if (!expiry.ok) throw new HttpProblem(400, 'invalid-input', `/expiresAt ${expiry.why}`, [{ path: '/expiresAt', message: expiry.why }])
      expires = expiry.ms
    }
    const problem = newKeyProblem(name, expires, at)
    if (problem !== undefined) throw new HttpProblem(400, 'invalid-input', `/${problem.field} ${problem.message}`, [{ path: `/${problem.field}`, message: problem.message }])
    // One name, one key: the history could not tell a stored key from the operator's of that name.
    if (cache.environmentKeys().includes(name)) throw new HttpProblem(409, 'key-name-taken', `${name} names a key of API_KEYS: choose another name`)
    try {
      const created = await createKey(keys, name, scope, expires, at)
      cache.forget() // a first key makes keys required on this instance at once
      // Who made which key, in the log (names only: the secret is in the answer alone).
      request.log.info({ key: writeMetaOf(request).actor, target: name, scope }, 'API key created')
      reply.code(201).header('cache-control', 'no-store')
      return { ...keyRecord(created.key, at), secret: created.secret }
    } catch (err) {
      if (err instanceof KeyNameTaken) throw new HttpProblem(409, 'key-name-taken', `A key named ${name} exists (names are never reused; revoked keys keep theirs)`)
      throw err
    }
  })

  app.delete('/v3/keys/:name', {
    schema: {
      operationId: 'revoke-key',
      tags,
      security,
      summary: 'Revoke an API key: refused by every instance within 2 seconds; its name stays in the list',
      description: 'Idempotent: revoking a key that is revoked already answers 204 again and changes nothing (its revokedAt stays the first). ' +
        'The keys of API_KEYS and API_KEYS_FILE (listed with source environment) are not stored and cannot be revoked here (409 key-from-environment): remove them there and restart. ' +
        'Revoking the key the request is made with needs ?confirm=true (else 409 revoking-own-key): the client would lock itself out.',
      params: NameParams,
      querystring: RevokeQuery,
      response: {
        204: Type.Null({ description: 'Revoked (now, or already)' }),
        ...problemResponses(400, [404, 'No key of this name (key-not-found)'],
          [409, 'A key of API_KEYS or API_KEYS_FILE (key-from-environment), or the key this request is made with, without ?confirm=true (revoking-own-key)'], 429, 503)
      }
    }
  }, async (request, reply) => {
    const { name } = request.params
    if (ENV_KEY_NAME.test(name) || cache.environmentKeys().includes(name)) {
      throw new HttpProblem(409, 'key-from-environment', `${name} is a key of API_KEYS or API_KEYS_FILE, not a stored one: remove it there and restart the service`)
    }
    if (name === writeMetaOf(request).actor && request.query.confirm !== true) {
      throw new HttpProblem(409, 'revoking-own-key', `${name} is the key this request is made with: revoked, it is refused from now on, this client included. To revoke it anyway, send DELETE /v3/keys/${name}?confirm=true`)
    }
    let already = false
    try {
      await keys.revoke(name, now())
    } catch (err) {
      if (!(err instanceof KeyNotFound)) throw err
      // Revoked already (a retry after a lost answer, a second person): the outcome asked for holds.
      if (!(await keys.list()).some((key) => key.name === name)) throw new HttpProblem(404, 'key-not-found', `No key named ${name} (GET /v3/keys lists them)`)
      already = true
    }
    request.log.info({ key: writeMetaOf(request).actor, target: name, ...(already ? { revokedAlready: true } : {}) }, 'API key revoked')
    cache.forget() // this instance refuses it at once; the others within their cache's second
    return reply.code(204).header('cache-control', 'no-store').send(null)
  })

  methodNotAllowed(app, '/v3/keys', ['GET', 'POST'])
  methodNotAllowed(app, '/v3/keys/:name', ['DELETE'])
}
