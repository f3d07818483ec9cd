import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance } from 'fastify'

// The service's own mark (the leaf of the staff page's favicon, web/static/favicon.svg), kept here
// so the docs page has it whether or not the staff page is built.
const LEAF = '<rect width="32" height="32" rx="8" fill="#2b6e4f"/><path d="M9 23c0-9 6-14 15-14 0 9-5 15-14 15" fill="#cfe8d9"/>' +
  '<path d="M9 24c3-5 6-8 11-11" stroke="#2b6e4f" stroke-width="2" fill="none" stroke-linecap="round"/>'
const FAVICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">${LEAF}</svg>`
/** The docs page's top bar (dark) shows the leaf and the service's name, not Swagger UI's or Fastify's logo. */
// textLength: the name fits its box whatever font the browser picks.
const LOGO = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 250 40" width="250" height="40">' +
  `<g transform="translate(0 4)">${LEAF}</g>` +
  '<text x="44" y="27" textLength="200" lengthAdjust="spacingAndGlyphs" fill="#ffffff" ' +
  'font-family="system-ui, -apple-system, Segoe UI, Roboto, Arial, sans-serif" font-size="20" font-weight="600">Plant catalogue API</text></svg>'

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
    // A browser tab or bookmark says what it is, not "Swagger UI", with the service's icon.
    theme: {
      title: 'Plant catalogue API',
      favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: Buffer.from(FAVICON) }]
    },
    // Without one, Swagger UI's top bar shows the Fastify logo; it goes in as a data: URL (no request).
    logo: { type: 'image/svg+xml', content: Buffer.from(LOGO) },
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
