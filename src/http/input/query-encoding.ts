import type { FastifyInstance } from 'fastify'
import { HttpProblem } from '../problems/problem.js'

/** A percent-encoded text decoded, or undefined when its encoding is malformed or not UTF-8. */
function decoded (s: string): string | undefined {
  try { return decodeURIComponent(s) } catch { return undefined }
}

const WHY = 'holds a malformed percent-encoding, or one that is not UTF-8'

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
      if (!pair.includes('%')) continue
      // The value is all after the first '=' (split('=', 2) would drop what follows a second one).
      const eq = pair.indexOf('=')
      const name = eq < 0 ? pair : pair.slice(0, eq)
      const value = eq < 0 ? '' : pair.slice(eq + 1)
      const shown = decoded(name)
      if (shown !== undefined && decoded(value) !== undefined) continue
      const path = `/${shown ?? name}`
      return done(new HttpProblem(400, 'invalid-input', `querystring ${path} ${WHY}`, [{ path, message: WHY }]))
    }
    done()
  })
}
