import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { Webhook } from '../catalogue/webhook.js'
import type { PlantStore } from '../store/plant-store.js'
import type { WebhookLag } from '../store/webhook-store.js'
import { WebhookClient } from './client.js'
import { DeliveryLoop, PAGE } from './delivery-loop.js'
import { FeedWindow } from './feed-window.js'
import type { WebhookMetrics } from './metrics.js'
import { DeliveryPacer, type PacerSignals } from './pacer.js'
import { RETRY_FOR_MS, retryDelayMs } from './retry.js'
import { literalProblem, shownUrl, type PrivateReach } from './target.js'

export interface DelivererOptions {
  allowPrivate: PrivateReach
  /** The longest an attempt may take (default 10 s). */
  timeoutMs?: number
  /** The delay before the next attempt after `failures` failures (tests shrink it). */
  retryDelayMs?: (failures: number) => number
  /** How long retries go on before the webhook turns failing (default 3 days). */
  retryForMs?: number
  /** How long a lease lasts (default 20 s: another instance takes over within 30 s of a death). */
  leaseMs?: number
  now?: () => number
  /** Deliveries yield to requests (pacer.ts): the app gives the time spent in requests; tests may give every signal and tick by hand. */
  pacing?: Partial<PacerSignals> & { manual?: boolean }
}

/** How often the list of webhooks is read again (another instance may have added or paused one). */
const RESCAN_MS = 5_000

/**
 * Pushes the change feed to every active webhook: one loop per webhook, each with its own cursor
 * (kept in the store) and its own timers, so a slow or dead receiver holds up only itself. A
 * webhook is delivered by one instance at a time, the one holding its lease.
 */
export class WebhookDeliverer {
  private readonly loops = new Map<number, DeliveryLoop>()
  /** Webhooks already warned of as never sent to while WEBHOOK_ALLOW_PRIVATE is off: once each, not every scan. */
  private readonly warned = new Set<number>()
  private readonly owner = randomUUID()
  readonly client: WebhookClient
  /** The newest changes, read and serialised once for every loop. */
  readonly feed: FeedWindow
  private timer: NodeJS.Timeout | undefined
  private unsubscribe: (() => void) | undefined
  private stopped = false
  private scanning: Promise<void> | undefined
  readonly settings: Required<Omit<DelivererOptions, 'now' | 'pacing'>> & { now: () => number }
  readonly pacer: DeliveryPacer

  constructor (readonly store: PlantStore, readonly log: FastifyBaseLogger, options: DelivererOptions, readonly metrics?: WebhookMetrics) {
    this.settings = {
      allowPrivate: options.allowPrivate,
      timeoutMs: options.timeoutMs ?? 10_000,
      retryDelayMs: options.retryDelayMs ?? ((failures) => retryDelayMs(failures)),
      retryForMs: options.retryForMs ?? RETRY_FOR_MS,
      leaseMs: options.leaseMs ?? 20_000,
      now: options.now ?? Date.now
    }
    this.client = new WebhookClient({ allowPrivate: options.allowPrivate, timeoutMs: this.settings.timeoutMs })
    this.feed = new FeedWindow(store, undefined, PAGE, () => this.oldestWanted())
    this.pacer = new DeliveryPacer(options.pacing)
    metrics?.watch(this)
  }

  start (): void {
    this.unsubscribe = this.store.onCommit(() => { for (const loop of this.loops.values()) loop.committed() })
    this.timer = setInterval(() => { void this.rescan() }, RESCAN_MS).unref()
    void this.rescan()
  }

  /** Reads the webhooks again now: after this process adds, changes or removes one. */
  rescan (): Promise<void> {
    this.scanning ??= this.scan().finally(() => { this.scanning = undefined })
    return this.scanning
  }

  get running (): ReadonlyMap<number, DeliveryLoop> { return this.loops }

  /**
   * The oldest cursor of a loop that reads the shared window next. A loop waiting to retry is left
   * out: its receiver is down, it sends one change a retry, and reads it on its own when the time
   * comes (otherwise one dead receiver would keep the whole window in memory).
   */
  private oldestWanted (): number {
    let oldest = Infinity
    for (const loop of this.loops.values()) {
      if (!loop.ended && !loop.waitingToRetry && loop.cursor < oldest) oldest = loop.cursor
    }
    return oldest === Infinity ? -1 : oldest
  }

  pacing (): { holding: boolean, heldMs: number } { return { holding: this.pacer.holding, heldMs: this.pacer.heldMs } }

  /** Every webhook's place against the feed (the metrics), from the store. */
  async lag (): Promise<WebhookLag[]> {
    return await this.store.webhooks.lag()
  }

  async close (): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    this.unsubscribe?.()
    this.pacer.close() // before the loops are awaited: one held back would wait for a window that never comes
    await Promise.all([...this.loops.values()].map((loop) => loop.stop()))
    this.loops.clear()
    await this.client.close()
  }

  /** What a crash leaves behind (tests): the loops stop where they are, their leases held until they expire. */
  abandon (): void {
    this.stopped = true
    clearInterval(this.timer)
    this.unsubscribe?.()
    this.pacer.close()
    for (const loop of this.loops.values()) loop.abandon()
    this.loops.clear()
    void this.client.close()
  }

  private async scan (): Promise<void> {
    let webhooks: Webhook[]
    try {
      webhooks = await this.store.webhooks.list()
    } catch (err) {
      this.log.warn({ err }, 'webhooks could not be read; trying again shortly')
      return
    }
    if (this.stopped) return
    const active = new Map(webhooks.filter((w) => w.status === 'active').map((w) => [w.id, w]))
    for (const [id, loop] of this.loops) {
      if (!active.has(id)) {
        this.loops.delete(id)
        void loop.stop()
      }
    }
    for (const webhook of active.values()) {
      // Saved while private receivers were allowed: it stays active and retries for 3 days, which no
      // retry can fix, so the operator is told at once (a reviewer restarted without the flag and saw
      // an active webhook, webhooks_failing 0, and no delivery).
      const refused = literalProblem(webhook.url, this.settings.allowPrivate)
      if (refused !== undefined && !this.warned.has(webhook.id)) {
        this.warned.add(webhook.id)
        const fix = this.settings.allowPrivate === false
          ? `while WEBHOOK_ALLOW_PRIVATE is off: its URL ${refused}; set WEBHOOK_ALLOW_PRIVATE=true, or give it another URL`
          : `by these settings: its URL ${refused}; give it another URL`
        this.log.warn({ webhook: webhook.id, url: shownUrl(webhook.url) }, `webhook ${webhook.id} is never sent to ${fix}`)
      }
      let loop = this.loops.get(webhook.id)
      // A loop that stopped by itself (its webhook turned failing or was paused) starts afresh when resumed.
      if (!loop || loop.ended) {
        loop = new DeliveryLoop(this, webhook.id, this.owner)
        this.loops.set(webhook.id, loop)
        loop.start()
      } else {
        loop.wake()
      }
    }
  }
}
