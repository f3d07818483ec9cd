import { CHANGE_KINDS, signingSecrets, type Webhook } from '../catalogue/webhook.js'
import type { ChangeKind } from '../catalogue/changes.js'
import type { Config } from '../config.js'
import type { PlantStore } from '../store/plant-store.js'
import { serviceConfig } from './catalogue.js'
import { withCatalogueStore } from './catalogue-store.js'
import { CommandFailed, UsageError, type Command, type Io } from './command.js'
import { shownUrl } from '../webhooks/target.js'

export const webhooksCommand: Command = {
  name: 'webhooks',
  usage: `Usage: plants webhooks add URL [--events KINDS] [options]
       plants webhooks list [options]
       plants webhooks pause ID | resume ID | remove ID | test ID [options]

Manages the webhooks stored in the catalogue (the same as /v3/webhooks). Every running instance
picks a change within seconds. add prints the webhook's signing secret (whsec_…) once: copy it
into the receiver now. resume delivers, in order, what the webhook missed while paused or failing.
test sends {"kind": "test", "webhook": ID}, signed, and says how the receiver answered.

Options:
  --events KINDS   add: comma-separated kinds of change to send (default created,updated,deleted)
  --data-dir DIR   the service's data folder (default: the catalogue in $DATABASE_URL when set,
                   else $DATA_DIR, else ./data); one that holds no catalogue is refused
  -h, --help       this help`,
  options: {
    events: { type: 'string' },
    'data-dir': { type: 'string' }
  },
  run: runWebhooks
}

const ACTIONS = 'add, list, pause, resume, remove or test'

async function runWebhooks (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  const [action, arg, ...extra] = positionals
  if (extra.length > 0) throw new UsageError(`unexpected ${JSON.stringify(extra[0])}`)
  if (action === 'list') {
    if (arg !== undefined) throw new UsageError('list takes no argument')
    return await withCatalogueStore('webhooks', values, io, async (store) => { io.stdout.write(table(await store.webhooks.list())); return 0 })
  }
  if (action === 'add') {
    if (arg === undefined) throw new UsageError('add takes the URL to send changes to')
    const events = eventsOf(values.events)
    const config = await serviceConfig(io)
    const { resolvedProblem, targetProblem } = await import('../webhooks/target.js')
    const problem = targetProblem(arg, config.webhookAllowPrivate) ?? await resolvedProblem(arg, config.webhookAllowPrivate)
    if (problem !== undefined) throw new UsageError(`the URL ${problem}${config.webhookAllowPrivate ? '' : ' (WEBHOOK_ALLOW_PRIVATE=true allows internal receivers)'}`)
    return await withCatalogueStore('webhooks', values, io, async (store) => {
      const { newSecret } = await import('../webhooks/signing.js')
      const secret = newSecret()
      const webhook = await store.webhooks.create({ url: arg, events, secret }, Date.now())
      io.stdout.write(`${secret}\n`)
      io.stderr.write(`added webhook ${webhook.id} for ${webhook.url} (${webhook.events.join(', ')}): the line above is its signing secret, shown this once\n`)
      return 0
    })
  }
  if (action === 'pause' || action === 'resume' || action === 'remove' || action === 'test') {
    const id = idOf(action, arg)
    return await withCatalogueStore('webhooks', values, io, async (store, config) => {
      if (action === 'remove') {
        if (!await store.webhooks.remove(id)) throw notFound(id)
        io.stdout.write(`removed webhook ${id}\n`)
        return 0
      }
      if (action === 'test') return await testSend(store, config, id, io)
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
  const client = new WebhookClient({ allowPrivate: config.webhookAllowPrivate, timeoutMs: 10_000 })
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

function eventsOf (text: string | undefined): ChangeKind[] {
  if (text === undefined) return [...CHANGE_KINDS]
  const kinds = [...new Set(text.split(',').map((k) => k.trim()))]
  const wrong = kinds.find((k) => !(CHANGE_KINDS as readonly string[]).includes(k))
  if (wrong !== undefined || kinds.length === 0) throw new UsageError(`--events must list kinds among ${CHANGE_KINDS.join(', ')}, not ${JSON.stringify(wrong ?? text)}`)
  return kinds as ChangeKind[]
}

function idOf (action: string, text: string | undefined): number {
  if (text === undefined) throw new UsageError(`${action} takes the webhook's ID (plants webhooks list shows them)`)
  if (!/^[1-9]\d{0,14}$/.test(text)) throw new UsageError(`the webhook ID is a positive integer, not ${JSON.stringify(text)}`)
  return Number(text)
}

const notFound = (id: number): CommandFailed => new CommandFailed(`no webhook ${id} (plants webhooks list shows them)`)

function table (webhooks: Webhook[]): string {
  if (webhooks.length === 0) return 'no webhooks\n'
  const rows = [['ID', 'STATUS', 'EVENTS', 'DELIVERED UP TO', 'URL', 'LAST ERROR'],
    ...webhooks.map((w) => [String(w.id), w.status, w.events.join(','), String(w.cursor), shownUrl(w.url), w.lastError ?? '-'])]
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)))
  return rows.map((r) => r.map((cell, i) => cell.padEnd(widths[i])).join('  ').trimEnd()).join('\n') + '\n'
}

/** The catalogue's own store (a data folder or PostgreSQL), opened for the command and closed after. */
