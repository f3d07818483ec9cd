import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { KeyNameTaken, KeyNotFound } from '../catalogue/keys.js'
import { securityFor } from '../http/auth.js'
import { ref } from '../http/components.js'
import { methodNotAllowed } from '../http/method-not-allowed.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problem.js'
import type { KeyStore } from '../store/key-store.js'
import type { KeyCache } from './key-cache.js'
import { createKey, newKeyProblem, parseExpiry } from './manage.js'
import { ApiKeyList, CreatedApiKey, keyRecord, NewApiKey } from './schemas.js'

export interface KeyRouteOptions {
  keys: KeyStore
  cache: KeyCache
  now?: () => number
}

const tags = ['keys']
const security = securityFor('admin')
const NameParams = Type.Object({ name: Type.String({ minLength: 1, maxLength: 63, description: 'The key\'s name' }) })

/** GET, POST /v3/keys and DELETE /v3/keys/{name}: what `plants keys` does, over HTTP, with an admin key. */
export const keyRoutes: FastifyPluginAsyncTypebox<KeyRouteOptions> = async (app, { keys, cache, now = Date.now }) => {
  app.get('/v3/keys', {
    schema: {
      operationId: 'list-keys',
      tags,
      security,
      summary: 'List the API keys: name, scope, created, expires, last used, revoked (never a secret)',
      response: {
        200: { ...ref(ApiKeyList), description: 'Every stored key', headers: HEADERS.requestId },
        ...problemResponses(429, 503)
      }
    }
  }, async (_request, reply) => {
    reply.header('cache-control', 'no-store')
    return { items: (await keys.list()).map(keyRecord) }
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
        ...problemResponses(400, [409, 'A key (live, revoked or expired) already has this name'], 413, 415, 429, 503)
      }
    }
  }, async (request, reply) => {
    const { name, scope, expiresAt } = request.body
    const at = now()
    const expires = expiresAt === undefined ? null : parseExpiry(expiresAt)
    if (expires === undefined) throw new HttpProblem(400, 'invalid-input', 'expiresAt must be a date (2027-01-31) or an RFC 3339 date-time with its zone (2027-01-31T18:00:00Z)', [{ path: '/expiresAt', message: 'is not a date' }])
    const problem = newKeyProblem(name, expires, at)
    if (problem !== undefined) throw new HttpProblem(400, 'invalid-input', problem)
    try {
      const created = await createKey(keys, name, scope, expires, at)
      cache.forget() // a first key makes keys required on this instance at once
      reply.code(201).header('cache-control', 'no-store')
      return { ...keyRecord(created.key), secret: created.secret }
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
      params: NameParams,
      response: {
        204: Type.Null({ description: 'Revoked' }),
        ...problemResponses([404, 'No live key of this name'], 429, 503)
      }
    }
  }, async (request, reply) => {
    try {
      await keys.revoke(request.params.name, now())
    } catch (err) {
      if (err instanceof KeyNotFound) throw new HttpProblem(404, 'key-not-found', `No live key named ${request.params.name}`)
      throw err
    }
    cache.forget() // this instance refuses it at once; the others within their cache's second
    return reply.code(204).header('cache-control', 'no-store').send(null)
  })

  methodNotAllowed(app, '/v3/keys', ['GET', 'POST'])
  methodNotAllowed(app, '/v3/keys/:name', ['DELETE'])
}
