import { Counter, Gauge, type Registry } from 'prom-client'
import type { WebhookLag } from '../store/webhook-store.js'

/** What the webhook gauges read: every webhook's place against the feed, from the store. */
export interface LagSource {
  lag (): Promise<WebhookLag[]>
  /** This instance's pacer (pacer.ts): whether it holds deliveries back now, and for how long it has in all. */
  pacing (): { holding: boolean, heldMs: number }
}

export const DELIVERY_OUTCOMES = ['delivered', 'failed', 'gave-up'] as const
export type DeliveryOutcome = typeof DELIVERY_OUTCOMES[number]

/** A scrape reads the store once for all the gauges below: the first collected reads, the others reuse it this long. */
const SHARED_MS = 1_000

/**
 * The webhook figures on /metrics: attempts by outcome (this instance's), and for every webhook its
 * lag and failures, computed from its stored cursor, so every instance shows the same, whichever
 * delivers it, and a paused or failing webhook shows how far behind it is.
 */
export class WebhookMetrics {
  private readonly attempts: Counter<'outcome'>
  private source: LagSource | undefined
  private read: { at: number, rows: Promise<WebhookLag[]> } | undefined

  constructor (registry?: Registry) {
    const registers = registry ? [registry] : []
    this.attempts = new Counter({ name: 'webhook_deliveries_total', help: 'Webhook delivery attempts, by outcome (gave-up: retries ran out, the webhook turned failing)', labelNames: ['outcome'], registers })
    // Every outcome is on /metrics from the start (at 0): an alert on gave-up can then see its first increase.
    for (const outcome of DELIVERY_OUTCOMES) this.attempts.inc({ outcome }, 0)
    const rows = (fresh = false): Promise<WebhookLag[]> => this.rows(fresh)
    // A scrape collects the metrics in the order they were registered: the first gauge reads afresh.
    let first = true
    const perWebhook = (name: string, help: string, value: (w: WebhookLag, now: number) => number): void => {
      const fresh = first
      first = false
      // eslint-disable-next-line no-new -- registered, and read through collect() when scraped
      new Gauge({
        name,
        help,
        labelNames: ['webhook'],
        registers,
        async collect () {
          const lags = await rows(fresh)
          this.reset()
          const now = Date.now()
          for (const w of lags) this.set({ webhook: String(w.id) }, value(w, now))
        }
      })
    }
    perWebhook('webhook_lag_changes', 'Changes committed after the webhook\'s stored cursor: not yet delivered (or passed over as not subscribed)',
      (w) => Math.max(0, w.head - w.cursor))
    perWebhook('webhook_lag_seconds', 'How long ago the oldest change after the webhook\'s stored cursor was committed (0 when it has every change)',
      (w, now) => w.oldestWaitingAt === null ? 0 : Math.max(0, now - w.oldestWaitingAt) / 1000)
    perWebhook('webhook_consecutive_failures', 'Failed attempts in a row at the change after the webhook\'s cursor (0 once it is delivered)',
      (w) => w.attempts)
    // eslint-disable-next-line no-new -- registered, and read through collect() when scraped
    new Gauge({
      name: 'webhooks_failing',
      help: 'Webhooks whose retries ran out (status failing): they keep their place until resumed',
      registers,
      async collect () {
        this.set((await rows()).filter((w) => w.status === 'failing').length)
      }
    })
    const pacing = (): { holding: boolean, heldMs: number } => this.source?.pacing() ?? { holding: false, heldMs: 0 }
    // eslint-disable-next-line no-new -- registered, and read through collect() when scraped
    new Gauge({
      name: 'webhook_deliveries_held',
      help: '1 while this instance holds deliveries back (requests queueing on it while it is busy: 200 deliveries a second across its webhooks), else 0',
      registers,
      collect () { this.set(pacing().holding ? 1 : 0) }
    })
    // eslint-disable-next-line no-new -- registered, and read through collect() when scraped
    new Counter({
      name: 'webhook_deliveries_held_seconds_total',
      help: 'Time this instance has held deliveries back for requests (its rate: the share of time held)',
      registers,
      collect () {
        this.reset()
        this.inc(pacing().heldMs / 1000)
      }
    })
  }

  /** The store's answer, shared by the gauges of one scrape; a store that cannot answer shows no webhooks. */
  private async rows (fresh: boolean): Promise<WebhookLag[]> {
    if (this.source === undefined) return []
    const now = Date.now()
    if (fresh || this.read === undefined || now - this.read.at > SHARED_MS) this.read = { at: now, rows: this.source.lag().catch(() => []) }
    return await this.read.rows
  }

  watch (source: LagSource): void { this.source ??= source }
  delivered (outcome: DeliveryOutcome): void { this.attempts.inc({ outcome }) }
}
