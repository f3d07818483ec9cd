import type { FastifyCorsOptions } from '@fastify/cors'

// What a page on another origin (a shop front, a till in a browser) needs to use the whole API.

/** Every method the API serves: a preflight asks whether the browser may send; the route still answers 405 where its path does not serve one. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']
/** The request headers clients send: keys, conditional writes, idempotent retries, feed resumption, correlation. */
const ALLOWED_HEADERS = ['Authorization', 'api_key', 'Content-Type', 'If-Match', 'If-None-Match', 'Idempotency-Key', 'Last-Event-ID', 'X-Request-Id']
/** The response headers a script needs to read (a browser hides all but a few unless named). */
const EXPOSED_HEADERS = [
  'ETag', 'Location', 'Feed-Position', 'Retry-After', 'X-Request-Id', 'Idempotent-Replayed', 'Allow', 'WWW-Authenticate', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset'
]

/** @fastify/cors options for the configured origins (CORS_ORIGINS). */
export const corsOptions = (origins: string[]): FastifyCorsOptions => ({
  origin: origins,
  methods: METHODS,
  allowedHeaders: ALLOWED_HEADERS,
  exposedHeaders: EXPOSED_HEADERS,
  // Browsers may keep a preflight's answer for 10 minutes instead of asking before every write.
  maxAge: 600
})
