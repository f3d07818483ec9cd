import type { OutgoingHttpHeaders } from 'node:http'
import { setImmediate as nextTurn } from 'node:timers/promises'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FeedHub, Slice, Subscriber } from './hub.js'

/** A client that has not read its buffered events for this long is cut off; it resumes from Last-Event-ID. */
const STALL_MS = 30_000
/** Events are written in chunks of about this size: few syscalls, and at most one chunk past the socket's mark. */
const CHUNK = 16 * 1024

export const EVENT_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-store',
  'x-accel-buffering': 'no',
  'x-content-type-options': 'nosniff'
}

/**
 * Streams the change log to one client from the shared hub. The stream holds a cursor and its
 * socket's buffer, nothing else: it asks the hub for more only when the socket has room, and a
 * client that leaves it full for STALL_MS is cut off.
 */
export class EventStream implements Subscriber {
  private closed = false
  private resume: (() => void) | undefined

  constructor (
    private readonly request: FastifyRequest,
    private readonly reply: FastifyReply,
    private readonly hub: FeedHub,
    public cursor: number,
    private readonly onClose: () => void
  ) {}

  start (): void {
    const res = this.reply.raw
    // The headers the hooks set on the reply (CORS, rate limit, request id) go out too: after
    // hijack() Fastify writes none of them, and a browser refuses a cross-origin stream without CORS.
    res.writeHead(200, { ...this.reply.getHeaders() as OutgoingHttpHeaders, ...EVENT_STREAM_HEADERS, 'x-request-id': this.request.id, connection: 'keep-alive' })
    // The id names where the stream starts, so a browser that reconnects before any event resumes there.
    res.write(`retry: 1000\nid: ${this.cursor}\n\n`)
    res.on('close', () => {
      this.closed = true
      this.hub.leave(this)
      this.resume?.()
      this.onClose()
    })
    this.hub.join(this)
    void this.pump()
  }

  heartbeat (): void {
    if (this.reply.raw.writableLength === 0) this.reply.raw.write(': heartbeat\n\n')
  }

  end (): void {
    this.reply.raw.end()
  }

  private async pump (): Promise<void> {
    try {
      while (!this.closed) {
        const slice = await this.hub.read(this.cursor)
        if (this.closed) return
        if (slice === null) await this.hub.waitForMore(this, this.cursor)
        else if (!this.send(slice)) await this.drained()
        // At most one page per turn of the loop: a replay of cached pages (or of SQLite, read
        // synchronously) into a socket that takes every write would otherwise never yield.
        else await nextTurn()
      }
    } catch (err) {
      this.request.log.warn({ err }, 'change stream ended')
      this.reply.raw.destroy()
    }
  }

  /** Writes the slice until the socket's buffer is full; false when it stopped there. */
  private send ({ events, start, end }: Slice): boolean {
    const res = this.reply.raw
    let chunk = ''
    for (let i = start; i < events.length && events[i].seq <= end; i++) {
      chunk += events[i].text
      this.cursor = events[i].seq
      if (chunk.length >= CHUNK) {
        if (!res.write(chunk)) return false
        chunk = ''
      }
    }
    this.cursor = end
    return chunk === '' || res.write(chunk)
  }

  private drained (): Promise<void> {
    const res = this.reply.raw
    return new Promise((resolve) => {
      const stall = setTimeout(() => {
        this.request.log.info('slow event-stream client cut off')
        res.destroy()
      }, STALL_MS)
      this.resume = () => {
        clearTimeout(stall)
        res.off('drain', this.resume!)
        this.resume = undefined
        resolve()
      }
      res.once('drain', this.resume)
    })
  }
}
