import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { PlantStore } from '../store/plant-store.js'

// Releases held reservations once their expiresAt has passed. Every instance runs one; only the one
// holding the expirer's lease (a row in the store, like a webhook's delivery lease) does the work,
// so a dead instance's duty passes to another once its lease runs out, and a restart after kill -9
// releases what fell overdue meanwhile on its first turns. Each release is itself a conditional
// write (held and overdue), so two expirers could never release one reservation twice.

export interface ExpirerOptions {
  /** How often it looks for overdue reservations (RESERVATION_EXPIRY_POLL_MS; tests set it small). */
  pollMs: number
  /** How long its lease lasts unrenewed (RESERVATION_LEASE_MS): another instance takes over after it. */
  leaseMs: number
}

/** Reservations released a write: a backlog (after an outage) is worked through in several. */
const PER_WRITE = 100

export class ReservationExpirer {
  private readonly owner = randomUUID()
  private timer: NodeJS.Timeout | undefined
  private running: Promise<void> | undefined
  private stopped = false
  private leasedUntil = 0

  constructor (private readonly store: PlantStore, private readonly log: FastifyBaseLogger, private readonly options: ExpirerOptions) {}

  start (): void {
    this.schedule(0)
  }

  private schedule (ms: number): void {
    if (this.stopped) return
    this.timer = setTimeout(() => {
      this.running = this.turn().finally(() => { this.running = undefined; this.schedule(this.options.pollMs) })
    }, ms)
    this.timer.unref()
  }

  /**
   * One turn: when a reservation is overdue (a read: an idle catalogue's turns write nothing, and a
   * service's start-up starts no writer), take or renew the lease; holding it, release them all.
   */
  async turn (): Promise<void> {
    try {
      if (!await this.store.stock.overdue()) return
      // This process's clock says only when to renew; the lease itself is kept by the store's clock.
      const now = Date.now()
      // Renewed once a quarter of it has passed, as the webhook deliverer does.
      if (now >= this.leasedUntil - (this.options.leaseMs * 3) / 4) {
        this.leasedUntil = await this.store.stock.leaseExpirer(this.owner, this.options.leaseMs) ? now + this.options.leaseMs : 0
      }
      if (this.leasedUntil === 0) return
      while (!this.stopped && await this.store.stock.expireReservations(PER_WRITE) === PER_WRITE);
    } catch (err) {
      this.log.warn({ err }, 'expired reservations could not be released; trying again shortly')
    }
  }

  async close (): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    await this.running
    // Given up on a clean stop: another instance takes over at once.
    if (this.leasedUntil > 0) await this.store.stock.releaseExpirer(this.owner).catch(() => {})
  }

  /** What a crash leaves behind (tests): the lease held until it runs out. */
  abandon (): void {
    this.stopped = true
    clearTimeout(this.timer)
  }
}
