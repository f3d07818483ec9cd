import type { FastifyInstance } from 'fastify'
import { HttpProblem } from '../problems/problem.js'

/**
 * A query whose percent-encoding is malformed or not UTF-8 (`?q=%ff`, `?category=%E0%A4`) is refused
 * as the path's is: the parser turned such bytes into U+FFFD and the list answered 200 with no
 * items, as if the catalogue had none of what was asked.
 */
export function registerQueryEncodingCheck (app: FastifyInstance): void {
  app.addHook('onRequest', (request, _reply, done) => {
    const at = request.url.indexOf('?')
    if (at < 0 || !request.url.includes('%', at)) return done()
    // Parameter by parameter, so the answer names the one to mend, as every other 400 of a query does.
    for (const pair of request.url.slice(at + 1).split('&')) {
      const [name, value = ''] = pair.split('=', 2)
      const decodes = (s: string): boolean => { try { decodeURIComponent(s); return true } catch { return false } }
      if (decodes(name) && decodes(value)) continue
      const shown = decodes(name) ? decodeURIComponent(name) : name
      const why = 'holds a malformed percent-encoding, or one that is not UTF-8'
      return done(new HttpProblem(400, 'invalid-input', `querystring /${shown} ${why}`, [{ path: `/${shown}`, message: why }]))
    }
    done()
  })
}
