import type { Change, ChangeCrossing, ChangeKind, FeedRead } from '../catalogue/changes.js'
import type { StockEventKind } from '../catalogue/stock.js'
import type { WebhookEvent } from '../catalogue/webhook.js'
import type { PlantStore } from '../store/plant-store.js'

/**
 * A change as a webhook sends it: its body serialised once, whatever the number of webhooks, and
 * as the bytes sent (the HTTP client would otherwise encode a string afresh for every attempt).
 */
export interface FeedEntry {
  seq: number
  kind: ChangeKind
  body: Buffer
  /** A movement's crossings into low or no stock (webhooks stock.low, stock.out), each a body of its own. */
  stock?: Array<{ kind: StockEventKind, body: Buffer }>
}

const entry = (c: Change, crossing: ChangeCrossing | undefined): FeedEntry => {
  const e: FeedEntry = { seq: c.seq, kind: c.kind, body: Buffer.from(JSON.stringify(c)) }
  if (crossing !== undefined) {
    const { movement, level } = crossing
    const reservation = crossing.reservation ?? null
    e.stock = crossing.events.map((kind) =>
      ({ kind, body: Buffer.from(JSON.stringify({ kind, seq: c.seq, id: c.id, version: c.version, actor: c.actor, at: c.at, plant: c.plant, movement, level, reservation })) }))
  }
  return e
}

/** A page's changes as entries, each with its crossing. */
const entries = (page: FeedRead): FeedEntry[] => {
  const crossings = new Map((page.crossings ?? []).map((c) => [c.seq, c]))
  return page.items.map((c) => entry(c, crossings.get(c.seq)))
}

const bytes = (e: FeedEntry): number => e.body.length + (e.stock ?? []).reduce((n, s) => n + s.body.length, 0)

/** One send to a webhook: its webhook-id's suffix after `<webhook>-`, the body, and what it is (the attempt's log keeps it). */
export interface Send { suffix: string, body: Buffer, event: WebhookEvent }

/**
 * What a webhook subscribed to `events` is sent of one change, in order: the change itself, then
 * its stock events (stock.low before stock.out). None: the change is passed over.
 */
export function sendsOf (events: readonly WebhookEvent[], e: FeedEntry): Send[] {
  const sends: Send[] = events.includes(e.kind) ? [{ suffix: String(e.seq), body: e.body, event: e.kind }] : []
  for (const s of e.stock ?? []) if (events.includes(s.kind)) sends.push({ suffix: `${e.seq}-${s.kind}`, body: s.body, event: s.kind })
  return sends
}

/**
 * Up to a page of changes, oldest first: `entries[start]` to `entries[end - 1]`. A view of the
 * window's own array rather than a copy of it: with 50 loops each taking a page every few changes,
 * the copies outlived the young generation (a loop holds its page while it sends it) and grew the
 * old one (the webhooks' memory target: bench/README.md, current figures).
 */
export interface FeedPage { readonly entries: readonly FeedEntry[], readonly start: number, readonly end: number }

/** A page's changes as an array of their own (tests, and anything that keeps them). */
export const pageEntries = (page: FeedPage): FeedEntry[] => page.entries.slice(page.start, page.end)

const whole = (entries: FeedEntry[]): FeedPage => ({ entries, start: 0, end: entries.length })

/**
 * The newest changes of the feed, shared by every webhook's loop. After a commit each loop at the
 * head asks for the changes after its cursor: they share one read of the store (those arriving
 * while it runs share the next one), and each change is serialised once. Only the signature is a
 * webhook's own. A loop further behind than the window (a slow receiver, a resumed webhook) reads
 * pages of its own, which are not kept.
 */
export class FeedWindow {
  private entries: FeedEntry[] = []
  /** Bytes of the entries' bodies: the window is bounded by them, not by a count of changes. */
  private size = 0
  /** The window holds every change with from < seq <= to; none read yet: -1. */
  private from = -1
  private to = -1
  private current: Promise<void> | undefined
  private next: Promise<void> | undefined

  /**
   * `keepBytes`: how much of the newest changes' bodies stays (8 MiB by default, some 10,000
   * changes): wide enough that many webhooks falling behind a burst of writes still read
   * from it, rather than each reading, parsing and serialising pages of its own.
   */
  constructor (
    private readonly store: Pick<PlantStore, 'changes'>,
    private readonly keepBytes = 8 * 1024 * 1024,
    private readonly fetchSize = 100,
    /**
     * The oldest place a reader still reads from (its cursor): what is at or before it is let go
     * as the window moves on. The window holds what the slowest loop reading it needs, up to
     * `keepBytes`, not the newest `keepBytes` always: with every receiver keeping up, 8 MiB
     * of bodies no one would read again stayed in the heap, and the heap grew by a
     * multiple of them (the webhooks' memory target).
     */
    private readonly oldestWanted: () => number = () => -1
  ) {}

  /** Up to `limit` changes after `after`, oldest first (FeedGone as the store throws it). */
  async read (after: number, limit: number): Promise<FeedPage> {
    // A loop ahead of the window (or the first one): the window moves there, the head being that way.
    if (this.current === undefined && (this.to < 0 || after > this.to)) this.restart(after)
    if (after >= this.to) {
      try {
        await this.refresh()
      } catch {
        // Whatever went wrong, this loop finds out with a read of its own, for its own cursor.
        return await this.own(after, limit)
      }
      if (after > this.to) return await this.read(after, limit)
    }
    if (after < this.from) return await this.own(after, limit)
    return this.slice(after, limit)
  }

  private async own (after: number, limit: number): Promise<FeedPage> {
    return whole(entries(await this.store.changes(after, limit)))
  }

  private restart (at: number): void {
    this.entries = []
    this.size = 0
    this.from = at
    this.to = at
  }

  /** Reads what follows the window; callers arriving while a read runs share the one after it (it starts after they asked). */
  private refresh (): Promise<void> {
    if (this.current === undefined) {
      this.current = this.fetch().finally(() => { this.current = undefined })
      return this.current
    }
    this.next ??= this.current.catch(() => {}).then(async () => {
      this.next = undefined
      await this.refresh()
    })
    return this.next
  }

  private async fetch (): Promise<void> {
    const after = this.to
    let items: FeedEntry[]
    try {
      items = entries(await this.store.changes(after, this.fetchSize))
    } catch (err) {
      this.restart(-1)
      throw err
    }
    if (after !== this.to) return // restarted meanwhile
    for (const e of items) {
      this.entries.push(e)
      this.size += bytes(e)
    }
    if (items.length > 0) this.to = items[items.length - 1].seq
    const wanted = this.oldestWanted()
    let extra = 0
    while ((this.size > this.keepBytes || this.entries[extra].seq <= wanted) && extra < this.entries.length - 1) this.size -= bytes(this.entries[extra++])
    if (extra > 0) {
      this.from = this.entries[extra - 1].seq
      this.entries = this.entries.slice(extra)
    }
  }

  private slice (after: number, limit: number): FeedPage {
    // The first entry past `after`, by halving (entries are in seq order).
    let lo = 0
    let hi = this.entries.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.entries[mid].seq <= after) lo = mid + 1
      else hi = mid
    }
    return { entries: this.entries, start: lo, end: Math.min(this.entries.length, lo + limit) }
  }
}
