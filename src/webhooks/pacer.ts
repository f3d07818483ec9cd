import { availableParallelism } from 'node:os'
import { performance, type EventLoopUtilization } from 'node:perf_hooks'

/** How often the pacer looks at the event loop, and the span its budget of sends covers. */
export const PACE_WINDOW_MS = 100
/** The event loop's share of a window spent working (not waiting for I/O), or the process's share of its cores, from which it counts as busy. */
export const BUSY_UTILIZATION = 0.7
/** Sends started per window, across every webhook, while requests keep the loop busy: 200 a second. */
export const BUSY_SENDS = 20

/** What the pacer reads; the defaults are the process's own (tests give their own). */
export interface PacerSignals {
  /**
   * How busy the process was (0 to 1) since the previous call: the larger of its event loop's
   * utilization and its CPU time over the cores it may use. The loop alone misses a process whose
   * loop waits for its own SQLite writer thread on a core they share (the loop then counts as idle).
   */
  utilization: () => number
  /** When the last request arrived (epoch ms). */
  lastRequestAt: () => number
  now: () => number
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
 * Requests before deliveries. A delivery costs the event loop about a third of what the write that
 * made it cost (its HTTP request, the signature, the answer read: some 100 µs against some 285 µs
 * a POST, measured on the bench's core), and a receiver that answers at once takes every change as
 * fast as it is sent. So while requests keep the loop busy, deliveries are held to BUSY_SENDS a
 * window; they fall behind, and catch up at full speed once the load eases (the lag metrics show
 * it). A loop busy with deliveries alone, no request arriving, is not held back.
 */
export class DeliveryPacer {
  private busy = false
  private sent = 0
  private readonly waiting: Array<() => void> = []
  private readonly timer: NodeJS.Timeout | undefined
  private readonly signals: PacerSignals

  /** `manual`: no timer, the caller ticks (tests). Without `lastRequestAt`, no request is ever seen: never held back. */
  constructor (signals: Partial<PacerSignals> & { manual?: boolean } = {}) {
    this.signals = { utilization: processUtilization(), lastRequestAt: () => 0, now: Date.now, ...signals }
    if (signals.manual !== true) this.timer = setInterval(() => { this.tick() }, PACE_WINDOW_MS).unref()
  }

  /** Held back sends, waiting for a window with room (metrics and tests). */
  get held (): number { return this.waiting.length }
  get holding (): boolean { return this.busy }

  /** Resolves when a send may start: at once unless the loop is busy with requests and this window's sends are spent. */
  async turn (): Promise<void> {
    if (!this.busy) return
    if (this.sent < BUSY_SENDS && this.waiting.length === 0) {
      this.sent++
      return
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve))
  }

  /** A window has passed: is the loop busy with requests, and who may send now. */
  tick (): void {
    const utilization = this.signals.utilization()
    const requested = this.signals.now() - this.signals.lastRequestAt() <= PACE_WINDOW_MS
    this.busy = requested && utilization >= BUSY_UTILIZATION
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
