import { Agent, request } from 'undici'
import { PACKAGE_VERSION } from '../version.js'
import { literalProblem, safeLookup } from './target.js'

// The one way out to a receiver: every name checked after resolution (target.ts), no redirect
// followed, 10 s for the whole exchange, and no more than 4 KiB of an answer read.

export const USER_AGENT = `plant-catalogue-webhooks/${PACKAGE_VERSION}`
const MAX_READ = 4096

export interface SendResult {
  /** The receiver's status, or null when none came (then `error` says why). */
  statusCode: number | null
  error: string | null
  durationMs: number
}

export interface ClientOptions { allowPrivate: boolean, timeoutMs: number }

export class WebhookClient {
  private readonly agent: Agent

  constructor (private readonly options: ClientOptions) {
    this.agent = new Agent({
      connect: { lookup: safeLookup(options.allowPrivate), timeout: options.timeoutMs },
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      keepAliveTimeout: 30_000,
      // One receiver's connections cannot crowd out another's (each origin has its own pool).
      connections: 4
    })
  }

  /** POSTs `body`; a 2xx within the time limit is a delivery, anything else a failed attempt. */
  async post (url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const started = performance.now()
    const took = (): number => Math.round(performance.now() - started)
    // A literal address never reaches the lookup below: checked here, before every attempt.
    const refused = literalProblem(url, this.options.allowPrivate)
    if (refused !== undefined) return { statusCode: null, error: `not sent: the URL ${refused} (WEBHOOK_ALLOW_PRIVATE is off)`, durationMs: took() }
    // A timer cleared when the exchange ends, not AbortSignal.timeout(): that one's timer keeps the
    // signal, and through undici's listener the request and its body, alive for the whole limit
    // after a fast answer (10 s of every delivery held).
    const controller = new AbortController()
    const timer = setTimeout(() => { controller.abort(Object.assign(new Error('timed out'), { name: 'TimeoutError' })) }, this.options.timeoutMs)
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: this.agent,
        headers: { ...headers, 'content-type': 'application/json', 'user-agent': USER_AGENT },
        body,
        maxRedirections: 0,
        signal: controller.signal
      })
      await readSome(res.body)
      const ok = res.statusCode >= 200 && res.statusCode < 300
      // A redirect is a failure here (following one could lead anywhere, a private address included): say so.
      const error = ok ? null : res.statusCode >= 300 && res.statusCode < 400 ? `answered ${res.statusCode}: redirects are not followed` : `answered ${res.statusCode}`
      return { statusCode: res.statusCode, error, durationMs: took() }
    } catch (err) {
      return { statusCode: null, error: describe(err, this.options.timeoutMs), durationMs: took() }
    } finally {
      clearTimeout(timer)
    }
  }

  async close (): Promise<void> {
    await this.agent.close().catch(() => {})
  }
}

/** Reads at most MAX_READ bytes of an answer, then lets the rest go with the connection. */
async function readSome (body: AsyncIterable<Buffer> & { destroy (): void }): Promise<void> {
  let read = 0
  try {
    for await (const chunk of body) {
      read += chunk.length
      if (read >= MAX_READ) { body.destroy(); return }
    }
  } catch { /* the status is what counts; a broken body after it changes nothing */ }
}

function describe (err: unknown, timeoutMs: number): string {
  const e = err as { name?: string, code?: string, message?: string, cause?: { code?: string, message?: string } }
  if (e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_CONNECT_TIMEOUT') return `no answer within ${timeoutMs} ms`
  if (e.code === 'EPRIVATEADDRESS' || e.cause?.code === 'EPRIVATEADDRESS') return e.cause?.message ?? e.message ?? 'refused address'
  const code = e.code ?? e.cause?.code
  return code !== undefined ? `${code}: ${e.message ?? ''}`.trim() : (e.message ?? String(err))
}
