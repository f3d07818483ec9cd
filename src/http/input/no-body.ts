import type { FastifyInstance, FastifyRequest, preParsingAsyncHookHandler } from 'fastify'
import { HttpProblem } from '../problems/problem.js'

// An operation without a body (a restore from the trash, a purge, a delete, a revoke) refuses one:
// `{"sku":null}` sent to a restore was parsed and silently ignored, the plant restored with its SKU,
// while docs/behaviour.md promises that unknown members are refused, never dropped. An empty body, or
// none, is fine whatever Content-Type a client library adds to every request.

const WITH_BODY = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

export const TAKES_NO_BODY = 'This request takes no body: send it without one (an empty body is fine)'

/** Gives every body-less API operation, now and registered later, the refusal below. */
export function refuseUnexpectedBodies (app: FastifyInstance): void {
  app.addHook('onRoute', (route) => {
    if (!route.url.startsWith('/v3') || route.schema?.operationId === undefined || route.schema.body !== undefined) return
    if (![route.method].flat().some((method) => WITH_BODY.has(method))) return
    route.preParsing = [...[route.preParsing ?? []].flat(), noBody]
    // Every API operation documents a 400 (the unknown query parameter's, at least): it says this too.
    const responses = route.schema.response as Record<number, { description?: string }> | undefined
    if (responses?.[400] !== undefined) responses[400] = { ...responses[400], description: `${responses[400].description ?? 'Invalid input'}, or a body sent (this operation takes none)` }
  })
}

/**
 * Before any parser: a body with bytes is refused (a declared length at once, a chunked one at its
 * first byte; without a body the stream ends at once); an empty one is made no body at all, so that
 * no parser runs (JSON's would refuse an empty body, and another type would be unsupported).
 */
const noBody: preParsingAsyncHookHandler = async (request: FastifyRequest, _reply, payload) => {
  const headers = request.raw.headers
  if (headers['content-length'] !== undefined && Number(headers['content-length']) !== 0) throw new HttpProblem(400, 'invalid-input', TAKES_NO_BODY)
  for await (const chunk of payload) if ((chunk as Buffer).length > 0) throw new HttpProblem(400, 'invalid-input', TAKES_NO_BODY)
  delete headers['transfer-encoding']
  delete headers['content-type']
  headers['content-length'] = '0'
  return payload
}
