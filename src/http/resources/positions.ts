import type { FastifyReply, FastifyRequest } from 'fastify'
import type { PlantStore } from '../../store/plant-store.js'
import { HttpProblem } from '../problems/problem.js'

// Where a reader stands: the cursor of a history or trash page, and the point of the feed a read
// of plants already reflects.

// The opaque cursor of the history and the trash pages: two whole numbers (base64url JSON) that
// name where the last page ended. Read back only if it is exactly what encodePair wrote.

export const encodePair = (a: number, b: number): string => Buffer.from(JSON.stringify([a, b])).toString('base64url')

/** The two numbers of a cursor from encodePair, each at least `least`; anything else is a 400. */
export function decodePair (cursor: string, least: number): [number, number] {
  let parts: unknown
  try {
    parts = JSON.parse(Buffer.from(cursor, 'base64url').toString())
  } catch {
    parts = undefined
  }
  if (!Array.isArray(parts) || parts.length !== 2 || !parts.every((n) => Number.isSafeInteger(n) && n >= least) || encodePair(parts[0], parts[1]) !== cursor) {
    throw new HttpProblem(400, 'invalid-input', 'cursor is malformed: pass the nextCursor of a previous page', [{ path: '/cursor', message: 'is malformed' }])
  }
  return [parts[0], parts[1]]
}

type Hook = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => void

/**
 * A preHandler for every read of plants: sets `Feed-Position`, the newest change the read already
 * reflects, taken just before the handler reads (SQLite: in the same read snapshot), so it is never
 * newer than the data. A client that loses its place in the feed reloads and follows from there.
 * A callback hook, not an async one: it runs on every read, and a promise per request shows.
 */
export function feedPositionHook (store: PlantStore): Hook {
  return (_request, reply, done) => {
    let position: number
    try {
      position = store.feedPosition()
    } catch (err) {
      done(err as Error)
      return
    }
    reply.header('feed-position', String(position))
    done()
  }
}
