import { hash } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyPluginAsync, FastifyReply } from 'fastify'
import { HttpProblem } from '../http/problems/problem.js'

// The staff page: a few small files built from web/ into dist/web, served from memory so that a
// request never opens a file. The page is a client of the public API like any other.

/** Scripts, styles, images and connections from this origin only; nothing inline, no plugins, no framing. */
export const PAGE_CSP = "default-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml'
}

interface PageFile { body: Buffer, type: string, etag: string }

/**
 * Where `npm run build` put the page: dist/web beside dist/src when running the build, or the
 * repository's dist/web when running from sources (tests through tsx).
 */
export function pageDirectory (): string | undefined {
  for (const candidate of ['../../web/', '../../dist/web/']) {
    const dir = fileURLToPath(new URL(candidate, import.meta.url))
    if (existsSync(join(dir, 'index.html')) && existsSync(join(dir, 'main.js'))) return dir
  }
  return undefined
}

function load (dir: string, writeKey: 'required' | 'none'): Map<string, PageFile> {
  const files = new Map<string, PageFile>()
  for (const name of readdirSync(dir)) {
    const type = TYPES[extname(name)]
    if (type === undefined) continue
    let body = readFileSync(join(dir, name))
    // The one thing the page learns from the server rather than the API: whether writes need a key,
    // so it can ask for one before the first write instead of after a refusal.
    if (name === 'index.html') body = Buffer.from(body.toString('utf8').replace('__WRITE_KEY__', writeKey))
    files.set(name, { body, type, etag: `"${hash('sha256', body, 'base64url').slice(0, 22)}"` })
  }
  return files
}

export interface PageOptions {
  /** The built page's folder; undefined when the page is not built (then only a warning is logged). */
  dir: string | undefined
  /** Writes need an API key. */
  secured: boolean
}

const html = { description: 'The staff page', content: { 'text/html': { schema: { type: 'string' } } } }

/** Serves the staff page at `/` and its assets under `/page/`. */
export const pageRoutes: FastifyPluginAsync<PageOptions> = async (app, { dir, secured }) => {
  if (dir === undefined) {
    app.log.warn('the staff page is not built (run npm run build): / is not served')
    return
  }
  const files = load(dir, secured ? 'required' : 'none')
  const send = (name: string, ifNoneMatch: string | undefined, reply: FastifyReply) => {
    const file = files.get(name)
    if (file === undefined) {
      throw new HttpProblem(404, 'route-not-found', 'No such file of the staff page')
    }
    reply
      .header('content-type', file.type)
      .header('etag', file.etag)
      // Revalidated on every load (a 304 costs a few bytes), so an upgrade shows at once.
      .header('cache-control', 'no-cache')
      .header('content-security-policy', PAGE_CSP)
      .header('referrer-policy', 'same-origin')
    if (ifNoneMatch !== undefined && ifNoneMatch.split(',').some((tag) => tag.trim() === file.etag)) {
      return reply.code(304).send()
    }
    return reply.send(file.body)
  }
  const schema = { hide: true, response: { 200: html } }
  app.get('/', { schema }, async (request, reply) => send('index.html', request.headers['if-none-match'], reply))
  app.get<{ Params: { file: string } }>('/page/:file', { schema }, async (request, reply) =>
    // The page has one address, /.
    send(request.params.file === 'index.html' ? '' : request.params.file, request.headers['if-none-match'], reply))
}
