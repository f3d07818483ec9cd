import type { FastifyReply, FastifyRequest } from 'fastify'
import type { PlantStore } from '../../store/plant-store.js'

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
