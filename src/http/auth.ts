import { createHash, timingSafeEqual } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ConfigError, type Config } from '../config.js'
import { HttpProblem } from './problem.js'

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest()

/** The OpenAPI security of a write route: either header carries a key. */
export const writeSecurity: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { apiKeyHeader: [] }]
export const securitySchemes = {
  bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key, required for writes when the service has keys configured.' },
  apiKeyHeader: { type: 'apiKey', in: 'header', name: 'api_key', description: 'The same key in the Petstore header.' }
} as const

/**
 * The SHA-256 digests of the keys that may write: API_KEYS in clear, API_KEYS_FILE as hex digests
 * (one a line, `#` comments), so a deployment need not keep usable keys on disk.
 */
export function loadKeyHashes (config: Config): Buffer[] {
  const hashes = config.apiKeys.map(sha256)
  const file = config.apiKeysFile
  if (file === undefined) return hashes
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new ConfigError(`Invalid configuration: API_KEYS_FILE ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`)
  }
  let digests = 0
  for (const [n, raw] of text.split('\n').entries()) {
    const line = raw.replace(/#.*/, '').trim().replace(/^sha256:/, '')
    if (line === '') continue
    if (!/^[0-9a-f]{64}$/i.test(line)) throw new ConfigError(`Invalid configuration: API_KEYS_FILE ${file} line ${n + 1} is not a SHA-256 hex digest`)
    hashes.push(Buffer.from(line, 'hex'))
    digests++
  }
  // An empty file is a mistake, not a wish for anonymous writes (protected mode would blame the wrong thing).
  if (digests === 0) throw new ConfigError(`Invalid configuration: API_KEYS_FILE ${file} holds no keys (expected SHA-256 hex digests, one a line)`)
  return hashes
}

function presentedKey (request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization
  if (typeof authorization === 'string') {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization)
    if (match) return match[1]
  }
  const apiKey = request.headers.api_key
  return typeof apiKey === 'string' && apiKey !== '' ? apiKey : undefined
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Which API key made this write ('' when writes are anonymous). */
    writer: string
  }
}

/**
 * With keys configured, every write needs one of them; reads stay open. A route is a write when its
 * schema declares `security`, so what the document promises and what is enforced are one thing.
 */
export function registerWriteAuth (app: FastifyInstance, keyHashes: Buffer[]): void {
  app.decorateRequest('writer', '')
  if (keyHashes.length === 0) return
  app.addHook('onRequest', async (request) => {
    if (!request.routeOptions.schema?.security) return
    const key = presentedKey(request)
    // Compare digests: equal length, constant time, and every configured key is tried.
    const digest = key === undefined ? undefined : sha256(key)
    let ok = false
    for (const hash of keyHashes) if (digest !== undefined && timingSafeEqual(hash, digest)) ok = true
    if (!ok) {
      // The one read behind a key is /metrics: say what needs it, not "writes".
      const what = request.method === 'GET' || request.method === 'HEAD' ? 'This resource needs' : 'Writes need'
      throw new HttpProblem(401, 'unauthorized', key === undefined
        ? `${what} an API key: send Authorization: Bearer <key> or api_key: <key>`
        : 'The API key is not valid', undefined, { 'www-authenticate': 'Bearer realm="plant-catalogue"' })
    }
    // Names the key without holding it: a prefix of its digest (anything keyed per writer uses it).
    request.writer = digest!.subarray(0, 12).toString('base64url')
  })
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost|\[::1\])$/i

/** Protected mode: without keys, only a loopback listener may take anonymous writes, unless allowed. */
export function protectedModeRefusal (config: Config, keyCount: number): string | undefined {
  if (keyCount > 0 || config.allowAnonymousWrites || LOOPBACK.test(config.host)) return undefined
  return `Refusing to listen on ${config.host} with no API keys: set API_KEYS or API_KEYS_FILE, or ALLOW_ANONYMOUS_WRITES=true to accept anonymous writes`
}
