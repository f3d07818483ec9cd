import type { FastifyBaseLogger } from 'fastify'
import type { Change } from '../catalogue/changes.js'
import { FeedGone } from '../catalogue/errors.js'
import type { PlantStore } from '../store/plant-store.js'
import { PAGE, PageCache, firstAfter, pageAfter, pageEnd, pageOfSeq, toEvent, type Page, type SseEvent } from './pages.js'

/** What a stream may send next: `events[start…]` up to seq `end` are after its cursor; once sent, its cursor is `end`. */
export interface Slice { events: readonly SseEvent[], start: number, end: number }

/** What the hub needs of a stream: where it is, a way to wake it, and a way to end it. */
export interface Subscriber {
  readonly cursor: number
  heartbeat (): void
  end (): void
}

/** Whole pages kept for streams replaying near one another (a page's size goes with its changes' bodies). */
const CACHE_BYTES = 8 * 1024 * 1024
/** Page reads from the store at once: replays never crowd out the reads of plants. */
const CONCURRENT_LOADS = 2
const HEARTBEAT_MS = 15_000
const RETRY_MS = 1_000

/**
 * The change feed shared by every event stream of this process. Each change is read from the log
 * and serialised once, into pages every stream reads from; the hub keeps only the page at the head
 * and a few recent whole pages. Nothing is read ahead of demand: the head is read when a stream is
 * waiting there and a commit was signalled, and older pages when a stream with room asks for them,
 * so a replay goes only as fast as its client drains it.
 */
export class FeedHub {
  private readonly subscribers = new Map<Subscriber, (() => void) | undefined>()
  private readonly cache = new PageCache(CACHE_BYTES)
  private readonly loading = new Map<number, Promise<Page | undefined>>()
  private loads = 0
  private readonly queued: Array<() => void> = []
  /** The page the head is in, holding the changes after `tail.from` read so far (up to `head`). */
  private tail: Page | undefined
  private head = 0
  private starting: Promise<void> | undefined
  /** A commit was signalled that the tail has not read yet. */
  private dirty = true
  private refreshing = false
  private unsubscribe: (() => void) | undefined
  private heartbeat: NodeJS.Timeout | undefined
  private retry: NodeJS.Timeout | undefined
  /** Changes serialised so far: about one per change however many streams send it. */
  serialised = 0

  constructor (private readonly store: PlantStore, private readonly log: FastifyBaseLogger) {}

  get streamsOpen (): number { return this.subscribers.size }

  /** How many changes the furthest-behind stream is from the head (0 with no streams). */
  lag (): number {
    if (this.subscribers.size === 0) return 0
    let head = this.head
    try { head = Math.max(head, this.store.feedPosition()) } catch { /* unready: the hub's own head will do */ }
    let lag = 0
    for (const s of this.subscribers.keys()) lag = Math.max(lag, head - s.cursor)
    return lag
  }

  join (subscriber: Subscriber): void {
    this.subscribers.set(subscriber, undefined)
    if (!this.heartbeat) {
      this.heartbeat = setInterval(() => { for (const s of this.subscribers.keys()) s.heartbeat() }, HEARTBEAT_MS).unref()
    }
  }

  leave (subscriber: Subscriber): void {
    const wake = this.subscribers.get(subscriber)
    this.subscribers.delete(subscriber)
    wake?.()
    if (this.subscribers.size === 0) this.stop()
  }

  /** Ends every stream (shutdown): clients reconnect, with Last-Event-ID, to another instance. */
  close (): void {
    for (const s of [...this.subscribers.keys()]) s.end()
    this.stop()
  }

  /** The events after `cursor`, from one page; null when `cursor` is at the head (then waitForMore). */
  async read (cursor: number): Promise<Slice | null> {
    await this.start()
    const tail = this.tail
    if (!tail) throw new Error('the change feed hub stopped')
    if (cursor >= this.head) return null
    const k = pageAfter(cursor)
    if (k === tail.k) {
      if (cursor >= tail.from) return { events: tail.events, start: firstAfter(tail.events, cursor), end: this.head }
      return await this.direct(cursor, tail.from)
    }
    const page = await this.load(k)
    // The page starts below the retention floor but the cursor does not: read from the cursor.
    if (!page) return await this.direct(cursor, pageEnd(k))
    return { events: page.events, start: firstAfter(page.events, cursor), end: pageEnd(k) }
  }

  /** Resolves once the head has passed `cursor` (or the subscriber left); reads the head if a commit is pending. */
  waitForMore (subscriber: Subscriber, cursor: number): Promise<void> {
    if (this.head > cursor || !this.subscribers.has(subscriber)) return Promise.resolve()
    const waiting = new Promise<void>((resolve) => { this.subscribers.set(subscriber, resolve) })
    if (this.dirty && !this.retry) void this.refresh()
    return waiting
  }

  private start (): Promise<void> {
    this.starting ??= (async () => {
      this.unsubscribe = this.store.onCommit(this.signalled)
      this.head = await this.store.head()
      this.tail = { k: pageAfter(this.head), from: this.head, events: [], bytes: 0 }
      this.dirty = true
    })().catch((err: unknown) => {
      this.stop()
      throw err
    })
    return this.starting
  }

  private stop (): void {
    this.unsubscribe?.()
    this.unsubscribe = undefined
    clearInterval(this.heartbeat)
    clearTimeout(this.retry)
    this.heartbeat = this.retry = undefined
    this.starting = undefined
    this.tail = undefined
    this.head = 0
    this.cache.clear()
  }

  private readonly signalled = (): void => {
    this.dirty = true
    if (this.waiting()) void this.refresh()
  }

  private waiting (): boolean {
    for (const wake of this.subscribers.values()) if (wake) return true
    return false
  }

  /** Reads one page of new changes at the head, serialises each once, and wakes the streams waiting there. */
  private async refresh (): Promise<void> {
    if (this.refreshing || !this.tail) return
    this.refreshing = true
    const starting = this.starting
    try {
      this.dirty = false
      const { items } = await this.store.changes(this.head, PAGE)
      if (this.starting !== starting) return
      for (const change of items) this.append(this.toEvent(change))
      if (items.length === PAGE) this.dirty = true
    } catch (err) {
      if (this.starting !== starting) return
      this.dirty = true
      if (err instanceof FeedGone) {
        // The log is not the one this hub was reading (a restored or replaced database): start again.
        this.log.warn({ err }, 'change feed head moved back; event streams closed')
        this.close()
        return
      }
      // The waiting streams stay asleep (waking them would ask again at once); one retry a second.
      this.log.warn({ err }, 'change feed read failed; retrying')
      this.retry ??= setTimeout(() => { this.retry = undefined; if (this.waiting()) void this.refresh() }, RETRY_MS).unref()
      return
    } finally {
      this.refreshing = false
    }
    for (const [s, wake] of this.subscribers) {
      if (wake) {
        this.subscribers.set(s, undefined)
        wake()
      }
    }
  }

  private append (event: SseEvent): void {
    let tail = this.tail!
    const k = pageOfSeq(event.seq)
    if (k !== tail.k) {
      // The tail is whole once the head leaves it (unless the hub started inside it).
      if (tail.from === tail.k * PAGE) this.cache.put(tail)
      tail = this.tail = { k, from: k * PAGE, events: [], bytes: 0 }
    }
    tail.events.push(event)
    tail.bytes += event.text.length
    this.head = event.seq
  }

  /** A whole page below the head, shared by every stream asking for it; undefined when it starts below the floor. */
  private load (k: number): Promise<Page | undefined> {
    const cached = this.cache.get(k)
    if (cached) return Promise.resolve(cached)
    let loading = this.loading.get(k)
    if (!loading) {
      loading = this.limited(async () => {
        try {
          const events = await this.readEvents(k * PAGE, pageEnd(k))
          const page: Page = { k, from: k * PAGE, events, bytes: events.reduce((n, e) => n + e.text.length, 0) }
          this.cache.put(page)
          return page
        } catch (err) {
          if (err instanceof FeedGone && err.reason === 'expired') return undefined
          throw err
        }
      }).finally(() => this.loading.delete(k))
      this.loading.set(k, loading)
    }
    return loading
  }

  /** Events in (cursor, upTo] read for one stream alone: only at the edges (the hub started mid-page, the floor). */
  private async direct (cursor: number, upTo: number): Promise<Slice> {
    const events = await this.limited(() => this.readEvents(cursor, upTo))
    const end = events.length === PAGE ? events[events.length - 1].seq : upTo
    return { events, start: 0, end }
  }

  private async readEvents (after: number, upTo: number): Promise<SseEvent[]> {
    const { items } = await this.store.changes(after, PAGE)
    const events: SseEvent[] = []
    for (const change of items) if (change.seq <= upTo) events.push(this.toEvent(change))
    return events
  }

  private toEvent (change: Change): SseEvent {
    this.serialised++
    return toEvent(change)
  }

  private async limited<T> (work: () => Promise<T>): Promise<T> {
    if (this.loads >= CONCURRENT_LOADS) await new Promise<void>((resolve) => this.queued.push(resolve))
    this.loads++
    try {
      return await work()
    } finally {
      this.loads--
      this.queued.shift()?.()
    }
  }
}
