import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { component, ref } from '../schemas/components.js'
import { methodNotAllowed } from '../problems/unserved.js'
import { HEADERS, HttpProblem, PROBLEM_CODES, problemResponses, problemTitle, problemType, type ProblemCode } from '../problems/problem.js'
import { PROBLEM_MEANINGS } from '../problems/problem-types.js'

// GET /v3/problems/{code}: where a problem's `type` link leads. JSON like every other answer (the
// contract's one media type): a developer who follows it from a client or curl reads it as it is,
// and a browser shows it as text.

export const ProblemTypePage = component('ProblemType', Type.Object({
  type: Type.String({ description: 'The problem type, as problems of it carry it (`/v3/problems/insufficient-stock`).' }),
  title: Type.String({ description: 'The `title` problems of this type carry.' }),
  description: Type.String({ description: 'What the problem means and what a client does about it.' })
}, { description: 'What a problem type means: the page its `type` link leads to.' }))

const known = new Set<string>(PROBLEM_CODES)

export const problemTypeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/v3/problems/:code', {
    schema: {
      operationId: 'get-problem-type',
      tags: ['plant'],
      summary: 'What a problem type means (where a problem\'s `type` link leads)',
      description: 'Every `type` a problem carries resolves here: its title and what it means, as JSON (`application/json`, as every answer of the API), ' +
        'open without a key whatever READS says (it describes the API, as the OpenAPI document does).',
      params: Type.Object({ code: Type.String({ maxLength: 100, description: 'The last segment of a problem\'s `type` (`insufficient-stock`).' }) }),
      response: {
        200: { ...ref(ProblemTypePage), description: 'The problem type', headers: HEADERS.requestId },
        ...problemResponses([404, 'route-not-found: no problem type has that name'], 429)
      }
    }
  }, async (request, reply) => {
    const { code } = request.params
    if (!known.has(code)) throw new HttpProblem(404, 'route-not-found', `No problem type named ${code}: the OpenAPI document's Problem.type lists them`)
    reply.header('cache-control', 'public, max-age=3600')
    return { type: problemType(code as ProblemCode), title: problemTitle(code as ProblemCode), description: PROBLEM_MEANINGS[code as ProblemCode] }
  })
  methodNotAllowed(app, '/v3/problems/:code', ['GET'])
}
