import type { FastifyInstance, FastifyRequest } from 'fastify'
import { HttpProblem } from './problem.js'

/** The answer to a path no route serves. */
export const routeNotFound = (request: FastifyRequest): HttpProblem =>
  new HttpProblem(404, 'route-not-found', `No route for ${request.method} ${request.url.split('?')[0]}`)

/**
 * An unknown path is answered in onRequest, before its body is read or parsed: a path that reads
 * no body must not pay for one (64 KB of nested brackets once cost 20 s of parsing on `POST /nope`,
 * with no key). Register it after the hooks every answer needs (request id, CORS, rate limit).
 */
export function answerUnknownPathsEarly (app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every request, and a promise each shows in the profile.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.is404) done(routeNotFound(request))
    else done()
  })
}
