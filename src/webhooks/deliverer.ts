import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { FeedGone } from '../catalogue/errors.js'
import { CUT_BY_SHUTDOWN, signingSecrets, type DeliveryAttempt, type Webhook } from '../catalogue/webhook.js'
import type { PlantStore } from '../store/plant-store.js'
import type { AttemptOutcome, WebhookLag } from '../store/webhook-store.js'
import { WebhookClient, type SendResult } from './client.js'
import { FeedWindow, type FeedEntry, type FeedPage } from './feed-window.js'
import type { WebhookMetrics } from './metrics.js'
import { DeliveryPacer, type PacerSignals } from './pacer.js'
import { RETRY_FOR_MS, retryDelayMs } from './retry.js'
import { signedHeaders } from './signing.js'
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

/** Changes read at once per webhook; each is still sent alone, in order. */
const PAGE = 100
/** Deliveries held between two saves at most (FLUSH_MS apart): only the newest are recorded when more come. */
const HELD_BETWEEN_SAVES = 100
/** The longest deliveries wait to be recorded together (the cursor moves with them). */
const FLUSH_MS = 100
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

/** One webhook's deliveries: the next change after its cursor, sent until delivered or given up, then the one after. */
export class DeliveryLoop {
  private stopped = false
  /** Stopped as a crash would stop it (tests): nothing more is written. */
  private crashed = false
  /** The loop has returned: its webhook is no longer active here, or it was stopped. */
  ended = false
  private sleeping: { timer: NodeJS.Timeout, resolve: () => void } | undefined
  private done: Promise<void> = Promise.resolve()
  /** Lease held until (epoch ms), as this instance last took it. */
  private leasedUntil = 0
  /** The last change delivered here (or passed over), ahead of the stored cursor by at most a flush. */
  cursor = 0
  /** Waiting for a retry's time: commits do not wake it (a dead receiver's loop would otherwise read on every write). */
  private retrying = false
  /** Deliveries made since the last save. */
  private readonly delivered = new DeliveredLog(HELD_BETWEEN_SAVES)

  constructor (private readonly deliverer: WebhookDeliverer, readonly id: number, private readonly owner: string) {}

  start (): void {
    this.done = this.run()
  }

  get waitingToRetry (): boolean { return this.retrying }

  /** A commit: a loop waiting for new changes reads them now; one waiting to retry a failed change keeps waiting. */
  committed (): void {
    if (!this.retrying) this.wake()
  }

  wake (): void {
    const sleeping = this.sleeping
    if (!sleeping) return
    this.sleeping = undefined
    clearTimeout(sleeping.timer)
    sleeping.resolve()
  }

  abandon (): void {
    this.crashed = true
    this.stopped = true
    this.leasedUntil = 0
    this.wake()
  }

  async stop (): Promise<void> {
    this.stopped = true
    this.wake()
    await this.done
    if (this.leasedUntil > 0) await this.deliverer.store.webhooks.release(this.id, this.owner).catch(() => {})
  }

  private sleep (ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped) { resolve(); return }
      this.sleeping = { timer: setTimeout(() => { this.sleeping = undefined; resolve() }, Math.max(0, ms)), resolve }
      this.sleeping.timer.unref()
    })
  }

  private async run (): Promise<void> {
    const { log } = this.deliverer
    while (!this.stopped) {
      try {
        const wait = await this.step()
        if (wait > 0) await this.sleep(wait)
      } catch (err) {
        if (this.stopped) break
        log.warn({ err, webhook: this.id }, 'webhook delivery interrupted; trying again shortly')
        await this.sleep(1_000)
      }
    }
    this.ended = true
  }

  /** Does what is due now; resolves to how long to wait before the next step (0: at once). */
  private async step (): Promise<number> {
    const { store, settings, feed } = this.deliverer
    const webhooks = store.webhooks
    const now = settings.now()
    if (!await this.holdLease(now)) return settings.leaseMs / 4
    const webhook = await webhooks.get(this.id)
    if (!webhook || webhook.status !== 'active') { this.stopped = true; return 0 }
    this.cursor = webhook.cursor
    this.retrying = webhook.nextAttemptAt !== null && webhook.nextAttemptAt > now
    if (this.retrying) return Math.min(webhook.nextAttemptAt! - now, settings.leaseMs / 4)
    let page: FeedPage
    try {
      // After a failure, one change: a receiver still down fails it again, and a page read for it
      // (on its own, behind the shared window) would be thrown away at every retry.
      page = await feed.read(webhook.cursor, webhook.attempts > 0 ? 1 : PAGE)
    } catch (err) {
      if (!(err instanceof FeedGone)) throw err
      // The feed no longer holds what this webhook missed: it cannot be sent, so say so and stop.
      const lastError = `the changes after ${webhook.cursor} have expired from the change feed (or the database was replaced)`
      await webhooks.recordAttempts(this.id, [{ seq: webhook.cursor + 1, attempt: webhook.attempts + 1, at: now, statusCode: null, error: lastError, durationMs: 0 }],
        { cursor: webhook.cursor, attempts: webhook.attempts + 1, nextAttemptAt: null, failingSince: webhook.failingSince ?? now, lastError, failing: true })
      this.deliverer.log.error({ webhook: this.id, url: shownUrl(webhook.url) }, 'webhook failing: ' + lastError)
      return 0
    }
    if (page.start === page.end) return settings.leaseMs / 4 // woken by a commit sooner
    let attempts = webhook.attempts
    let failingSince = webhook.failingSince
    // Deliveries are recorded together, at most FLUSH_MS apart (and before anything else is): a cursor
    // write per change would cost a commit each. A crash in between only means those few are sent again.
    const delivered = this.delivered
    delivered.clear()
    let savedCursor = webhook.cursor
    let savedAt = settings.now()
    const save = async (failure?: { attempt: DeliveryAttempt, outcome: AttemptOutcome }): Promise<void> => {
      const cursor = this.cursor
      const outcome = failure?.outcome ?? { cursor, attempts: 0, nextAttemptAt: null, failingSince: null, lastError: null, failing: false }
      if (!failure && delivered.size === 0 && cursor === savedCursor) return
      const recorded = delivered.take()
      if (failure) recorded.push(failure.attempt)
      await webhooks.recordAttempts(this.id, recorded, outcome)
      savedCursor = cursor
      savedAt = settings.now()
    }
    for (let i = page.start; i < page.end; i++) {
      const change = page.entries[i]
      if (this.stopped || !await this.holdLease(settings.now())) { await save(); return 0 }
      if (!webhook.events.includes(change.kind)) {
        // Not subscribed: passed over, the cursor moves on with the next delivery (or now, at the page's end).
        this.cursor = change.seq
        continue
      }
      await this.deliverer.pacer.turn()
      if (this.stopped) { await save(); return 0 }
      const result = await this.send(webhook, change)
      const tried = settings.now()
      // Stopped meanwhile (the service stopping, the webhook paused or handed over): the attempt is
      // recorded, not lost. Delivered, the cursor moves on; failed, the failure is not counted
      // against the receiver (its retries and 3 days are not the stop's doing): the change is sent
      // again by whoever delivers next.
      if (this.crashed) return 0
      if (this.stopped) {
        if (result.error === null) {
          this.cursor = change.seq
          delivered.add(change.seq, attempts + 1, tried, result.statusCode, result.durationMs, result.response)
          await save()
        } else {
          // In the log alone: the webhook's retry state may be another instance's by now.
          await save()
          await webhooks.recordAttempts(this.id, [{ seq: change.seq, attempt: attempts + 1, at: tried, ...result, error: `${result.error}; ${CUT_BY_SHUTDOWN}` }])
        }
        return 0
      }
      if (result.error === null) {
        this.deliverer.metrics?.delivered('delivered')
        this.cursor = change.seq
        delivered.add(change.seq, attempts + 1, tried, result.statusCode, result.durationMs, result.response)
        if (tried - savedAt >= FLUSH_MS) await save()
        attempts = 0
        failingSince = null
        continue
      }
      // Its URL changed while this attempt was out: the failure was the old address's. Not recorded
      // against the new one (a reviewer saw a new receiver blamed for the old one's timeout, and not
      // tried for the retry's delay); the new address is tried at once.
      if ((await webhooks.get(this.id))?.url !== webhook.url) { await save(); return 0 }
      failingSince ??= tried
      const failing = tried - failingSince >= settings.retryForMs
      const outcome: AttemptOutcome = {
        cursor: this.cursor,
        attempts: attempts + 1,
        nextAttemptAt: failing ? null : tried + settings.retryDelayMs(attempts + 1),
        failingSince,
        lastError: result.error,
        failing
      }
      this.deliverer.metrics?.delivered(failing ? 'gave-up' : 'failed')
      this.retrying = !failing
      await save({ attempt: { seq: change.seq, attempt: attempts + 1, at: tried, ...result }, outcome })
      // One line per failed attempt: the URL and why, never the secret.
      const next = outcome.nextAttemptAt === null ? null : new Date(outcome.nextAttemptAt).toISOString()
      const log = { webhook: this.id, url: shownUrl(webhook.url), seq: change.seq, attempt: attempts + 1, statusCode: result.statusCode, error: result.error, nextAttemptAt: next }
      if (failing) {
        this.deliverer.log.error(log, 'webhook failing: retries ran out; it keeps its place until resumed')
        this.stopped = true
      } else {
        this.deliverer.log.warn(log, 'webhook delivery failed; will retry')
      }
      return 0
    }
    // The page's end: what was delivered, and any changes passed over as not subscribed, move its place.
    await save()
    return 0
  }

  private async send (webhook: Webhook, change: FeedEntry): Promise<SendResult> {
    const { client, settings } = this.deliverer
    const now = settings.now()
    const headers = signedHeaders(signingSecrets(webhook, now), `${webhook.id}-${change.seq}`, Math.floor(now / 1000), change.body)
    return await client.post(webhook.url, change.body, headers)
  }

  private async holdLease (now: number): Promise<boolean> {
    const { settings, store } = this.deliverer
    // Renewed once a quarter of it has passed: a lease read on every change would cost a write each.
    if (now < this.leasedUntil - (settings.leaseMs * 3) / 4) return true
    const until = now + settings.leaseMs
    const held = await store.webhooks.lease(this.id, this.owner, until, now)
    this.leasedUntil = held ? until : 0
    return held
  }
}

/**
 * The newest delivered attempts since a save, as numbers in one array rather than an object each:
 * kept until the next save (up to FLUSH_MS), objects made for every delivery outlived the young
 * generation and were promoted, and with 50 fast receivers the old generation grew by tens of
 * megabytes between collections (the webhooks' memory target). Only the newest `kept` can matter:
 * the store keeps no more per webhook.
 */
export class DeliveredLog {
  private readonly fields: Float64Array
  /** What each receiver answered, beside its numbers (most often '' or a short word). */
  private readonly responses: Array<string | null>
  private next = 0
  size = 0

  constructor (private readonly kept: number) {
    this.fields = new Float64Array(kept * 5)
    this.responses = new Array<string | null>(kept).fill(null)
  }

  add (seq: number, attempt: number, at: number, statusCode: number | null, durationMs: number, response: string | null): void {
    this.responses[this.next] = response
    const at5 = this.next * 5
    this.fields[at5] = seq
    this.fields[at5 + 1] = attempt
    this.fields[at5 + 2] = at
    this.fields[at5 + 3] = statusCode ?? -1
    this.fields[at5 + 4] = durationMs
    this.next = (this.next + 1) % this.kept
    this.size = Math.min(this.size + 1, this.kept)
  }

  /** The attempts held, oldest first; the log is empty afterwards. */
  take (): DeliveryAttempt[] {
    const taken: DeliveryAttempt[] = []
    for (let i = 0; i < this.size; i++) {
      const slot = (this.next - this.size + i + this.kept) % this.kept
      const at5 = slot * 5
      const statusCode = this.fields[at5 + 3]
      taken.push({ seq: this.fields[at5], attempt: this.fields[at5 + 1], at: this.fields[at5 + 2], statusCode: statusCode < 0 ? null : statusCode, error: null, durationMs: this.fields[at5 + 4], response: this.responses[slot] })
      this.responses[slot] = null
    }
    this.clear()
    return taken
  }

  clear (): void {
    this.size = 0
    this.next = 0
  }
}
