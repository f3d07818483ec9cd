import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import http from 'node:http'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'

// Runs the real service process for tests that need signals, crashes or sockets: the build that
// `npm test` makes once before the tests (its pretest), as `npm start` and the package run it.

export const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** The newest modification time under `path`. */
function newest (path: string): number {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return readdirSync(path).reduce((m, name) => Math.max(m, newest(join(path, name))), stat.mtimeMs)
}

let checked = false
/**
 * `path` in the build (dist/), once the build is known to be there and newer than the sources: a
 * test of a process must not pass or fail on code older than what it reads.
 */
export function built (path: string): string {
  if (!checked) {
    const stamp = join(ROOT, 'dist/.build-stamp')
    if (!existsSync(stamp)) throw new Error('dist/ is not built: run `npm run build` (npm test builds before the tests)')
    const stale = ['src', 'web'].filter((dir) => newest(join(ROOT, dir)) > statSync(stamp).mtimeMs)
    if (stale.length > 0) throw new Error(`dist/ is older than ${stale.join(' and ')}/: run \`npm run build\` (npm test builds before the tests)`)
    checked = true
  }
  return join(ROOT, path)
}

/** The command and arguments that run the service: the bundle `npm start` and the package's `plant-catalogue` run. */
export const serviceCommand = (): [string, string[]] => [process.execPath, [built('dist/bundle/server.js')]]

/** The command and arguments that run the CLI: the package's `plants`. */
export const cliCommand = (...args: string[]): [string, string[]] => [process.execPath, [built('dist/src/cli/plants.js'), ...args]]

/** A port that was free a moment ago (the service binds it next; a clash shows as a start-up failure). */
export async function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo
      server.close(() => resolve(port))
    })
  })
}

/** The worker processes of a clustered service's primary (its esbuild helper is a child too, hence the name filter). */
export function workerPids (pid: number): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(pid), '-f', 'server']).toString().trim().split('\n').filter(Boolean).map(Number)
  } catch {
    return [] // pgrep exits 1 when nothing matches
  }
}

/** A fresh temporary folder, removed by the returned function. */
export function tempDir (prefix: string): { path: string, remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), `${prefix}-`))
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) }
}

export interface Exit { code: number | null, signal: NodeJS.Signals | null }

export interface ServiceProcess {
  child: ChildProcess
  pid: number
  port: number
  url: string
  dataDir: string
  /** Everything the process wrote to stdout and stderr so far. */
  output (): string
  /** Settles when the process has exited. */
  exited: Promise<Exit>
  /** Sends a signal (if still running) and waits for the exit. */
  stop (signal?: NodeJS.Signals): Promise<Exit>
}

export interface ServiceOptions {
  /** The embedded database's folder; a fresh temporary one when absent (e.g. with DATABASE_URL). */
  dataDir?: string
  /** Extra environment, e.g. SHUTDOWN_GRACE_MS; the variables the service reads are otherwise cleared. */
  env?: Record<string, string>
  /** How long to wait for /healthz before giving up. */
  readyTimeoutMs?: number
  /** A given port (a restart in place, behind a load balancer); a free one when absent. */
  port?: number
  /** What runs the service: the build's bundle when absent. */
  command?: [string, string[]]
}

// Variables of the service: cleared so that the developer's shell cannot change what a test runs.
const SERVICE_VARS = ['HOST', 'PORT', 'DATA_DIR', 'DATABASE_URL', 'LOG_LEVEL', 'API_KEYS', 'API_KEYS_FILE',
  'ALLOW_ANONYMOUS_WRITES', 'RATE_LIMIT', 'TRUST_PROXY', 'CORS_ORIGINS', 'SHUTDOWN_GRACE_MS', 'FEED_RETENTION_DAYS', 'WORKERS',
  'FEED_MAX_STREAMS', 'FEED_MAX_STREAMS_PER_CLIENT', 'MAX_CONNECTIONS_PER_CLIENT', 'MAX_QUEUED_BYTES', 'WEBHOOK_ALLOW_PRIVATE', 'WEBHOOK_PRIVATE_NETWORKS', 'WEBHOOK_LEASE_MS', 'TRASH_RETENTION_DAYS', 'HISTORY_RETENTION_DAYS',
  'RESERVATION_EXPIRY_POLL_MS', 'RESERVATION_LEASE_MS']

/** The environment for a service process: this one's, without the service's variables and the test runner's flags, plus `env`. */
export function serviceEnv (env: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env }
  for (const name of SERVICE_VARS) delete base[name]
  // The test runner's own flags must not leak into the child (it would run as a test file).
  delete base.NODE_OPTIONS
  delete base.NODE_TEST_CONTEXT
  return Object.assign(base, env)
}

/** Starts the built service on a free loopback port and waits until it answers. */
export async function startService (options: ServiceOptions): Promise<ServiceProcess> {
  const port = options.port ?? await freePort()
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'plants-service-'))
  const env = serviceEnv({ HOST: '127.0.0.1', PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'warn', ...options.env })
  const child = spawn(...(options.command ?? serviceCommand()), { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout!.on('data', (b: Buffer) => { output += b.toString() })
  child.stderr!.on('data', (b: Buffer) => { output += b.toString() })
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })))
  let exit: Exit | undefined
  void exited.then((e) => { exit = e })
  const url = `http://127.0.0.1:${port}`
  const service: ServiceProcess = {
    child,
    pid: child.pid!,
    port,
    url,
    dataDir,
    output: () => output,
    exited,
    stop: async (signal = 'SIGTERM') => {
      if (exit === undefined) child.kill(signal)
      return exited
    }
  }
  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000)
  for (;;) {
    if (exit !== undefined) throw new Error(`the service exited during start-up (${JSON.stringify(exit)}):\n${output}`)
    if ((await send(url, { method: 'GET', path: '/healthz' }).catch(() => undefined))?.status === 200) return service
    if (Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`the service did not answer /healthz within the wait:\n${output}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

export interface Answer { status: number, headers: http.IncomingHttpHeaders, body: string, json (): any }

export interface SendOptions { method: string, path: string, body?: unknown, headers?: Record<string, string> }

/**
 * One request on its own connection (no keep-alive), so a failure is about this request alone:
 * ECONNREFUSED means it never reached the service; a reset after connecting means it was dropped.
 */
export async function send (base: string, options: SendOptions): Promise<Answer> {
  const payload = options.body === undefined ? undefined : typeof options.body === 'string' || Buffer.isBuffer(options.body) ? options.body : JSON.stringify(options.body)
  const headers: Record<string, string> = { connection: 'close', ...options.headers }
  if (payload !== undefined) {
    headers['content-type'] ??= 'application/json'
    headers['content-length'] = String(Buffer.byteLength(payload))
  }
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${options.path}`, { method: options.method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('error', reject)
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString()
        resolve({ status: res.statusCode!, headers: res.headers, body, json: () => JSON.parse(body) })
      })
    })
    req.on('error', reject)
    req.end(payload)
  })
}

export interface StoredRow { id: number, name: string, category: string | null, tags: string, status: string, version: number }

/** Reads the catalogue file of a stopped service directly: the integrity check and every plant row. */
export function inspectDatabase (dataDir: string): { integrity: string, plants: Map<number, StoredRow> } {
  const db = new Database(join(dataDir, 'catalogue.db'))
  try {
    const integrity = (db.pragma('integrity_check') as Array<{ integrity_check: string }>).map((r) => r.integrity_check).join('; ')
    const rows = db.prepare('SELECT id, name, category, tags, status, version FROM plants').all() as StoredRow[]
    return { integrity, plants: new Map(rows.map((r) => [r.id, r])) }
  } finally {
    db.close()
  }
}
