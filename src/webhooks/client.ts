import { Agent } from 'undici'
import { PACKAGE_VERSION } from '../version.js'
import { connectionPools, type WebhookConnection } from './connection.js'
import { literalProblem, safeLookup, type PrivateReach } from './target.js'

// The one way out to a receiver: every name checked after resolution (target.ts), no redirect
// followed, 10 s for the whole exchange, and no more than 4 KiB of an answer read (and kept, as text,
// for the deliveries' log).

export const USER_AGENT = `plant-catalogue-webhooks/${PACKAGE_VERSION}`
const MAX_READ = 4096

export interface SendResult {
  /** The receiver's status, or null when none came (then `error` says why). */
  statusCode: number | null
  error: string | null
  durationMs: number
  /** The answer's first MAX_READ bytes as text; null when no answer came. */
  response: string | null
}

/**
 * An answer's bytes as text that every store can keep: UTF-8 (a character cut at the 4 KiB mark, or
 * any byte that is not UTF-8, becomes U+FFFD), and NUL, which PostgreSQL's text refuses, too.
 */
export function answerText (chunks: Buffer[]): string {
  return Buffer.concat(chunks).subarray(0, MAX_READ).toString('utf8').replaceAll('\u0000', '\uFFFD')
}

export interface ClientOptions {
  allowPrivate: PrivateReach
  timeoutMs: number
  /** Given each connection as it is made (tests look at what it holds). */
  onConnection?: (c: WebhookConnection) => void
}

export class WebhookClient {
  private readonly agent: Agent
  private readonly targets = new Map<string, { origin: string, path: string }>()

  constructor (private readonly options: ClientOptions) {
    this.agent = new Agent({
      // Connections that let go of their finished requests at once (connection.ts).
      factory: connectionPools(options.onConnection),
      connect: { lookup: safeLookup(options.allowPrivate), timeout: options.timeoutMs },
      // Off: the attempt's own timer below limits the whole exchange. undici's made two timer
      // objects an attempt that lived until its timer list was next swept, long enough to be
      // promoted to the old generation: with 50 fast receivers, a tenth of what grew the heap.
      headersTimeout: 0,
      bodyTimeout: 0,
      keepAliveTimeout: 30_000,
      // One receiver's connections cannot crowd out another's (each origin has its own pool).
      connections: 4
    })
  }

  /**
   * POSTs `body` with `headers` (names and values in turn); a 2xx within the time limit is a
   * delivery, anything else a failed attempt.
   */
  async post (url: string, body: string | Buffer, headers: string[]): Promise<SendResult> {
    const started = performance.now()
    // A literal address never reaches the lookup below: checked here, before every attempt.
    const refused = literalProblem(url, this.options.allowPrivate)
    if (refused !== undefined) return { statusCode: null, error: `not sent: the URL ${refused}${this.options.allowPrivate === false ? ' (WEBHOOK_ALLOW_PRIVATE is off)' : ''}`, durationMs: Math.round(performance.now() - started), response: null }
    const target = this.target(url)
    headers.push('content-type', 'application/json', 'user-agent', USER_AGENT)
    // undici's dispatch with a handler of our own rather than request(): no body stream, abort
    // signal or promise chain per attempt. A store's 100 webhooks each sent every change made enough
    // short-lived garbage that the heap (and RSS) grew by a hundred megabytes.
    return await new Promise<SendResult>((resolve) => {
      let statusCode: number | null = null
      let read = 0
      const chunks: Buffer[] = []
      let abort: ((err?: Error) => void) | undefined
      let settled = false
      const settle = (error: string | null): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        resolve({ statusCode, error, durationMs: Math.round(performance.now() - started), response: statusCode === null ? null : answerText(chunks) })
      }
      const answered = (): void => {
        const code = statusCode ?? 0
        // A redirect is a failure here (following one could lead anywhere, a private address included): say so.
        settle(code >= 200 && code < 300 ? null : code >= 300 && code < 400 ? `answered ${code}: redirects are not followed` : `answered ${code}`)
      }
      // The whole exchange's limit, beside undici's own connect, headers and body timeouts.
      const timer = setTimeout(() => {
        const err = Object.assign(new Error('timed out'), { name: 'TimeoutError' })
        // Not connected yet: the answer is given now, undici's connect timeout ends the attempt.
        if (abort === undefined) settle(describe(err, this.options.timeoutMs))
        else abort(err)
      }, this.options.timeoutMs)
      this.agent.dispatch({ origin: target.origin, path: target.path, method: 'POST', headers, body }, {
        onConnect: (a) => { abort = a },
        onHeaders: (code) => { statusCode = code; return true },
        onData: (chunk) => {
          if (read < MAX_READ) chunks.push(Buffer.from(chunk)) // a copy: the connection may reuse its buffer
          read += chunk.length
          // No more than MAX_READ bytes of an answer: the status is what counts, the rest goes with the connection.
          if (read >= MAX_READ) { answered(); abort?.() }
          return true
        },
        onComplete: answered,
        // A broken body after the status changes nothing; before it, the error is the outcome.
        onError: (err) => { if (statusCode !== null) answered(); else settle(describe(err, this.options.timeoutMs)) }
      })
    })
  }

  /** Origin and path of a URL, parsed once (a store has few webhooks, each sent many changes). */
  private target (url: string): { origin: string, path: string } {
    let t = this.targets.get(url)
    if (t === undefined) {
      const u = new URL(url)
      t = { origin: u.origin, path: u.pathname + u.search }
      if (this.targets.size >= 1000) this.targets.clear()
      this.targets.set(url, t)
    }
    return t
  }

  async close (): Promise<void> {
    await this.agent.close().catch(() => {})
  }
}

function describe (err: unknown, timeoutMs: number): string {
  const e = err as { name?: string, code?: string, message?: string, cause?: { code?: string, message?: string } }
  if (e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_CONNECT_TIMEOUT') return `no answer within ${timeoutMs} ms`
  if (e.code === 'EPRIVATEADDRESS' || e.cause?.code === 'EPRIVATEADDRESS') return e.cause?.message ?? e.message ?? 'refused address'
  const code = e.code ?? e.cause?.code
  return code !== undefined ? `${code}: ${e.message ?? ''}`.trim() : (e.message ?? String(err))
}
