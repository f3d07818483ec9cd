import { Counter, Gauge, type Registry } from 'prom-client'

/** What the lag gauges read of a deliverer: its loops, each where it is and what it has seen. */
export interface LagSource {
  /** How many webhooks are failing (read from the store: every instance shows the same). */
  failing (): Promise<number>
  readonly running: ReadonlyMap<number, { readonly id: number, readonly cursor: number, readonly headSeen: number, readonly oldestPendingAt: number | undefined }>
}

export const DELIVERY_OUTCOMES = ['delivered', 'failed', 'gave-up'] as const
export type DeliveryOutcome = typeof DELIVERY_OUTCOMES[number]

/** The webhook figures on /metrics: attempts by outcome, and how far each webhook this instance delivers is behind. */
export class WebhookMetrics {
  private readonly attempts: Counter<'outcome'>
  private deliverers: LagSource[] = []

  constructor (registry?: Registry) {
    const registers = registry ? [registry] : []
    this.attempts = new Counter({ name: 'webhook_deliveries_total', help: 'Webhook delivery attempts, by outcome (gave-up: retries ran out, the webhook turned failing)', labelNames: ['outcome'], registers })
    // Every outcome is on /metrics from the start (at 0): an alert on gave-up can then see its first increase.
    for (const outcome of DELIVERY_OUTCOMES) this.attempts.inc({ outcome }, 0)
    this.failingGauge(registers)
    const loops = () => this.deliverers.flatMap((d) => [...d.running.values()])
    // eslint-disable-next-line no-new -- registered, and read through collect() when scraped
    new Gauge({
      name: 'webhook_lag_changes',
      help: 'Changes committed that a webhook delivered by this instance has not yet received (as last read)',
      labelNames: ['webhook'],
      registers,
      collect () {
        this.reset()
        for (const loop of loops()) this.set({ webhook: String(loop.id) }, Math.max(0, loop.headSeen - loop.cursor))
      }
    })
    // eslint-disable-next-line no-new -- registered, and read through collect() when scraped
    new Gauge({
      name: 'webhook_lag_seconds',
      help: 'How long ago the oldest change a webhook delivered by this instance is waiting to send was made',
      labelNames: ['webhook'],
      registers,
      collect () {
        this.reset()
        const now = Date.now()
        for (const loop of loops()) this.set({ webhook: String(loop.id) }, loop.oldestPendingAt === undefined ? 0 : Math.max(0, (now - loop.oldestPendingAt) / 1000))
      }
    })
  }

  private failingGauge (registers: Registry[]): void {
    const deliverers = (): LagSource[] => this.deliverers
    // eslint-disable-next-line no-new -- registered, and read through collect() when scraped
    new Gauge({
      name: 'webhooks_failing',
      help: 'Webhooks whose retries ran out (status failing): they keep their place until resumed',
      registers,
      async collect () {
        const [first] = deliverers()
        this.set(first === undefined ? 0 : await first.failing().catch(() => 0))
      }
    })
  }

  watch (deliverer: LagSource): void { this.deliverers.push(deliverer) }
  delivered (outcome: DeliveryOutcome): void { this.attempts.inc({ outcome }) }
}
