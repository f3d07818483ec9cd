import { CHANGE_KINDS, SECRET_OVERLAP_MS, WEBHOOK_EVENTS, type WebhookEvent, signingSecrets, type DeliveryAttempt, type Webhook } from '../catalogue/webhook.js'
import type { Config } from '../config.js'
import type { PlantStore } from '../store/plant-store.js'
import { serviceConfig } from './target.js'
import { withCatalogueStore } from './with-store.js'
import { CommandFailed, jsonArray, UsageError, type Command, type Io } from './command.js'
import { privateReach, shownUrl } from '../webhooks/target.js'

export const webhooksCommand: Command = {
  name: 'webhooks',
  usage: `Usage: plants webhooks add RECEIVER_URL [--events KINDS] [options]
       plants webhooks list [options]
       plants webhooks pause ID | resume ID | remove ID | test ID | rotate ID | deliveries ID [options]

Manages the webhooks stored in the catalogue (the same as /v3/webhooks), in its own database: a
data folder or DATABASE_URL, not a running service (--url): over HTTP, use /v3/webhooks with an
admin key. Every running instance picks a change up within seconds.

  add          subscribes RECEIVER_URL (where changes are POSTed) and prints its signing secret
               (whsec_…) once: copy it into the receiver now
  list         every webhook: STATUS (active, paused, failing), DELIVERED UP TO (the last change
               sent), and FAILURES (failed attempts at its next change, since when, when the next
               one is due, and the last error)
  pause        stops its deliveries; it keeps its place
  resume       delivers, in order, what it missed while paused or failing
  remove       removes it: nothing more is sent
  test         sends {"kind": "test", "webhook": ID}, signed, and says how the receiver answered
  rotate       prints a new signing secret once; the previous one keeps signing beside it for 24
               hours (two signatures in webhook-signature) while the receiver switches
  deliveries   its latest attempts (up to 100), newest first: the change (seq; - for a test
               send), what was sent (the change's kind, stock.low, stock.out or test; - for an
               attempt recorded before this was kept), the attempt at it, when, the receiver's
               status or the error, how long

Options:
  --events KINDS   add: comma-separated kinds of change to send (default created,updated,deleted; also stock.low, stock.out)
  --json           list, deliveries: a JSON array, each item as GET /v3/webhooks (or its
                   /deliveries) shows it
  --data-dir DIR   the service's data folder (default: the catalogue in $DATABASE_URL when set,
                   else $DATA_DIR, else ./data); one that holds no catalogue is refused
  -h, --help       this help`,
  options: {
    events: { type: 'string' },
    json: { type: 'boolean' },
    'data-dir': { type: 'string' },
    // Accepted to be refused with a way forward: --url names a running service in every command.
    url: { type: 'string' }
  },
  run: runWebhooks
}

const ACTIONS = 'add, list, pause, resume, remove, test, rotate or deliveries'

async function runWebhooks (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  const [action, arg, ...extra] = positionals
  if (extra.length > 0) throw new UsageError(`unexpected ${JSON.stringify(extra[0])}`)
  if (values.url !== undefined) {
    throw new UsageError('webhooks work on the catalogue\'s own database (--data-dir, or DATABASE_URL), not on a running service (--url): ' +
      'over HTTP, use /v3/webhooks with an admin key. A receiver\'s URL is add\'s argument: plants webhooks add https://…')
  }
  if (values.json === true && action !== 'list' && action !== 'deliveries') throw new UsageError('--json goes with list and deliveries')
  if (action === 'list') {
    if (arg !== undefined) throw new UsageError('list takes no argument')
    return await withCatalogueStore('webhooks', values, io, async (store) => {
      const webhooks = await store.webhooks.list()
      if (values.json !== true) io.stdout.write(table(webhooks))
      else {
        const { publicWebhook } = await import('../webhooks/routes.js')
        const now = Date.now()
        io.stdout.write(jsonArray(webhooks.map((w) => publicWebhook(w, now))))
      }
      return 0
    })
  }
  if (action === 'add') {
    if (arg === undefined) throw new UsageError('add takes the URL to send changes to')
    const events = eventsOf(values.events)
    const config = await serviceConfig(io)
    const { privateReach, resolvedProblem, targetProblem, webhookSendingTo } = await import('../webhooks/target.js')
    const reach = privateReach(config)
    const problem = targetProblem(arg, reach) ?? await resolvedProblem(arg, reach)
    // The switch is a way through only for an internal address, not for a URL that is malformed.
    const hint = !config.webhookAllowPrivate && /must not name a loopback/.test(problem ?? '') ? ' (WEBHOOK_ALLOW_PRIVATE=true allows internal receivers)' : ''
    // A receiver the catalogue does not allow is its refusal (exit 1, as a refused import row), not
    // a mistake in how the command was called; an argument that is no URL at all is one.
    if (problem !== undefined) throw URL.canParse(arg) ? new CommandFailed(`the URL ${problem}${hint}`) : new UsageError(`the URL ${problem}`)
    return await withCatalogueStore('webhooks', values, io, async (store) => {
      const { newSecret } = await import('../webhooks/signing.js')
      const holder = webhookSendingTo(await store.webhooks.list(), arg)
      if (holder !== undefined) throw new CommandFailed(`webhook ${holder.id} already sends to ${arg}: each change would be sent twice. Remove it first (plants webhooks remove ${holder.id}), or change its events over HTTP (PATCH /v3/webhooks/${holder.id})`)
      const secret = newSecret()
      const webhook = await store.webhooks.create({ url: arg, events, secret }, Date.now())
      io.stdout.write(`${secret}\n`)
      io.stderr.write(`added webhook ${webhook.id} for ${webhook.url} (${webhook.events.join(', ')}): the line above is its signing secret, shown this once\n`)
      // Allowed here by this command's own setting: the service decides when it sends, by its own.
      const internal = config.webhookAllowPrivate && (targetProblem(arg, false) ?? await resolvedProblem(arg, false)) !== undefined
      if (internal) io.stderr.write('note: an internal address: the service sends to it only while it runs with WEBHOOK_ALLOW_PRIVATE=true too\n')
      return 0
    })
  }
  if (action === 'pause' || action === 'resume' || action === 'remove' || action === 'test' || action === 'rotate' || action === 'deliveries') {
    const id = idOf(action, arg)
    return await withCatalogueStore('webhooks', values, io, async (store, config) => {
      if (action === 'remove') {
        if (!await store.webhooks.remove(id)) throw notFound(id)
        io.stdout.write(`removed webhook ${id}\n`)
        return 0
      }
      if (action === 'test') return await testSend(store, config, id, io)
      if (action === 'rotate') return await rotate(store, id, io)
      if (action === 'deliveries') {
        if (!await store.webhooks.get(id)) throw notFound(id)
        const attempts = await store.webhooks.deliveries(id, { limit: 100 })
        io.stdout.write(values.json === true ? jsonArray(attempts.map((await import('../webhooks/routes.js')).publicAttempt)) : deliveriesTable(attempts))
        return 0
      }
      const webhook = await store.webhooks.update(id, { status: action === 'pause' ? 'paused' : 'active' })
      if (!webhook) throw notFound(id)
      io.stdout.write(action === 'pause'
        ? `paused webhook ${id}: nothing is sent until it is resumed (it keeps its place)\n`
        : `resumed webhook ${id}: changes after ${webhook.cursor} are sent, in order\n`)
      return 0
    })
  }
  throw new UsageError(action === undefined ? `say ${ACTIONS}` : `unknown action ${JSON.stringify(action)}: say ${ACTIONS}`)
}

async function testSend (store: PlantStore, config: Config, id: number, io: Io): Promise<number> {
  const webhook = await store.webhooks.get(id)
  if (!webhook) throw notFound(id)
  const { WebhookClient } = await import('../webhooks/client.js')
  const { signedHeaders } = await import('../webhooks/signing.js')
  // The service's own settings: a test reaches what the service's deliveries would, and no more.
  const client = new WebhookClient({ allowPrivate: privateReach(config), timeoutMs: 10_000 })
  try {
    const at = Date.now()
    const body = JSON.stringify({ kind: 'test', webhook: id })
    const result = await client.post(webhook.url, body, signedHeaders(signingSecrets(webhook, at), `${id}-test-${at}`, Math.floor(at / 1000), body))
    await store.webhooks.recordAttempts(id, [{ seq: 0, attempt: 1, at, ...result }])
    if (result.error !== null) throw new CommandFailed(`webhook ${id} (${webhook.url}): ${result.error} after ${result.durationMs} ms`)
    io.stdout.write(`webhook ${id} (${webhook.url}) answered ${result.statusCode} in ${result.durationMs} ms\n`)
    return 0
  } finally {
    await client.close()
  }
}

async function rotate (store: PlantStore, id: number, io: Io): Promise<number> {
  const { newSecret } = await import('../webhooks/signing.js')
  const secret = newSecret()
  const at = Date.now()
  const webhook = await store.webhooks.rotateSecret(id, secret, at, at + SECRET_OVERLAP_MS)
  if (!webhook) throw notFound(id)
  io.stdout.write(`${secret}\n`)
  const until = webhook.previousSecretUntil!
  io.stderr.write(until < at + SECRET_OVERLAP_MS
    ? `rotated webhook ${id}'s secret again within a rotation's overlap: the line above is the new one, shown this once; the secret from before the first rotation keeps signing beside it until ${iso(until)}, the one in between no longer signs\n`
    : `rotated webhook ${id}'s secret: the line above is the new one, shown this once; the previous one keeps signing beside it until ${iso(until)}\n`)
  return 0
}

function eventsOf (text: string | undefined): WebhookEvent[] {
  if (text === undefined) return [...CHANGE_KINDS]
  const kinds = [...new Set(text.split(',').map((k) => k.trim()))]
  const wrong = kinds.find((k) => !(WEBHOOK_EVENTS as readonly string[]).includes(k))
  if (wrong !== undefined || kinds.length === 0) throw new UsageError(`--events must list kinds among ${WEBHOOK_EVENTS.join(', ')}, not ${JSON.stringify(wrong ?? text)}`)
  return kinds as WebhookEvent[]
}

function idOf (action: string, text: string | undefined): number {
  if (text === undefined) throw new UsageError(`${action} takes the webhook's ID (plants webhooks list shows them)`)
  if (!/^[1-9]\d{0,14}$/.test(text)) throw new UsageError(`the webhook ID is a positive integer, not ${JSON.stringify(text)}`)
  return Number(text)
}

const notFound = (id: number): CommandFailed => new CommandFailed(`no webhook ${id} (plants webhooks list shows them)`)

const iso = (ms: number | null): string => ms === null ? '-' : new Date(ms).toISOString()

/** What went wrong at a webhook's next change, and what comes next; '-' when nothing did. */
function failures (w: Webhook): string {
  if (w.attempts === 0) return w.lastError ?? '-'
  const tried = `${w.attempts} failed since ${iso(w.failingSince)}`
  if (w.status === 'failing') return `${tried}, retries ran out (resume to try again): ${w.lastError ?? '-'}`
  if (w.status === 'paused') return `${tried}, paused: ${w.lastError ?? '-'}`
  return `${tried}, next at ${iso(w.nextAttemptAt)}: ${w.lastError ?? '-'}`
}

function table (webhooks: Webhook[]): string {
  if (webhooks.length === 0) return 'no webhooks\n'
  return columns([['ID', 'STATUS', 'EVENTS', 'DELIVERED UP TO', 'URL', 'FAILURES'],
    ...webhooks.map((w) => [String(w.id), w.status, w.events.join(','), String(w.cursor), shownUrl(w.url), failures(w)])])
}

function deliveriesTable (attempts: DeliveryAttempt[]): string {
  if (attempts.length === 0) return 'no deliveries yet\n'
  return columns([['SEQ', 'EVENT', 'ATTEMPT', 'AT', 'STATUS', 'MS', 'ERROR'],
    ...attempts.map((a) => [a.seq === 0 ? '-' : String(a.seq), a.seq === 0 ? 'test' : a.event ?? '-', String(a.attempt), iso(a.at), a.statusCode === null ? '-' : String(a.statusCode), String(Math.round(a.durationMs)), a.error ?? '-'])])
}

function columns (rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)))
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd()).join('\n') + '\n'
}

/** The catalogue's own store (a data folder or PostgreSQL), opened for the command and closed after. */
