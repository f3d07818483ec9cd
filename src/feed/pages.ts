import type { Change } from '../catalogue/changes.js'

/** One change as a Server-Sent Event, serialised once and shared by every stream that sends it. */
export interface SseEvent { seq: number, text: string }

/** Page k holds the changes with k·PAGE < seq ≤ (k+1)·PAGE: every stream reads the same pages, wherever it starts. */
export const PAGE = 256

export interface Page {
  k: number
  /** The page holds every change above this sequence (k·PAGE for a whole page). */
  from: number
  events: SseEvent[]
  bytes: number
}

/** The page a change belongs to, and the page holding what comes after a cursor. */
export const pageOfSeq = (seq: number): number => Math.floor((seq - 1) / PAGE)
export const pageAfter = (cursor: number): number => Math.floor(cursor / PAGE)
export const pageEnd = (k: number): number => (k + 1) * PAGE

export function toEvent (change: Change): SseEvent {
  return { seq: change.seq, text: `id: ${change.seq}\nevent: ${change.kind}\ndata: ${JSON.stringify(change)}\n\n` }
}

/** Index of the first event after `cursor` (events are in seq order). */
export function firstAfter (events: readonly SseEvent[], cursor: number): number {
  let lo = 0
  let hi = events.length
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (events[mid].seq <= cursor) lo = mid + 1
    else hi = mid
  }
  return lo
}

/**
 * Whole pages recently read, least recently used first out, within a byte budget: streams replaying
 * near one another read and serialise each page once between them.
 */
export class PageCache {
  private readonly pages = new Map<number, Page>()
  private bytes = 0

  constructor (private readonly budget: number) {}

  get (k: number): Page | undefined {
    const page = this.pages.get(k)
    if (page) {
      this.pages.delete(k)
      this.pages.set(k, page)
    }
    return page
  }

  put (page: Page): void {
    if (this.pages.has(page.k)) return
    this.pages.set(page.k, page)
    this.bytes += page.bytes
    for (const [k, old] of this.pages) {
      if (this.bytes <= this.budget) break
      this.pages.delete(k)
      this.bytes -= old.bytes
    }
  }

  clear (): void {
    this.pages.clear()
    this.bytes = 0
  }
}
