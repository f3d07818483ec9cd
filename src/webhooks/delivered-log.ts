import { WEBHOOK_EVENTS, type DeliveryAttempt, type WebhookEvent } from '../catalogue/webhook.js'

/**
 * The newest delivered attempts since a save, as numbers in one array rather than an object each:
 * kept until the next save (up to FLUSH_MS, delivery-loop.ts), objects made for every delivery outlived the young
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
    this.fields = new Float64Array(kept * 6)
    this.responses = new Array<string | null>(kept).fill(null)
  }

  add (seq: number, attempt: number, at: number, statusCode: number | null, durationMs: number, response: string | null, event: WebhookEvent): void {
    this.responses[this.next] = response
    const at5 = this.next * 6
    this.fields[at5] = seq
    this.fields[at5 + 1] = attempt
    this.fields[at5 + 2] = at
    this.fields[at5 + 3] = statusCode ?? -1
    this.fields[at5 + 4] = durationMs
    this.fields[at5 + 5] = WEBHOOK_EVENTS.indexOf(event)
    this.next = (this.next + 1) % this.kept
    this.size = Math.min(this.size + 1, this.kept)
  }

  /** The attempts held, oldest first; the log is empty afterwards. */
  take (): DeliveryAttempt[] {
    const taken: DeliveryAttempt[] = []
    for (let i = 0; i < this.size; i++) {
      const slot = (this.next - this.size + i + this.kept) % this.kept
      const at5 = slot * 6
      const statusCode = this.fields[at5 + 3]
      const event = WEBHOOK_EVENTS[this.fields[at5 + 5]] ?? null
      taken.push({ seq: this.fields[at5], attempt: this.fields[at5 + 1], at: this.fields[at5 + 2], statusCode: statusCode < 0 ? null : statusCode, error: null, durationMs: this.fields[at5 + 4], response: this.responses[slot], event })
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
