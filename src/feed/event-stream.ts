import type { FastifyReply, FastifyRequest } from 'fastify'
import type { PlantStore } from '../store/plant-store.js'

const PAGE = 500
const HEARTBEAT_MS = 15_000
/** A client that has not read its buffered events for this long is cut off; it resumes from Last-Event-ID. */
const STALL_MS = 30_000

/**
 * Streams the change log to one client. Events are read from the durable log, never queued in
 * memory: a slow client only holds a cursor and one socket buffer, so it cannot grow the server.
 */
export function streamChanges (request: FastifyRequest, reply: FastifyReply, store: PlantStore, after: number): void {
  const res = reply.raw
  let cursor = after
  let pumping = false
  let waiting = false
  let again = false
  let closed = false
  let stall: NodeJS.Timeout | undefined

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    'x-accel-buffering': 'no',
    'x-request-id': request.id,
    'x-content-type-options': 'nosniff',
    connection: 'keep-alive'
  })
  res.write('retry: 1000\n\n')

  const pump = async (): Promise<void> => {
    if (pumping || waiting) { again = true; return }
    pumping = true
    try {
      do {
        again = false
        for (;;) {
          const page = await store.changes(cursor, PAGE)
          if (closed) return
          let room = true
          for (const change of page.items) {
            room = res.write(`id: ${change.seq}\nevent: ${change.kind}\ndata: ${JSON.stringify(change)}\n\n`)
            cursor = change.seq
          }
          if (!room) return waitForDrain()
          if (page.items.length < PAGE) break
        }
      } while (again && !closed)
    } catch (err) {
      request.log.warn({ err }, 'change stream ended')
      res.destroy()
    } finally {
      pumping = false
    }
  }

  const waitForDrain = (): void => {
    waiting = true
    stall = setTimeout(() => { request.log.info('slow event-stream client cut off'); res.destroy() }, STALL_MS)
    res.once('drain', () => {
      clearTimeout(stall)
      waiting = false
      void pump()
    })
  }

  const unsubscribe = store.onCommit(() => { void pump() })
  const heartbeat = setInterval(() => { if (res.writableLength === 0) res.write(': heartbeat\n\n') }, HEARTBEAT_MS)
  res.on('close', () => {
    closed = true
    unsubscribe()
    clearInterval(heartbeat)
    clearTimeout(stall)
  })
  void pump()
}
