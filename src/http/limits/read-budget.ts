import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { HttpProblem, problemResponses } from '../problems/problem.js'

// The reads that can cost more than a point lookup share a budget per client: how many it may
// have running at once. One client then holds at most its share of the reader threads (SQLite) or
// of the pool's connections (PostgreSQL), however many connections it opens, and everyone else's
// reads still find a place. A client is its key when it sent one (the budget is larger: a key is
// someone the store knows), else its address.

/** The operations the budget covers: lists and searches, counts, the feed's pages, history and trash pages. */
export const EXPENSIVE_READS = new Set(['list-plants', 'count-plants', 'list-plant-changes', 'plant-history', 'list-trash'])
/** How many times the address budget a client with a key may have. */
export const KEY_BUDGET_FACTOR = 4

export function registerReadBudget (app: FastifyInstance, perAddress: number): void {
  const held = new Map<string, number>()
  const take = (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    const keyed = request.writer !== ''
    const client = keyed ? `key ${request.writer}` : `address ${request.ip}`
    const budget = keyed ? perAddress * KEY_BUDGET_FACTOR : perAddress
    const mine = held.get(client) ?? 0
    if (mine >= budget) {
      const refused = new HttpProblem(429, 'too-many-requests',
        `At most ${budget} lists, counts, searches, feed or history pages at once per ${keyed ? 'API key' : 'client address (a client with an API key has more)'}; wait for one to finish`,
        undefined, { 'retry-after': '1' })
      refused.limit = 'read budget'
      return done(refused)
    }
    held.set(client, mine + 1)
    // 'close' comes once the answer is sent or the connection went: the slot is given back either way.
    reply.raw.once('close', () => {
      const left = held.get(client)! - 1
      if (left === 0) held.delete(client)
      else held.set(client, left)
    })
    done()
  }
  app.addHook('onRoute', (route) => {
    if (!EXPENSIVE_READS.has(route.schema?.operationId ?? '')) return
    const responses = route.schema!.response as Record<number, unknown> | undefined
    if (responses !== undefined) {
      Object.assign(responses, problemResponses([429, `This client already has READ_BUDGET (default 4) lists, counts, searches, feed or history pages running, a client with an API key ${KEY_BUDGET_FACTOR} times as many, counted per key (every address using the key together); or the rate limit exceeded, only when a rate limit is set (see Retry-After)`]))
    }
    // After the key is checked (onRequest) and the query validated: a refused request takes nothing.
    route.preHandler = [take, ...[route.preHandler ?? []].flat()]
  })
}
