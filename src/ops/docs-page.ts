import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

/**
 * The docs page at /v3/docs (Swagger UI). It runs script with the service's origin and sends
 * writes with whatever key a person types in, so it may load only its own files and no other site
 * may frame it (clickjacking "Try it out"). Swagger UI serves no inline script, so scripts need
 * no hash or 'unsafe-inline'. An encapsulated scope, so the headers reach the page and its static
 * files and nothing else.
 */
export async function docsPage (app: FastifyInstance): Promise<void> {
  app.addHook('onRequest', (_request, reply, done) => {
    reply.header('x-frame-options', 'DENY')
    done()
  })
  await app.register(swaggerUi, {
    routePrefix: '/v3/docs',
    // A browser tab or bookmark says what it is, not "Swagger UI".
    theme: { title: 'Plant catalogue API' },
    staticCSP: {
      'default-src': ["'self'"],
      'base-uri': ["'self'"],
      'connect-src': ["'self'"],
      'font-src': ["'self'", 'data:'],
      'form-action': ["'self'"],
      'frame-ancestors': ["'none'"],
      'img-src': ["'self'", 'data:'],
      'object-src': ["'none'"],
      'script-src': ["'self'"],
      'script-src-attr': ["'none'"],
      // Swagger UI sets inline styles as it renders (a hash would break with each upgrade); styles
      // cannot run script, and script stays limited to the service's own files.
      'style-src': ["'self'", "'unsafe-inline'"]
    }
  })
}
