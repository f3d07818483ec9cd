import { Client, Pool, type Dispatcher } from 'undici'

// undici's Client keeps the requests it has sent in one array and drops the finished ones only
// once 256 have piled up (lib/dispatcher/client.js, `resume`). The array's backing store is
// reallocated as it grows again after each cut, and each copy lives for a hundred deliveries or
// so: long enough to be promoted to the old generation. With 50 fast receivers that was half of
// what a delivery left in the old generation (measured in bench/results/, the webhooks' memory;
// upstream: nodejs/undici#355). A connection whose requests have all finished starts its
// array afresh before the next one: the same state undici's own cut leaves, sooner.

interface Queue { queue: symbol, running: symbol, pending: symbol }

/**
 * undici's own symbols for the array and its two marks, found by their names on a connection (not
 * imported: the bundle holds undici's module, and a second copy would make symbols of its own), or
 * undefined if this undici has none.
 */
let found: Queue | undefined | null = null
function queueSymbols (c: Client): Queue | undefined {
  if (found !== null) return found
  const own = Object.getOwnPropertySymbols(c)
  const named = (description: string): symbol | undefined => own.find((s) => s.description === description)
  const [queue, running, pending] = [named('queue'), named('running index'), named('pending index')]
  found = queue !== undefined && running !== undefined && pending !== undefined ? { queue, running, pending } : undefined
  return found
}

type Internals = Record<symbol, unknown>

/** How many requests a connection holds, finished ones included (tests: undefined when undici has changed). */
export function heldRequests (client: Client): number | undefined {
  const symbols = queueSymbols(client)
  const queue = symbols === undefined ? undefined : (client as unknown as Internals)[symbols.queue]
  return Array.isArray(queue) ? queue.length : undefined
}

/** A Client that empties its array of requests whenever every request in it has finished. */
export class WebhookConnection extends Client {
  dispatch (options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandlers): boolean {
    const symbols = queueSymbols(this)
    if (symbols !== undefined) {
      const c = this as unknown as Internals
      const queue = c[symbols.queue]
      // Both marks at the end: every request in the array has finished, none is pending or running.
      if (Array.isArray(queue) && queue.length > 0 && c[symbols.running] === queue.length && c[symbols.pending] === queue.length) {
        queue.length = 0
        c[symbols.running] = 0
        c[symbols.pending] = 0
      }
    }
    return super.dispatch(options, handler)
  }
}

/** The Agent's factory: a pool per origin of such connections; `made` is given each one (tests). */
export function connectionPools (made?: (c: WebhookConnection) => void): (origin: string | URL, options: object) => Dispatcher {
  return (origin, options) => new Pool(origin, {
    ...options,
    factory: (o: URL, connectionOptions: object) => {
      const c = new WebhookConnection(o, connectionOptions)
      made?.(c)
      return c
    }
  })
}
