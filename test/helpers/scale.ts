import type { ChildProcess } from 'node:child_process'
import http from 'node:http'
import net from 'node:net'
import { freePort, startService } from './process.js'

// For the scale-out tests: service processes, and a TCP proxy that plays an unreachable database.

export interface Instance {
  url: string
  child: ChildProcess
  output (): string
  /** SIGTERM, then the exit code. */
  stop (): Promise<number | null>
}

/** A service process on a free port (see process.ts), SIGTERM'd by `stop`, which resolves with the exit code. */
export async function startInstance (env: Record<string, string>, readyTimeoutMs = 60_000): Promise<Instance> {
  const service = await startService({ env: { SHUTDOWN_GRACE_MS: '0', ...env }, readyTimeoutMs })
  return { url: service.url, child: service.child, output: service.output, stop: async () => (await service.stop()).code }
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

export type ProxyMode = 'pass' | 'refuse' | 'freeze'

/**
 * A TCP proxy in front of PostgreSQL that can turn into a database that refuses connections (the
 * port closed, connections reset) or one that is frozen (connections accepted, nothing ever answered).
 */
export class DatabaseProxy {
  readonly port: number
  private server: net.Server | undefined
  private readonly sockets = new Set<net.Socket>()
  private readonly pairs = new Map<net.Socket, net.Socket>()
  mode: ProxyMode = 'pass'

  private constructor (port: number, private readonly target: { host: string, port: number }) { this.port = port }

  static async start (target: { host: string, port: number }, port?: number): Promise<DatabaseProxy> {
    const proxy = new DatabaseProxy(port ?? await freePort(), target)
    await proxy.listen()
    return proxy
  }

  /** `url` (a PostgreSQL URL) pointed at this proxy instead. */
  rewrite (url: string): string {
    const u = new URL(url)
    u.hostname = '127.0.0.1'
    u.port = String(this.port)
    return u.toString()
  }

  async set (mode: ProxyMode): Promise<void> {
    if (mode === this.mode) return
    if (mode === 'freeze') {
      // Connections stay open and silent: no byte goes either way any more, as with a hung server.
      for (const [client, upstream] of this.pairs) {
        client.unpipe(upstream)
        upstream.unpipe(client)
        client.pause()
        upstream.pause()
      }
    } else {
      for (const s of this.sockets) s.destroy()
      this.sockets.clear()
    }
    this.pairs.clear()
    this.mode = mode
    if (mode === 'refuse') {
      const server = this.server
      this.server = undefined
      await new Promise((resolve) => server ? server.close(resolve) : resolve(undefined))
    } else if (!this.server) {
      await this.listen()
    }
  }

  async close (): Promise<void> {
    await this.set('refuse')
  }

  private async listen (): Promise<void> {
    const server = net.createServer((client) => {
      this.sockets.add(client)
      client.on('close', () => this.sockets.delete(client))
      client.on('error', () => {})
      if (this.mode === 'freeze') return // accepted, never answered
      const upstream = net.connect(this.target.port, this.target.host)
      this.sockets.add(upstream)
      upstream.on('close', () => { this.sockets.delete(upstream); client.destroy() })
      upstream.on('error', () => {})
      client.on('close', () => { upstream.destroy(); this.pairs.delete(client) })
      this.pairs.set(client, upstream)
      client.pipe(upstream).pipe(client)
    })
    this.server = server
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(this.port, '127.0.0.1', () => resolve())
    })
  }
}

/** A request that never waits longer than `timeoutMs`, and the time it took. */
export async function timed (url: string, init: RequestInit = {}, timeoutMs = 10_000): Promise<{ res: Response, ms: number, body: any }> {
  const started = performance.now()
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) })
  const text = await res.text()
  const ms = performance.now() - started
  let body: any = text
  try { body = JSON.parse(text) } catch { /* not JSON */ }
  return { res, ms, body }
}

export const json = (body: unknown, headers: Record<string, string> = {}): RequestInit =>
  ({ headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) })

/**
 * One request on a connection of its own (no keep-alive): a cluster hands out connections, not
 * requests, so this is what spreads requests over its workers.
 */
export async function request (base: string, path: string, init: { method?: string, body?: unknown, headers?: Record<string, string> } = {}):
Promise<{ status: number, headers: http.IncomingHttpHeaders, text: string, body: any }> {
  const payload = init.body === undefined ? undefined : JSON.stringify(init.body)
  const headers: Record<string, string> = { connection: 'close', ...init.headers }
  if (payload !== undefined) {
    headers['content-type'] ??= 'application/json'
    headers['content-length'] = String(Buffer.byteLength(payload))
  }
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${path}`, { method: init.method ?? 'GET', headers, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', reject)
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        let body: any
        try { body = JSON.parse(text) } catch { body = undefined }
        resolve({ status: res.statusCode!, headers: res.headers, text, body })
      })
    })
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')))
    req.on('error', reject)
    req.end(payload)
  })
}
