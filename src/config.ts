import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { availableParallelism } from 'node:os'
import { Type, TypeGuard, type Static, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { HISTORY_RETENTION_DAYS } from './catalogue/history.js'
import { ENV_KEY_NAME, KEY_NAME } from './catalogue/keys.js'

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
/** A key short enough to guess is refused: 16 characters is the least a random key should hold. */
export const MIN_KEY_LENGTH = 16

// The environment's schema: the only place that knows variable names, defaults and rules. Each
// description says what is allowed; a refusal quotes it (and docs/configuration.md's table repeats it).
const Env = Type.Object({
  HOST: Type.String({ minLength: 1, default: '127.0.0.1', description: 'an address or host name to listen on' }),
  PORT: Type.Integer({ minimum: 1, maximum: 65535, default: 8080, description: 'an integer from 1 to 65535' }),
  DATA_DIR: Type.String({ minLength: 1, default: './data', description: 'a folder for the SQLite database' }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://', description: 'a URL starting with postgres:// or postgresql://' })),
  LOG_LEVEL: Type.Union(LEVELS.map((l) => Type.Literal(l)), { default: 'info', description: `one of ${LEVELS.join(', ')}` }),
  API_KEYS: Type.Optional(Type.String({ description: `comma-separated API keys, each at least ${MIN_KEY_LENGTH} characters (e.g. from openssl rand -hex 24), each either the key alone (named env-1, env-2, … by its place) or name:key (a name of lower-case letters, digits, '.', '_' or '-')` })),
  API_KEYS_FILE: Type.Optional(Type.String({ description: 'the path of a file of SHA-256 key digests' })),
  ALLOW_ANONYMOUS_WRITES: Type.Boolean({ default: false, description: 'true or false' }),
  RATE_LIMIT: Type.Integer({ minimum: 0, maximum: 1_000_000_000, default: 0, description: 'an integer from 0 (off) to 1000000000' }),
  TRUST_PROXY: Type.Optional(Type.String({ description: 'comma-separated proxy addresses or CIDRs (or loopback, linklocal, uniquelocal)' })),
  CORS_ORIGINS: Type.Optional(Type.String({ description: 'comma-separated origins, each scheme://host[:port] with no path (e.g. https://shop.example)' })),
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, maximum: 120_000, default: 5000, description: 'an integer from 0 to 120000' }),
  FEED_RETENTION_DAYS: Type.Number({ exclusiveMinimum: 0, maximum: 36_500, default: 7, description: 'a number of days above 0 and at most 36500 (e.g. 7 or 0.5)' }),
  TRASH_RETENTION_DAYS: Type.Number({ exclusiveMinimum: 0, maximum: 36_500, default: 30, description: 'a number of days above 0 and at most 36500 (e.g. 30 or 0.5)' }),
  HISTORY_RETENTION_DAYS: Type.Number({ exclusiveMinimum: 0, maximum: 36_500, default: HISTORY_RETENTION_DAYS, description: 'a number of days above 0 and at most 36500 (e.g. 365 or 0.5)' }),
  FEED_MAX_STREAMS: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1000, description: 'an integer from 1 to 1000000' }),
  FEED_MAX_STREAMS_PER_CLIENT: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 20, description: 'an integer from 1 to 1000000' }),
  MAX_CONNECTIONS_PER_CLIENT: Type.Integer({ minimum: 0, maximum: 1_000_000, default: 256, description: 'an integer from 0 (no cap) to 1000000' }),
  MAX_QUEUED_BYTES: Type.Integer({ minimum: 16_777_216, maximum: 1_099_511_627_776, default: 268_435_456, description: 'a number of bytes from 16777216 (16 MiB) to 1099511627776 (1 TiB)' }),
  WORKERS: Type.Union([Type.Literal('auto'), Type.Integer({ minimum: 1, maximum: 256 })], { default: 1, description: 'auto or an integer from 1 to 256' }),
  SQLITE_READERS: Type.Union([Type.Literal('auto'), Type.Integer({ minimum: 0, maximum: 64 })], { default: 'auto', description: 'auto or an integer from 0 (reads on the event loop) to 64' }),
  READ_BUDGET: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 4, description: 'an integer from 1 to 1000000' }),
  CURRENCY: Type.String({ pattern: '^[A-Z]{3}$', default: 'EUR', description: 'an ISO 4217 currency code with a minor unit of 2 digits: three capital letters (e.g. EUR, USD)' }),
  WEBHOOK_ALLOW_PRIVATE: Type.Boolean({ default: false, description: 'true or false' }),
  WEBHOOK_PRIVATE_NETWORKS: Type.Optional(Type.String({ description: 'comma-separated addresses or CIDR networks (e.g. 10.20.0.0/16,fd12:3456::/48,192.168.1.7) of the internal receivers WEBHOOK_ALLOW_PRIVATE=true may reach; with WEBHOOK_ALLOW_PRIVATE=true only' })),
  WEBHOOK_LEASE_MS: Type.Integer({ minimum: 1000, maximum: 600_000, default: 20_000, description: 'an integer from 1000 to 600000 (milliseconds)' }),
  RESERVATION_EXPIRY_POLL_MS: Type.Integer({ minimum: 10, maximum: 600_000, default: 5000, description: 'an integer from 10 to 600000 (milliseconds)' }),
  RESERVATION_LEASE_MS: Type.Integer({ minimum: 1000, maximum: 600_000, default: 20_000, description: 'an integer from 1000 to 600000 (milliseconds)' }),
  READS: Type.Union([Type.Literal('public'), Type.Literal('keys')], { default: 'public', description: 'public (anyone may read) or keys (every read needs a key of scope read)' })
})
type Env = Static<typeof Env>

/** Variables whose values are never repeated in a refusal: they may hold a password or a key. */
const SECRETS = new Set(['DATABASE_URL', 'API_KEYS'])

/** The service's configuration: the shape returned by loadConfig, written nowhere else. */
export type Config = ReturnType<typeof loadConfig>

export class ConfigError extends Error {}

const list = (s: string | undefined): string[] => (s ?? '').split(',').map((x) => x.trim()).filter(Boolean)

/**
 * Text to the schema's type, strictly: `1e4`, `80.5`, ` 8080` or `yes` stay text and fail the
 * check (a lenient conversion would listen on port 1 or 80).
 */
function fromText (schema: TSchema, text: string): unknown {
  if (TypeGuard.IsInteger(schema)) return /^\d{1,15}$/.test(text) ? Number(text) : text
  if (TypeGuard.IsNumber(schema)) return /^\d{1,15}(\.\d{1,15})?$/.test(text) ? Number(text) : text
  if (TypeGuard.IsBoolean(schema)) return text === 'true' ? true : text === 'false' ? false : text
  if (TypeGuard.IsUnion(schema)) {
    for (const member of schema.anyOf) {
      const value = fromText(member, text)
      if (Value.Check(member, value)) return value
    }
  }
  return text
}

/**
 * HOST as `listen` takes it: an IP address or a host name. Digits and dots that are no IPv4 address
 * (`999.1.1.1`) would otherwise be looked up as a name, and refused later for the wrong reason.
 */
function hostName (host: string): string {
  if (isIP(host) !== 0) return host
  const expected = `expected ${Env.properties.HOST.description}`
  if (/^[\d.]+$/.test(host)) throw new ConfigError(`Invalid configuration: HOST=${JSON.stringify(host)} is not an IPv4 address (each of the four numbers is 0 to 255); ${expected}`)
  if (/^\[.*\]$/.test(host)) throw new ConfigError(`Invalid configuration: HOST=${JSON.stringify(host)}: write an IPv6 address without brackets (e.g. ::1); ${expected}`)
  if (!HOST_NAME.test(host)) throw new ConfigError(`Invalid configuration: HOST=${JSON.stringify(host)} is neither an IP address nor a host name; ${expected}`)
  return host
}
/** Labels of letters, digits and inner hyphens, joined by dots (RFC 1123). */
const HOST_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i

/**
 * DATABASE_URL's address, checked here so that a URL naming no host is refused as the configuration
 * mistake it is. Never echoed: it may hold a password.
 */
function databaseUrl (text: string | undefined): string | undefined {
  if (text === undefined) return undefined
  const expected = 'expected postgres://user:password@host:port/database'
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new ConfigError(`Invalid configuration: DATABASE_URL is not a valid URL; ${expected}`)
  }
  if (url.hostname === '' && !url.searchParams.get('host')) throw new ConfigError(`Invalid configuration: DATABASE_URL names no host; ${expected}`)
  return text
}

/**
 * A key of API_KEYS: the secret alone (named `env-N` by its place), or with the name the operator
 * gave it (`name:secret`), which history and the access log then show.
 */
export type EnvKeyEntry = string | { name: string, secret: string }

/**
 * The keys of API_KEYS. An empty item (`a,,b`, a trailing comma) or a short key is a mistake to
 * say at start-up, not to drop silently: the start-up line would count fewer keys than were meant.
 * A refusal names the key by its place (and its name, never its value).
 */
function keyList (text: string | undefined): EnvKeyEntry[] {
  if (text === undefined) return []
  const items = text.split(',').map((x) => x.trim())
  const expected = `expected ${Env.properties.API_KEYS.description}`
  if (items.every((key) => key === '')) throw new ConfigError(`Invalid configuration: API_KEYS holds no keys; ${expected}`)
  const which = (n: number): string => `API_KEYS item ${n + 1} of ${items.length}`
  // The stray comma first: `a,,b` is more likely a slip of the keyboard than two short keys.
  const empty = items.indexOf('')
  if (empty >= 0) throw new ConfigError(`Invalid configuration: ${which(empty)} is empty (two commas in a row, or one at an end); ${expected}`)
  const names = new Set<string>()
  return items.map((item, n) => {
    const entry = namedKey(item)
    const secret = typeof entry === 'string' ? entry : entry.secret
    if (typeof entry !== 'string') {
      // Names of the service's own (env-N) would make two keys one in the history.
      if (ENV_KEY_NAME.test(entry.name)) throw new ConfigError(`Invalid configuration: ${which(n)} is named ${entry.name}, a name the service gives the keys without one; choose another`)
      if (names.has(entry.name)) throw new ConfigError(`Invalid configuration: ${which(n)} is named ${entry.name}, as an earlier item is; each key needs a name of its own`)
      names.add(entry.name)
    }
    if (secret.length < MIN_KEY_LENGTH) throw new ConfigError(`Invalid configuration: ${which(n)} is a key of ${secret.length} characters, too short to be safe; ${expected}`)
    return entry
  })
}

/**
 * `name:secret` when what comes before the first colon is a key name; anything else is a secret
 * alone, as every API_KEYS was before names (a hex or base64url key holds no colon).
 */
function namedKey (item: string): EnvKeyEntry {
  const colon = item.indexOf(':')
  if (colon < 0) return item
  const name = item.slice(0, colon)
  return KEY_NAME.test(name) ? { name, secret: item.slice(colon + 1) } : item
}

/** Origins exactly as a browser sends them: `*`, `shop.example` or `https://shop.example/` would never match one. */
function originList (text: string | undefined): string[] {
  const entries = list(text)
  for (const entry of entries) {
    let origin: string | undefined
    try { origin = new URL(entry).origin } catch { origin = undefined }
    if (origin !== entry || !/^https?:/.test(entry)) {
      throw new ConfigError(`Invalid configuration: CORS_ORIGINS=${JSON.stringify(text)}: ${JSON.stringify(entry)} is not an origin a browser sends; ` +
        `expected ${Env.properties.CORS_ORIGINS.description}`)
    }
  }
  return entries
}

/** An address, or a network as address/prefix length, written as an IP address of either family. */
function isAddressOrCidr (entry: string): boolean {
  const [address, bits, extra] = entry.split('/')
  const family = isIP(address)
  return family !== 0 && extra === undefined && (bits === undefined || (/^\d{1,3}$/.test(bits) && Number(bits) <= (family === 6 ? 128 : 32)))
}

/**
 * WEBHOOK_PRIVATE_NETWORKS narrows WEBHOOK_ALLOW_PRIVATE=true to the networks named. Set alone it
 * would allow nothing it names (private receivers stay refused): said at start-up, not ignored.
 */
function privateNetworks (text: string | undefined, allowPrivate: boolean): string[] {
  if (text === undefined) return []
  const expected = `expected ${Env.properties.WEBHOOK_PRIVATE_NETWORKS.description}`
  if (!allowPrivate) {
    throw new ConfigError('Invalid configuration: WEBHOOK_PRIVATE_NETWORKS narrows which private receivers WEBHOOK_ALLOW_PRIVATE=true lets webhooks reach, ' +
      'but WEBHOOK_ALLOW_PRIVATE is not true: set WEBHOOK_ALLOW_PRIVATE=true too, or unset WEBHOOK_PRIVATE_NETWORKS')
  }
  const entries = text.split(',').map((x) => x.trim())
  const empty = entries.indexOf('')
  if (empty >= 0) throw new ConfigError(`Invalid configuration: WEBHOOK_PRIVATE_NETWORKS item ${empty + 1} of ${entries.length} is empty (two commas in a row, or one at an end); ${expected}`)
  const wrong = entries.find((entry) => !isAddressOrCidr(entry))
  if (wrong !== undefined) throw new ConfigError(`Invalid configuration: WEBHOOK_PRIVATE_NETWORKS=${JSON.stringify(text)}: ${JSON.stringify(wrong)} is not an address or CIDR network; ${expected}`)
  return entries
}

/** Names the proxies whose X-Forwarded-For is believed: addresses, CIDRs or proxy-addr's named ranges. */
function proxyList (text: string | undefined): string[] | false {
  if (text === undefined) return false
  if (text.trim() === 'true') {
    throw new ConfigError('Invalid configuration: TRUST_PROXY=true would believe an X-Forwarded-For written by any client; ' +
      'name the proxies instead: comma-separated addresses or CIDRs, e.g. TRUST_PROXY=127.0.0.1,10.0.0.0/8')
  }
  const entries = list(text)
  if (entries.length === 0) throw new ConfigError(`Invalid configuration: TRUST_PROXY=${JSON.stringify(text)} names no proxy: expected ${Env.properties.TRUST_PROXY.description}`)
  for (const entry of entries) {
    const named = ['loopback', 'linklocal', 'uniquelocal'].includes(entry)
    if (!named && !isAddressOrCidr(entry)) {
      throw new ConfigError(`Invalid configuration: TRUST_PROXY=${JSON.stringify(text)}: ${JSON.stringify(entry)} is not an address or CIDR; ` +
        `expected ${Env.properties.TRUST_PROXY.description}`)
    }
  }
  return entries
}

/**
 * CURRENCY as a known ISO 4217 code whose minor unit is 2 digits: every price is shown with 2
 * fraction digits ("12.50"), which is wrong for the yen (0) or the dinar (3), and a code no one
 * knows (ABC) would be shown by GET /v3 as if it were one. What is known, and each code's minor
 * unit, is the runtime's Intl data (ICU's).
 */
function currencyCode (code: string): string {
  const expected = `expected ${Env.properties.CURRENCY.description}`
  if (!Intl.supportedValuesOf('currency').includes(code)) throw new ConfigError(`Invalid configuration: CURRENCY=${JSON.stringify(code)} is not a known ISO 4217 currency code; ${expected}`)
  const digits = new Intl.NumberFormat('en', { style: 'currency', currency: code }).resolvedOptions().maximumFractionDigits
  if (digits !== 2) {
    throw new ConfigError(`Invalid configuration: CURRENCY=${JSON.stringify(code)} has ${digits} fraction digits, but the catalogue keeps and shows prices with 2 ("12.50"); ${expected}`)
  }
  return code
}

/**
 * The most one TCP socket's kernel send buffer holds: Linux's tcp_wmem maximum (4 MiB unless the
 * host is tuned), and that where the kernel does not say. A client that does not read can leave
 * this much in the kernel on each connection, which the bytes queued to clients count.
 */
function socketSendBufferMax (): number {
  try {
    const max = Number(readFileSync('/proc/sys/net/ipv4/tcp_wmem', 'utf8').trim().split(/\s+/)[2])
    if (Number.isSafeInteger(max) && max > 0) return max
  } catch {}
  return 4_194_304
}

/**
 * Reads and validates the environment once. A bad value throws a ConfigError naming the variable
 * and what it allows; a variable set to the empty string is refused, never taken as unset.
 */
export function loadConfig (env: NodeJS.ProcessEnv = process.env) {
  const raw: Record<string, unknown> = {}
  for (const [key, schema] of Object.entries(Env.properties) as Array<[string, TSchema]>) {
    const text = env[key]
    if (text === undefined) continue
    if (text.trim() === '') throw new ConfigError(`Invalid configuration: ${key} is set but empty; expected ${schema.description} (or leave it unset)`)
    const value = fromText(schema, text)
    if (!Value.Check(schema, value)) {
      const given = SECRETS.has(key) ? key : `${key}=${JSON.stringify(text)}`
      throw new ConfigError(`Invalid configuration: ${given}; expected ${schema.description}`)
    }
    raw[key] = value
  }
  const e = Value.Default(Env, raw) as Env
  const apiKeys = keyList(e.API_KEYS)
  return {
    host: hostName(e.HOST),
    port: e.PORT,
    dataDir: e.DATA_DIR,
    databaseUrl: databaseUrl(e.DATABASE_URL),
    logLevel: e.LOG_LEVEL as string,
    apiKeys,
    apiKeysFile: e.API_KEYS_FILE,
    allowAnonymousWrites: e.ALLOW_ANONYMOUS_WRITES,
    rateLimit: e.RATE_LIMIT,
    /** The proxies whose X-Forwarded-For names the client (read from its right), so limits and logs see real clients. */
    trustProxy: proxyList(e.TRUST_PROXY),
    corsOrigins: originList(e.CORS_ORIGINS),
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    feedRetentionMs: e.FEED_RETENTION_DAYS * 86_400_000,
    /** How long a deleted plant stays in the trash before the periodic purge takes it. */
    trashRetentionMs: e.TRASH_RETENTION_DAYS * 86_400_000,
    /** How long a plant's versions stay in its history (GET …/history, revert) before the periodic purge takes them. */
    historyRetentionMs: e.HISTORY_RETENTION_DAYS * 86_400_000,
    /** Event streams open at once on this instance, and from one client address (past them: 503, 429). */
    feedMaxStreams: e.FEED_MAX_STREAMS,
    feedMaxStreamsPerClient: e.FEED_MAX_STREAMS_PER_CLIENT,
    /** Connections one client address may hold open (TRUST_PROXY's proxies exempt; 0: no cap). */
    maxConnectionsPerClient: e.MAX_CONNECTIONS_PER_CLIENT,
    /** Bytes queued to clients in large answers (photo files, pages, event streams), all connections together (WORKERS share it); past it a new one is 503. */
    maxQueuedBytes: e.MAX_QUEUED_BYTES,
    /** Read from the kernel, not the environment: what one connection may leave in the kernel (socketSendBufferMax). */
    socketSendBufferBytes: socketSendBufferMax(),
    workers: e.WORKERS,
    /** Reader threads for SQLite's expensive reads; auto: the cores but one, at least 1, at most 4. */
    sqliteReaders: e.SQLITE_READERS === 'auto' ? Math.max(1, Math.min(4, availableParallelism() - 1)) : e.SQLITE_READERS,
    /** Expensive reads (lists, counts, feed and history pages) one client address may have at once; a key four times as many. */
    readBudget: e.READ_BUDGET,
    /** Webhooks may target loopback, private and link-local addresses (tests, internal networks). */
    webhookAllowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
    /** The private addresses webhooks may reach when allowed: empty for every one (a cloud metadata service's never). */
    webhookPrivateNetworks: privateNetworks(e.WEBHOOK_PRIVATE_NETWORKS, e.WEBHOOK_ALLOW_PRIVATE),
    /** How long an instance's hold on a webhook lasts unrenewed: another takes a dead one's webhooks over after it. */
    webhookLeaseMs: e.WEBHOOK_LEASE_MS,
    /** How often the reservation expirer looks for reservations past their expiresAt. */
    reservationExpiryPollMs: e.RESERVATION_EXPIRY_POLL_MS,
    /** How long an instance's hold on the reservation expirer lasts unrenewed: another takes over after it. */
    reservationLeaseMs: e.RESERVATION_LEASE_MS,
    /** READS=keys: every read under /v3 needs a key of scope `read` (default: reads are public). */
    readsNeedKey: e.READS === 'keys',
    /** The currency of every price in the catalogue (ISO 4217), shown by GET /v3. */
    currency: currencyCode(e.CURRENCY)
  }
}

/** The processes that serve: WORKERS, with auto the host's cores. */
export const workerCount = ({ workers }: Pick<Config, 'workers'>): number => workers === 'auto' ? availableParallelism() : workers

/** A config for tests and tools: the defaults with some values replaced. */
export function testConfig (overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({}), logLevel: 'silent', ...overrides }
}
