import type { FastifyInstance, FastifyRequest } from 'fastify'

const utf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * JSON bodies are decoded as strict UTF-8: invalid bytes are invalid input, not silently replaced
 * by U+FFFD and stored. Parsing itself stays Fastify's (which refuses __proto__ and constructor.prototype).
 */
export function registerJsonBody (app: FastifyInstance): void {
  app.removeContentTypeParser(['application/json', 'text/plain'])
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, strictJsonParser(app))
}

/** The strict UTF-8 JSON parser, for another media type that carries JSON (a merge patch). */
export function strictJsonParser (app: FastifyInstance): Parameters<FastifyInstance['addContentTypeParser']>[2] & ((...args: any[]) => void) {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  return (request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void) => {
    let text: string
    try {
      text = utf8.decode(body as Buffer)
    } catch {
      done(Object.assign(new Error('The body is not valid UTF-8'), { statusCode: 400, code: 'FST_ERR_CTP_INVALID_UTF8' }), undefined)
      return
    }
    parseJson(request, text, done)
  }
}
