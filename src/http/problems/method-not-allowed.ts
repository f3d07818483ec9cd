import type { FastifyInstance, FastifyRequest, HTTPMethods } from 'fastify'
import { HttpProblem } from './problem.js'

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
