import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from '@sinclair/typebox'
import { component, ref } from '../schemas/components.js'
import { methodNotAllowed } from '../problems/unserved.js'
import { HEADERS, problemResponses } from '../problems/problem.js'

// GET /v3: where a newcomer who types the base address lands, pointed at what to read next.

export const ApiIndex = component('ApiIndex', Type.Object({
  title: Type.String(),
  version: Type.String({ description: 'The version of the API (the OpenAPI document\'s info.version).' }),
  docs: Type.String({ description: 'The interactive documentation page.' }),
  openapi: Type.String({ description: 'The OpenAPI 3.1 document.' }),
  plants: Type.String({ description: 'The plant collection: find (GET), add (POST), update (PUT); each plant at plants/{id}.' }),
  changes: Type.String({ description: 'The change feed, page by page.' }),
  events: Type.String({ description: 'The change feed as Server-Sent Events.' }),
  inventory: Type.String({ description: 'The number of plants of each status.' }),
  release: Type.String({ description: 'The running release, the API version and the database schema version.' }),
  currency: Type.String({ pattern: '^[A-Z]{3}$', description: 'The currency of every price in the catalogue (ISO 4217; the CURRENCY setting).' })
}, { description: 'Where the documentation and the API are.' }))

const LINKS = {
  docs: '/v3/docs',
  openapi: '/v3/openapi.json',
  plants: '/v3/plant',
  changes: '/v3/plant/changes',
  events: '/v3/plant/events',
  inventory: '/v3/store/inventory',
  release: '/v3/version'
}

export const apiIndexRoutes: FastifyPluginAsyncTypebox<{ currency: string }> = async (app, options) => {
  let index: Static<typeof ApiIndex> | undefined
  app.get('/v3', {
    schema: {
      operationId: 'api-index',
      tags: ['plant'],
      summary: 'Where the documentation, the OpenAPI document and the API are',
      response: {
        200: { ...ref(ApiIndex), description: 'Links to the docs page, the OpenAPI document and the API', headers: HEADERS.requestId },
        ...problemResponses(429)
      }
    }
  }, async () => {
    // Title and version as the document states them (built once, on the first call).
    if (!index) {
      const { title, version } = app.openapiDocument().info
      index = { title, version, ...LINKS, currency: options.currency }
    }
    return index
  })
  methodNotAllowed(app, '/v3', ['GET'])
}
