import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { STOCK_EVENT_KINDS, type StockEventKind } from '../catalogue/stock.js'
import { ATTEMPT_KINDS, WEBHOOK_EVENTS, WEBHOOK_STATUSES, type AttemptKind, type WebhookEvent, type WebhookStatus } from '../catalogue/webhook.js'
import { component } from '../http/schemas/components.js'

// The webhook resource: the TypeBox schemas behind validation, serialisation and the OpenAPI document.

// Enums rather than unions of literals: a wrong value is then told "must be one of …" (src/http/problems/messages.ts),
// as a plant's status is, not Ajv's "must be equal to constant" once per literal.
const Kind = Type.Unsafe<WebhookEvent>({ type: 'string', enum: [...WEBHOOK_EVENTS] })
const Time = Type.String({ description: 'RFC 3339, UTC, with milliseconds.' })
const Url = Type.String({ minLength: 1, maxLength: 2048, description: 'Where each change is POSTed: an http:// or https:// URL, without a user name or password, that does not name or resolve to a loopback, private, link-local or metadata address (unless the service runs with WEBHOOK_ALLOW_PRIVATE=true, which its WEBHOOK_PRIVATE_NETWORKS may narrow to the networks it names); a cloud metadata service\'s address (169.254.169.254, fd00:ec2::254 and the like, in any writing) is refused whatever is allowed. A name is resolved when saved and again before every attempt.' })
const Events = Type.Array(Kind, {
  minItems: 1,
  uniqueItems: true,
  description: 'What is sent: the kinds of change (default created, updated and deleted), and stock.low / stock.out, a plant crossing into low or no stock (StockEvent), sent only when named.'
})

export const WebhookParams = Type.Object({ id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }) })

export const NewWebhook = component('NewWebhook', Type.Object({
  url: Url,
  events: Type.Optional(Events)
}, { additionalProperties: false }))
export type NewWebhook = Static<typeof NewWebhook>

export const WebhookChanges = component('WebhookChanges', Type.Object({
  url: Type.Optional(Url),
  events: Type.Optional(Events),
  status: Type.Optional(Type.Unsafe<'active' | 'paused'>({
    type: 'string',
    enum: ['active', 'paused'],
    description: 'paused stops deliveries; active resumes them from where the webhook stopped (a failing one too). failing is the service\'s to set, not a client\'s.'
  }))
}, { additionalProperties: false }))
export type WebhookChanges = Static<typeof WebhookChanges>

const webhookMembers = {
  id: Type.Integer({ minimum: 1 }),
  url: Type.String(),
  events: Type.Array(Kind),
  status: Type.Unsafe<WebhookStatus>({
    type: 'string',
    enum: [...WEBHOOK_STATUSES],
    description: 'failing: retries at one change ran out after 3 days; the webhook keeps its place, and PATCH status active resumes it.'
  }),
  createdAt: Time,
  deliveredUpTo: Type.Integer({ minimum: 0, description: 'The seq of the last change delivered (or passed over as not subscribed).' }),
  attempts: Type.Integer({ minimum: 0, description: 'Failed attempts at the change after deliveredUpTo.' }),
  nextAttemptAt: Type.Union([Time, Type.Null()]),
  failingSince: Type.Union([Time, Type.Null()], { description: 'When the failures at the change after deliveredUpTo began.' }),
  lastError: Type.Union([Type.String(), Type.Null()]),
  previousSecretExpiresAt: Type.Union([Time, Type.Null()], { description: 'After a rotation: until when the previous secret still signs beside the new one.' })
}

export const Webhook = component('Webhook', Type.Object(webhookMembers, { description: 'A subscription to the change feed; its secret is shown only when made or rotated.' }))
export type Webhook = Static<typeof Webhook>

export const WebhookCreated = component('WebhookCreated', Type.Object({
  ...webhookMembers,
  secret: Type.String({ description: 'whsec_… : the signing secret (Standard Webhooks), shown this once.' })
}))

export const WebhookSecret = component('WebhookSecret', Type.Object({
  id: Type.Integer({ minimum: 1 }),
  secret: Type.String({ description: 'The new whsec_… secret, shown this once.' }),
  previousSecretExpiresAt: Time
}))

export const WebhookList = component('WebhookList', Type.Object({ items: Type.Array(Type.Unsafe<Webhook>(Type.Ref('Webhook'))) }))

export const WebhookDelivery = component('WebhookDelivery', Type.Object({
  seq: Type.Integer({ minimum: 0, description: 'The change attempted (0: a test send).' }),
  attempt: Type.Integer({ minimum: 1 }),
  at: Type.String({ description: 'When the attempt ended (its answer came, or it failed), RFC 3339, UTC, with milliseconds; it began durationMs before.' }),
  statusCode: Type.Union([Type.Integer(), Type.Null()], { description: 'The receiver\'s answer, or null when none came.' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why the attempt failed; null when delivered. An attempt whose answer came while its delivery was stopping (shutdown, pause) says so: it is not counted as a failure, and the change is tried again when delivery resumes.' }),
  durationMs: Type.Integer({ minimum: 0 }),
  response: Type.Union([Type.String(), Type.Null()], { description: 'What the receiver answered: the first 4 KiB of its body, as UTF-8 text (bytes that are not, a character cut at the limit, and NUL each shown as U+FFFD). null when no answer came, or for an attempt recorded before answers were kept.' }),
  event: Type.Union([Type.Unsafe<WebhookEvent | 'test'>({ type: 'string', enum: [...WEBHOOK_EVENTS, 'test'] }), Type.Null()], {
    description: 'What was sent: the change (created, updated, deleted), a stock event at that change (stock.low, stock.out: same seq), or a test send (seq 0). ' +
      'null for an attempt recorded before this was kept, or one at a change that could not be read (expired from the feed).'
  })
}))
export type WebhookDelivery = Static<typeof WebhookDelivery>

export const WebhookDeliveries = component('WebhookDeliveries', Type.Object({
  items: Type.Array(Type.Unsafe<WebhookDelivery>(Type.Ref('WebhookDelivery')), { description: 'Attempts, newest first, up to limit.' }),
  nextCursor: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'Pass as cursor for the older attempts; null when there are none.' })
}))

export const DeliveriesQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 100, description: 'Attempts on a page (at most 100).' })),
  cursor: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The nextCursor of the page before: the attempts older than those.' })),
  kind: Type.Optional(Type.Unsafe<AttemptKind>({
    type: 'string',
    enum: [...ATTEMPT_KINDS],
    default: 'all',
    description: 'changes: deliveries at changes only (their stock events included); tests: test sends only (POST /v3/webhooks/{id}/test, seq 0); all (default): both; ' +
      'created, updated, deleted, stock.low or stock.out: the attempts that sent that (`event`). The last 1000 deliveries and the last 1000 test sends are kept apart, so test sends never push deliveries out.'
  }))
}, { additionalProperties: false })

export const WebhookTest = component('WebhookTest', Type.Object({
  kind: Type.Unsafe<'test'>({ type: 'string', enum: ['test'] }),
  webhook: Type.Integer({ minimum: 1, description: 'The webhook sent to.' })
}, { description: 'The body of a test send.' }))

/** A component by name, typed loosely: the record, the movement and the level are the stock and plants resources' own. */
const named = (name: string, description: string): TSchema => Type.Unsafe({ ...Type.Ref(name), description })

export const StockEvent = component('StockEvent', Type.Object({
  kind: Type.Unsafe<StockEventKind>({ type: 'string', enum: [...STOCK_EVENT_KINDS] }),
  seq: Type.Integer({ minimum: 1, description: 'The change in the feed that crossed, a movement\'s or a reservation\'s hold (its updated change has the same seq).' }),
  id: Type.Integer({ minimum: 1 }),
  version: Type.Integer({ minimum: 1, description: 'The plant\'s version after the change.' }),
  actor: Type.String({ description: 'Who made the change: the name of the API key it came with, `anonymous` without one, `cli` for the command line.' }),
  at: Time,
  plant: named('Plant', 'The record after the change: its stock (the totals over every location) and lowStockAt.'),
  movement: Type.Union([named('Movement', 'The movement that crossed, as the ledger keeps it.'), Type.Null()], { description: 'The movement that crossed, as the ledger keeps it; null when a reservation\'s hold crossed.' }),
  level: Type.Union([named('StockLevel', 'The movement\'s location after it.'), Type.Null()], { description: 'The movement\'s location after it; null for a reservation (its lines may hold at several).' }),
  reservation: Type.Union([Type.String(), Type.Null()], { description: 'The reservation whose hold crossed (holding takes available down as a sale does); null for a movement.' })
}, {
  description: 'A plant crossing into low stock (stock.low: available from above lowStockAt to at or below it) or into none (stock.out: available from above 0 to 0), ' +
    'sent to the webhooks subscribed to it, once per crossing. A plant that stays low sends nothing more; lifted above and taken down again, it sends again.'
}))
