import type { Socket } from 'node:net'
import type { RefusalLog } from '../http/logging/refusal-log.js'

// Requests the HTTP parser refuses (400, 408, 431) never reach a route, a hook or the access log:
// they are counted and logged here (through the refusal log, which summarises a flood of them), on
// their way to the handler that answers them.

/** Refusals so far, by the parser's error code (HPE_HEADER_OVERFLOW, ERR_HTTP_REQUEST_TIMEOUT, …). */
export const parserRefusals = new Map<string, number>()

type ClientErrorHandler = (error: Error & { code?: string }, socket: Socket) => void

/** Wraps Fastify's clientErrorHandler to count and log each refusal. */
export function observedClientErrors (handler: ClientErrorHandler, refusals: RefusalLog): ClientErrorHandler {
  return (error, socket) => {
    // A reset or a socket already gone is a client leaving, not a refusal: nothing is answered.
    if (socket.writable) {
      const code = error.code ?? 'unknown'
      parserRefusals.set(code, (parserRefusals.get(code) ?? 0) + 1)
      refusals.refused(`parser ${code}`, { code, client: socket.remoteAddress }, 'request refused by the HTTP parser')
    }
    handler(error, socket)
  }
}
