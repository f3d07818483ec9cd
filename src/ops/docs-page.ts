import type { FastifySwaggerUiOptions } from '@fastify/swagger-ui'

/**
 * The docs page runs script with the page's origin and sends writes with whatever key a person
 * types in: it may load only its own files, and no other site may frame it (clickjacking "Try it
 * out"). Swagger UI serves no inline script, so no hash or 'unsafe-inline' is needed.
 */
export const docsPageSecurity: Pick<FastifySwaggerUiOptions, 'staticCSP' | 'uiHooks'> = {
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
    'style-src': ["'self'"]
  },
  uiHooks: {
    onRequest: (_request, reply, done) => {
      reply.header('x-frame-options', 'DENY')
      done()
    }
  }
}
