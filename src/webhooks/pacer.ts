import { availableParallelism } from 'node:os'
import { performance, type EventLoopUtilization } from 'node:perf_hooks'

/** How often the pacer looks at the process, and the span its budget of sends covers. */
export const PACE_WINDOW_MS = 100
/**
 * The process counts as busy from this share of its time working (see PacerSignals.utilization)…
 * Half, not more: with many writers on the bench's one core, a service waiting on its commits'
 * fsyncs works most of the time, and a higher threshold held the pacer in only some windows,
 * delivering faster while POSTs slowed. Requests still queue there: each delivery's work lengthens
 * their answers.
 */
export const BUSY_UTILIZATION = 0.5
/** …with at least this many requests in flight on average over the window: requests are queueing. */
export const BUSY_REQUESTS = 8
/** Sends started per window, across every webhook, while requests queue on a busy process: 200 a second. */
export const BUSY_SENDS = 20

/** What the pacer reads at each window; the defaults are the process's own (tests give their own). */
export interface PacerSignals {
  /**
   * How busy the process was (0 to 1) since the previous call: the larger of its event loop's
   * utilization and its CPU time over the cores it may use. The loop alone misses a process whose
   * loop waits for its own SQLite writer thread on a core they share (the loop then counts as idle).
   */
  utilization: () => number
  /**
   * Milliseconds spent in requests answered since the previous call, each counted up to a window
   * (an event stream open for hours is not a queue): over the window's length, how many were in
   * flight on average (Little's law). None given: no request is ever seen, nothing held back.
   */
  requestMs: () => number
}

function processUtilization (): () => number {
  const cores = availableParallelism()
  let loop: EventLoopUtilization = performance.eventLoopUtilization()
  let cpu = process.cpuUsage()
  let at = performance.now()
  return () => {
    const loopNow = performance.eventLoopUtilization()
    const cpuSince = process.cpuUsage(cpu)
    const now = performance.now()
    const share = (cpuSince.user + cpuSince.system) / 1000 / Math.max(1, now - at) / cores
    const busy = Math.max(performance.eventLoopUtilization(loopNow, loop).utilization, share)
    loop = loopNow
    cpu = process.cpuUsage()
    at = now
    return busy
  }
}

/**
 * Requests before deliveries. A delivery costs the event loop a good part of what the write that
 * made it cost (its HTTP request, the signature, the answer read), and a receiver that answers at
 * once takes every change as fast as it is sent. So while requests queue on a busy process,
 * deliveries are held to BUSY_SENDS a window; they fall behind, and catch up at full speed once the
 * load eases (the lag metrics show it). Busy alone is not enough: under a steady stream of writes
 * the bench's one core is busy with one or two requests in flight, and holding deliveries there
 * only made them late. Nor are queued requests alone (slow uploads on an idle process), nor a
 * process busy with deliveries.
 */
export class DeliveryPacer {
  /** Time spent holding deliveries back since the start (metrics). */
  heldMs = 0
  private busy = false
  private sent = 0
  private readonly waiting: Array<() => void> = []
  private readonly timer: NodeJS.Timeout | undefined
  private readonly signals: PacerSignals
  private windowStart = performance.now()

  /** `manual`: no timer, the caller ticks (tests). */
  constructor (signals: Partial<PacerSignals> & { manual?: boolean } = {}) {
    this.signals = { utilization: processUtilization(), requestMs: () => 0, ...signals }
    if (signals.manual !== true) this.timer = setInterval(() => { this.tick() }, PACE_WINDOW_MS).unref()
  }

  /** Sends held back, waiting for a window with room (tests): one at most per webhook, as each sends one change at a time. */
  get held (): number { return this.waiting.length }
  /** Whether deliveries are held back now (metrics and tests). */
  get holding (): boolean { return this.busy }

  /** Resolves when a send may start: at once unless requests queue on a busy process and this window's sends are spent. */
  async turn (): Promise<void> {
    if (!this.busy) return
    if (this.sent < BUSY_SENDS && this.waiting.length === 0) {
      this.sent++
      return
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve))
  }

  /** A window has passed: were requests queueing on a busy process, and who may send now. */
  tick (elapsedMs?: number): void {
    const now = performance.now()
    const window = Math.max(1, elapsedMs ?? now - this.windowStart)
    this.windowStart = now
    const inFlight = this.signals.requestMs() / window
    const utilization = this.signals.utilization()
    this.busy = inFlight >= BUSY_REQUESTS && utilization >= BUSY_UTILIZATION
    if (this.busy) this.heldMs += window
    const released = this.busy ? this.waiting.splice(0, BUSY_SENDS) : this.waiting.splice(0)
    this.sent = released.length
    for (const resolve of released) resolve()
  }

  /** Everyone waiting goes on (to find the deliverer stopping). */
  close (): void {
    clearInterval(this.timer)
    this.busy = false
    for (const resolve of this.waiting.splice(0)) resolve()
  }
}
