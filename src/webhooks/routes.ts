import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CHANGE_KINDS, SECRET_OVERLAP_MS, signingSecrets, type DeliveryAttempt, type Webhook as StoredWebhook } from '../catalogue/webhook.js'
import { securityFor } from '../http/auth/auth.js'
import { ref } from '../http/schemas/components.js'
import { methodNotAllowed } from '../http/problems/unserved.js'
import { HEADERS, HttpProblem, problemResponses } from '../http/problems/problem.js'
import type { PlantStore } from '../store/plant-store.js'
import type { WebhookDeliverer } from './deliverer.js'
import { DeliveriesQuery, NewWebhook, Webhook, WebhookChanges, WebhookCreated, WebhookDeliveries, WebhookDelivery, WebhookList, WebhookParams, WebhookSecret } from './schemas.js'
import { newSecret, signedHeaders } from './signing.js'
import { resolvedProblem, shownUrl, targetProblem, webhookSendingTo, type PrivateReach } from './target.js'

export interface WebhookRouteOptions { store: PlantStore, deliverer: WebhookDeliverer, allowPrivate: PrivateReach }

const tags = ['webhooks']
const iso = (ms: number | null): string | null => ms === null ? null : new Date(ms).toISOString()

/** A webhook as the API shows it: never its secrets. */
export function publicWebhook (w: StoredWebhook, now: number): Webhook {
  return {
    id: w.id,
    url: shownUrl(w.url),
    events: w.events,
    status: w.status,
    createdAt: new Date(w.createdAt).toISOString(),
    deliveredUpTo: w.cursor,
    attempts: w.attempts,
    nextAttemptAt: iso(w.nextAttemptAt),
    failingSince: iso(w.failingSince),
    lastError: w.lastError,
    previousSecretExpiresAt: w.previousSecretUntil !== null && w.previousSecretUntil > now ? iso(w.previousSecretUntil) : null
  }
}

/** A delivery attempt as the API shows it. */
export const publicAttempt = (a: DeliveryAttempt): WebhookDelivery => ({
  seq: a.seq,
  attempt: a.attempt,
  at: new Date(a.at).toISOString(),
  statusCode: a.statusCode,
  error: a.error,
  durationMs: Math.round(a.durationMs),
  response: a.response ?? null,
  event: a.seq === 0 ? 'test' : a.event ?? null
})

const notFound = (id: number): HttpProblem => new HttpProblem(404, 'webhook-not-found', `No webhook ${id}`)

const URL_TAKEN: [number, string] = [409, 'Another webhook already sends to this URL (webhook-url-taken)']

/** /v3/webhooks: subscriptions to the change feed, with an admin key. */
export const webhookRoutes: FastifyPluginAsyncTypebox<WebhookRouteOptions> = async (app, options) => {
  const { store, deliverer, allowPrivate } = options
  const webhooks = store.webhooks
  const now = (): number => deliverer.settings.now()
  const checkUrl = async (url: string): Promise<void> => {
    const problem = targetProblem(url, allowPrivate) ?? await resolvedProblem(url, allowPrivate)
    if (problem === undefined) return
    // The operator's switch is named where it is the way through (as the CLI does).
    const hint = allowPrivate === false && /must not name a loopback/.test(problem) ? ' (the operator may allow internal receivers with WEBHOOK_ALLOW_PRIVATE=true)' : ''
    // Named as the schema's own checks name a field (/events/1, /status), so a client reads one form.
    throw new HttpProblem(400, 'invalid-input', `/url ${problem}${hint}`, [{ path: '/url', message: `${problem}${hint}` }])
  }
  const notTaken = async (url: string, except?: number): Promise<void> => {
    const holder = webhookSendingTo(await webhooks.list(), url, except)
    if (holder === undefined) return
    throw new HttpProblem(409, 'webhook-url-taken', `webhook ${holder.id} already sends to this URL: change its events with PATCH /v3/webhooks/${holder.id} rather than add another (each change would be sent twice)`,
      [{ path: '/url', message: `is webhook ${holder.id}'s already` }])
  }
  const found = async (id: number): Promise<StoredWebhook> => {
    const webhook = await webhooks.get(id)
    if (!webhook) throw notFound(id)
    return webhook
  }
  // Webhooks send the catalogue elsewhere and name where: an admin's business, reads included.
  const common = { tags, security: securityFor('admin') }
  const json = { headers: HEADERS.requestId }

  app.post('/v3/webhooks', {
    schema: {
      ...common,
      operationId: 'add-webhook',
      summary: 'Subscribe a URL to the change feed',
      description: 'Each change (of the kinds in `events`) is POSTed to `url` as the feed\'s change object, signed (Standard Webhooks). ' +
        'Delivery starts with the changes after this one is made. The secret is in this answer only.',
      body: ref(NewWebhook),
      response: { 201: { ...ref(WebhookCreated), description: 'The webhook and its secret (shown once)', ...json }, ...problemResponses(400, 401, URL_TAKEN, 413, 429, 503) }
    }
  }, async (request, reply) => {
    const { url, events = [...CHANGE_KINDS] } = request.body
    await checkUrl(url)
    await notTaken(url)
    const secret = newSecret()
    const webhook = await webhooks.create({ url, events, secret }, now())
    void deliverer.rescan()
    reply.code(201).header('cache-control', 'no-store').header('location', `/v3/webhooks/${webhook.id}`)
    return { ...publicWebhook(webhook, now()), secret }
  })

  app.get('/v3/webhooks', {
    schema: {
      ...common,
      operationId: 'list-webhooks',
      summary: 'List the webhooks',
      response: { 200: { ...ref(WebhookList), description: 'Every webhook, oldest first (no secrets)', ...json }, ...problemResponses(401, 429, 503) }
    }
  }, async () => ({ items: (await webhooks.list()).map((w) => publicWebhook(w, now())) }))

  app.get('/v3/webhooks/:id', {
    schema: {
      ...common,
      operationId: 'get-webhook',
      summary: 'Find a webhook by id',
      params: WebhookParams,
      response: { 200: { ...ref(Webhook), description: 'The webhook (no secret)', ...json }, ...problemResponses(400, 401, [404, 'No webhook with this id'], 429, 503) }
    }
  }, async (request) => publicWebhook(await found(request.params.id), now()))

  app.patch('/v3/webhooks/:id', {
    schema: {
      ...common,
      operationId: 'update-webhook',
      summary: 'Change a webhook\'s URL or events, pause it, or resume it',
      description: '`status: paused` stops its deliveries; `status: active` resumes them from where it stopped, a failing webhook included. A new `url` is tried at once, its retries counted afresh (a paused webhook stays paused).',
      params: WebhookParams,
      body: ref(WebhookChanges),
      response: { 200: { ...ref(Webhook), description: 'The webhook as changed', ...json }, ...problemResponses(400, 401, [404, 'No webhook with this id'], URL_TAKEN, 413, 429, 503) }
    }
  }, async (request) => {
    if (request.body.url !== undefined) {
      await checkUrl(request.body.url)
      await notTaken(request.body.url, request.params.id)
    }
    const webhook = await webhooks.update(request.params.id, request.body)
    if (!webhook) throw notFound(request.params.id)
    void deliverer.rescan()
    return publicWebhook(webhook, now())
  })

  app.delete('/v3/webhooks/:id', {
    schema: {
      ...common,
      operationId: 'delete-webhook',
      summary: 'Remove a webhook',
      params: WebhookParams,
      response: { 204: { type: 'null', description: 'Removed: nothing more is sent to it', ...json }, ...problemResponses(400, 401, [404, 'No webhook with this id'], 429, 503) }
    }
  }, async (request, reply) => {
    if (!await webhooks.remove(request.params.id)) throw notFound(request.params.id)
    void deliverer.rescan()
    reply.code(204)
  })

  app.post('/v3/webhooks/:id/secret', {
    schema: {
      ...common,
      operationId: 'rotate-webhook-secret',
      summary: 'Rotate a webhook\'s secret',
      description: 'A new secret, shown once; the previous one keeps signing beside it (two signatures in webhook-signature) for 24 hours. ' +
        'Rotated again within those 24 hours, the secret from before the first rotation keeps signing until its 24 hours end (previousSecretExpiresAt says when) and the one shown in between stops at once.',
      params: WebhookParams,
      response: { 200: { ...ref(WebhookSecret), description: 'The new secret (shown once)', ...json }, ...problemResponses(400, 401, [404, 'No webhook with this id'], 429, 503) }
    }
  }, async (request, reply) => {
    const secret = newSecret()
    const at = now()
    const webhook = await webhooks.rotateSecret(request.params.id, secret, at, at + SECRET_OVERLAP_MS)
    if (!webhook) throw notFound(request.params.id)
    reply.header('cache-control', 'no-store')
    return { id: webhook.id, secret, previousSecretExpiresAt: new Date(webhook.previousSecretUntil!).toISOString() }
  })

  app.get('/v3/webhooks/:id/deliveries', {
    schema: {
      ...common,
      operationId: 'list-webhook-deliveries',
      summary: 'A webhook\'s delivery attempts, newest first, a page at a time',
      description: 'Each attempt with what it sent (`event`: the change\'s kind, stock.low, stock.out or test) and what the receiver answered (its first 4 KiB). ' +
        'The last 1000 deliveries of changes (with their stock events) and the last 1000 test sends are kept, apart; `kind` lists one or the other, or one event. ' +
        'Pages of up to `limit` attempts: pass `nextCursor` back as `cursor` for the older ones.',
      params: WebhookParams,
      querystring: DeliveriesQuery,
      response: { 200: { ...ref(WebhookDeliveries), description: 'A page of attempts, newest first', ...json }, ...problemResponses(400, 401, [404, 'No webhook with this id'], 429, 503) }
    }
  }, async (request) => {
    await found(request.params.id)
    const { limit = 100, cursor, kind = 'all' } = request.query
    // One more than asked: whether an older page exists is known without a second read.
    const attempts = await webhooks.deliveries(request.params.id, { limit: limit + 1, before: cursor, kind })
    const page = attempts.slice(0, limit)
    return { items: page.map(publicAttempt), nextCursor: attempts.length > limit ? page[page.length - 1].n : null }
  })

  app.post('/v3/webhooks/:id/test', {
    schema: {
      ...common,
      operationId: 'test-webhook',
      summary: 'Send a test delivery now',
      description: 'POSTs `{"kind": "test", "webhook": id}`, signed like every delivery, and answers how the receiver took it (its cursor does not move). ' +
        'The attempt is listed among the deliveries with seq 0 (GET …/deliveries?kind=tests lists test sends alone), with what the receiver answered.',
      params: WebhookParams,
      response: { 200: { ...ref(WebhookDelivery), description: 'The attempt: statusCode 2xx and error null when the receiver took it', ...json }, ...problemResponses(400, 401, [404, 'No webhook with this id'], 429, 503) }
    }
  }, async (request) => {
    const webhook = await found(request.params.id)
    const at = now()
    const body = JSON.stringify({ kind: 'test', webhook: webhook.id })
    const headers = signedHeaders(signingSecrets(webhook, at), `${webhook.id}-test-${at}`, Math.floor(at / 1000), body)
    const result = await deliverer.client.post(webhook.url, body, headers)
    const attempt = { seq: 0, attempt: 1, at, ...result }
    await webhooks.recordAttempts(webhook.id, [attempt])
    return publicAttempt(attempt)
  })

  methodNotAllowed(app, '/v3/webhooks', ['GET', 'POST'])
  methodNotAllowed(app, '/v3/webhooks/:id', ['GET', 'PATCH', 'DELETE'])
  methodNotAllowed(app, '/v3/webhooks/:id/secret', ['POST'])
  methodNotAllowed(app, '/v3/webhooks/:id/deliveries', ['GET'])
  methodNotAllowed(app, '/v3/webhooks/:id/test', ['POST'])
}
