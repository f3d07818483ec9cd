import type { FastifyInstance, HTTPMethods } from 'fastify'
import { HttpProblem } from './problem.js'

const METHODS: HTTPMethods[] = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']

/** The Allow header value for a path that serves `methods` (GET implies HEAD). */
export const allowHeader = (methods: HTTPMethods[]): string =>
  (methods.includes('GET') ? [...methods, 'HEAD'] : methods).join(', ')

/** Answers 405 with Allow for every method `url` does not serve (instead of a misleading 404). */
export function methodNotAllowed (app: FastifyInstance, url: string, served: HTTPMethods[]): void {
  const allow = allowHeader(served)
  const others = METHODS.filter((m) => !allow.split(', ').includes(m))
  app.route({
    method: others,
    url,
    schema: { hide: true },
    config: { allow },
    handler: async (request) => {
      throw new HttpProblem(405, 'method-not-allowed', `${request.method} is not served on this path; use ${allow}`, undefined, { allow })
    }
  })
}
