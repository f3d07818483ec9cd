import type { FastifyBaseLogger } from 'fastify'
import { redactUrl } from './redact-url.js'

/** How long a reason's refusals are counted before one line says how many there were. */
export const REFUSAL_SUMMARY_MS = 1_000

/** The request a refusal answered, when there was one: its line is written through its logger (which binds reqId). */
interface Refused { log: FastifyBaseLogger, id: string }

/** pino's loggers say whether a level is written; Fastify's stand-in when logging is off does not. */
interface Leveled { isLevelEnabled (level: string): boolean }

/** The levels a refusal is written at: a 4xx at info, a 503 that sheds load at warn. */
export type RefusalLevel = 'info' | 'warn'

/**
 * How many client addresses a window counts apart: a flood from many addresses counts its first
 * ones and then no more, so a window's memory stays bounded (the total is counted regardless).
 */
const CLIENTS_COUNTED = 1_000

interface Window {
  level: RefusalLevel
  /** Refusals counted since the reason's last line. */
  count: number
  /** The latest of them, as its own line would have said it. */
  last: Record<string, unknown>
  /** Refusals since the last line by client address: the summary names the one that sent the most. */
  clients: Map<string, number>
  startedAt: number
  timer: NodeJS.Timeout
}

/**
 * Refusals (every 4xx, requests the HTTP parser refuses, connections over the per-client cap) are
 * what a flood is made of: a line each let one client write megabytes of log a second. A refusal
 * whose reason was quiet is written in full at once (one refusal now and then reads as it always
 * did); the ones after it, for as long as the reason keeps recurring, are counted and written as one
 * line per reason an interval (`refusals summarised`, with the count, the latest one and the client
 * address that sent the most with its count: `top`), so a reason writes at most one line an
 * interval, and the `count`s of its lines add up to every refusal.
 * Reasons are statuses, problem types, parser codes and key names, never anything a client makes
 * up, so there are only so many however varied the flood.
 */
export class RefusalLog {
  private readonly windows = new Map<string, Window>()
  private closed = false

  constructor (private readonly log: () => FastifyBaseLogger, private readonly intervalMs = REFUSAL_SUMMARY_MS) {}

  /** Logs one refusal at `level`: in full (`msg`, `line`) when its reason was quiet, else counted into the reason's next summary. */
  refused (reason: string, line: Record<string, unknown>, msg: string, request?: Refused, level: RefusalLevel = 'info'): void {
    const log = request?.log ?? this.log()
    // Nothing would be written: no count and no timer either.
    if ((log as Partial<Leveled>).isLevelEnabled?.(level) === false) return
    const window = this.windows.get(reason)
    if (window !== undefined) {
      window.count += 1
      window.last = request === undefined ? line : { reqId: request.id, ...line }
      const client = typeof line.client === 'string' ? line.client : undefined
      if (client !== undefined && (window.clients.has(client) || window.clients.size < CLIENTS_COUNTED)) window.clients.set(client, (window.clients.get(client) ?? 0) + 1)
      return
    }
    log[level]({ reason, count: 1, ...line }, msg)
    // Once closing, every refusal is written in full: a summary that no timer will write would lose its count.
    if (this.closed) return
    this.windows.set(reason, { level, count: 0, last: line, clients: new Map(), startedAt: Date.now(), timer: this.timer(reason) })
  }

  /** Writes every pending count now and summarises no more (the app is closing): no count is lost. */
  close (): void {
    this.closed = true
    for (const [reason, window] of this.windows) {
      clearTimeout(window.timer)
      if (window.count > 0) this.write(reason, window)
    }
    this.windows.clear()
  }

  private summarise (reason: string): void {
    const window = this.windows.get(reason)!
    // A quiet interval ends the window: the reason's next refusal is written in full at once.
    if (window.count === 0) {
      this.windows.delete(reason)
      return
    }
    this.write(reason, window)
    window.count = 0
    window.clients.clear()
    window.startedAt = Date.now()
    window.timer = this.timer(reason)
  }

  // Unref'd: a pending summary never keeps the process alive (close() writes it).
  private timer (reason: string): NodeJS.Timeout {
    return setTimeout(() => { this.summarise(reason) }, this.intervalMs).unref()
  }

  private write (reason: string, window: Window): void {
    // The log's `url` serializer redacts only a top-level url: the latest one's is redacted here.
    const last = 'url' in window.last ? { ...window.last, url: redactUrl(window.last.url) } : window.last
    let top: { client: string, count: number } | undefined
    for (const [client, count] of window.clients) if (top === undefined || count > top.count) top = { client, count }
    this.log()[window.level]({ reason, count: window.count, windowMs: Date.now() - window.startedAt, last, top }, 'refusals summarised')
  }
}
