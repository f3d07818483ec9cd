import type { FastifyInstance, FastifyRequest, HTTPMethods } from 'fastify'
import { HttpProblem } from './problem.js'

// What no route serves: a path none has (404) and a method its path does not take (405).

/** The answer to a path no route serves. */
export const routeNotFound = (request: FastifyRequest): HttpProblem =>
  new HttpProblem(404, 'route-not-found', `No route for ${request.method} ${request.url.split('?')[0]}`)

/**
 * An unknown path is answered in onRequest, before its body is read or parsed: a path that reads
 * no body must not pay for one (a body of nested brackets once cost seconds of parsing on
 * `POST /nope`, with no key). Register it after the hooks every answer needs (request id, CORS, rate limit).
 */
export function answerUnknownPathsEarly (app: FastifyInstance): void {
  // A callback hook, not an async one: it runs on every request, and a promise each shows in the profile.
  app.addHook('onRequest', (request, _reply, done) => {
    if (request.is404) done(routeNotFound(request))
    else done()
  })
}

const METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']

/** The Allow header value for a path that serves `methods` (GET implies HEAD). */
export const allowHeader = (methods: HTTPMethods[]): string =>
  (methods.includes('GET') ? [...methods, 'HEAD'] : methods).join(', ')

/** Answers 405 with Allow for every method `url` does not serve (instead of a misleading 404). */
export function methodNotAllowed (app: FastifyInstance, url: string, served: HTTPMethods[]): void {
  const allow = allowHeader(served)
  const others = METHODS.filter((m) => !allow.split(', ').includes(m))
  const refuse = async (request: FastifyRequest): Promise<never> => {
    throw new HttpProblem(405, 'method-not-allowed', `${request.method} is not served on this path; use ${allow}`, undefined, { allow })
  }
  app.route({
    method: others,
    url,
    schema: { hide: true },
    config: { allow },
    // Answered in onRequest, before the body is read or parsed: this route reads none.
    onRequest: refuse,
    handler: refuse
  })
}
