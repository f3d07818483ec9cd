import type { FastifyBaseLogger } from 'fastify'
import { FeedGone } from '../catalogue/errors.js'
import { CUT_BY_SHUTDOWN, signingSecrets, type DeliveryAttempt, type Webhook } from '../catalogue/webhook.js'
import type { PlantStore } from '../store/plant-store.js'
import type { AttemptOutcome } from '../store/webhook-store.js'
import type { SendResult, WebhookClient } from './client.js'
import { DeliveredLog } from './delivered-log.js'
import { sendsOf, type FeedPage, type FeedWindow, type Send } from './feed-window.js'
import type { WebhookMetrics } from './metrics.js'
import type { DeliveryPacer } from './pacer.js'
import { signedHeaders } from './signing.js'
import { shownUrl } from './target.js'

/** Changes read at once per webhook; each is still sent alone, in order. */
export const PAGE = 100
/** Deliveries held between two saves at most (FLUSH_MS apart): only the newest are recorded when more come. */
const HELD_BETWEEN_SAVES = 100
/** The longest deliveries wait to be recorded together (the cursor moves with them). */
const FLUSH_MS = 100

/** What a loop needs of the deliverer that runs it (deliverer.ts), which holds what every loop shares. */
export interface LoopHost {
  readonly store: PlantStore
  readonly log: FastifyBaseLogger
  readonly client: WebhookClient
  /** The newest changes, read and serialised once for every loop. */
  readonly feed: FeedWindow
  readonly pacer: DeliveryPacer
  readonly metrics?: WebhookMetrics
  readonly settings: { leaseMs: number, retryForMs: number, retryDelayMs: (failures: number) => number, now: () => number }
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
  /**
   * The parts of the change after the cursor already delivered (a change and its stock events go
   * in parts): kept here, not stored, so only a crash or a hand-over sends them again.
   */
  private partial: { seq: number, sent: Set<string> } | undefined
  /** Deliveries made since the last save. */
  private readonly delivered = new DeliveredLog(HELD_BETWEEN_SAVES)

  constructor (private readonly deliverer: LoopHost, readonly id: number, private readonly owner: string) {}

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
      const sends = sendsOf(webhook.events, change)
      if (sends.length === 0) {
        // Not subscribed: passed over, the cursor moves on with the next delivery (or now, at the page's end).
        this.cursor = change.seq
        continue
      }
      // A change with stock events is sent in parts; the cursor passes it once every part is delivered,
      // and a retry sends only the parts not delivered yet (after a crash, all of them again). By
      // webhook-id, not by count: the webhook's events may have changed in between.
      if (this.partial?.seq !== change.seq) this.partial = { seq: change.seq, sent: new Set() }
      const { sent } = this.partial
      const left = sends.filter((p) => !sent.has(p.suffix))
      if (left.length === 0) {
        this.cursor = change.seq
        this.partial = undefined
        continue
      }
      for (let part = 0; part < left.length; part++) {
        /** A part delivered: the cursor moves past the change with its last part. */
        const passed = (): void => {
          sent.add(left[part].suffix)
          if (part === left.length - 1) {
            this.cursor = change.seq
            this.partial = undefined
          }
        }
        if (this.stopped || !await this.holdLease(settings.now())) { await save(); return 0 }
        await this.deliverer.pacer.turn()
        if (this.stopped) { await save(); return 0 }
        const result = await this.send(webhook, left[part])
        const tried = settings.now()
        // Stopped meanwhile (the service stopping, the webhook paused or handed over): the attempt is
        // recorded, not lost. Delivered, the cursor moves on; failed, the failure is not counted
        // against the receiver (its retries and 3 days are not the stop's doing): the change is sent
        // again by whoever delivers next.
        if (this.crashed) return 0
        if (this.stopped) {
          if (result.error === null) {
            passed()
            delivered.add(change.seq, attempts + 1, tried, result.statusCode, result.durationMs, result.response, left[part].event)
            await save()
          } else {
            // In the log alone: the webhook's retry state may be another instance's by now.
            await save()
            await webhooks.recordAttempts(this.id, [{ seq: change.seq, attempt: attempts + 1, at: tried, ...result, error: `${result.error}; ${CUT_BY_SHUTDOWN}`, event: left[part].event }])
          }
          return 0
        }
        if (result.error === null) {
          this.deliverer.metrics?.delivered('delivered')
          passed()
          delivered.add(change.seq, attempts + 1, tried, result.statusCode, result.durationMs, result.response, left[part].event)
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
        await save({ attempt: { seq: change.seq, attempt: attempts + 1, at: tried, ...result, event: left[part].event }, outcome })
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
    }
    // The page's end: what was delivered, and any changes passed over as not subscribed, move its place.
    await save()
    return 0
  }

  private async send (webhook: Webhook, send: Send): Promise<SendResult> {
    const { client, settings } = this.deliverer
    const now = settings.now()
    const headers = signedHeaders(signingSecrets(webhook, now), `${webhook.id}-${send.suffix}`, Math.floor(now / 1000), send.body)
    return await client.post(webhook.url, send.body, headers)
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
