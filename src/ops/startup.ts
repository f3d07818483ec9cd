import { resolve } from 'node:path'
import type { Config } from '../config.js'
import { OPEN_WITH_READ_KEYS } from '../http/auth/auth.js'
import { KEY_BUDGET_FACTOR } from '../http/limits/read-budget.js'
import { PACKAGE_VERSION } from '../version.js'

/** Where PostgreSQL is, as host:port/database: never the user's password (nor the query's options). */
export function databaseLocation (url: string): string {
  try {
    const u = new URL(url)
    const host = u.hostname || u.searchParams.get('host') || 'localhost'
    return `${host}:${u.port || '5432'}${u.pathname.length > 1 ? u.pathname : ''}`
  } catch {
    return '(unparsable URL)'
  }
}

/** What an operator checks first in the start-up line: which storage, which protections. */
export function startupFacts (config: Config, keyCount: number, storedKeys = false): Record<string, unknown> {
  return {
    version: PACKAGE_VERSION,
    engine: config.databaseUrl ? 'postgres' : 'sqlite',
    ...(config.databaseUrl ? { database: databaseLocation(config.databaseUrl) } : { dataDir: config.dataDir === ':memory:' ? ':memory:' : resolve(config.dataDir) }),
    auth: keyCount > 0 ? `API keys (${keySources(keyCount, storedKeys)}) for writes and /metrics` : config.allowAnonymousWrites ? 'none: anonymous writes allowed' : 'none: anonymous writes on loopback only',
    reads: readsFact(config, keyCount),
    readLimits: readLimitsFact(config),
    rateLimit: config.rateLimit > 0 ? `${config.rateLimit} a minute per client` : 'off',
    trustProxy: config.trustProxy === false ? 'none' : config.trustProxy.join(','),
    webhooks: webhooksFact(config),
    shutdownGraceMs: config.shutdownGraceMs
  }
}

/**
 * Where the keys come from. `keyCount` counts the stored ones as 1 whatever their number (the
 * catalogue is asked whether it holds any, not how many): shown as a number it said "API keys (1)"
 * for a catalogue of three keys (a reviewer read it so).
 */
function keySources (keyCount: number, storedKeys: boolean): string {
  const configured = keyCount - (storedKeys ? 1 : 0)
  if (!storedKeys) return String(configured)
  return configured === 0 ? 'stored in the catalogue' : `${configured} from the configuration, and those stored in the catalogue`
}

/** Who may read, and with READS=keys exactly what stays open without a key. */
function readsFact (config: Config, keyCount: number): string {
  if (!config.readsNeedKey) return 'open to anyone (READS=public); a key sent with a read is checked'
  // Keys may be made later (POST /v3/keys): reads are protected from the first one on.
  if (keyCount === 0) return 'READS=keys, but no key exists yet: reads are open until the first key is made'
  return `need a key of scope read (READS=keys), photos included; open without a key: ${OPEN_WITH_READ_KEYS}; ` +
    '/metrics needs a write key; the staff page sends keys with writes only, so it cannot read here'
}

/**
 * The limits a loaded instance answers 429 and 503 by, as resolved (SQLITE_READERS=auto becomes a
 * number): a reviewer under load could not tell which were in force from the line.
 */
function readLimitsFact (config: Config): Record<string, unknown> {
  return {
    ...(config.databaseUrl ? {} : { sqliteReaders: config.sqliteReaders }),
    readBudget: `${config.readBudget} per client address, ${config.readBudget * KEY_BUDGET_FACTOR} per API key`,
    maxQueuedBytes: config.maxQueuedBytes,
    feedMaxStreams: config.feedMaxStreams,
    feedMaxStreamsPerClient: config.feedMaxStreamsPerClient
  }
}

function webhooksFact (config: Config): string {
  if (!config.webhookAllowPrivate) return 'public receivers only'
  const networks = config.webhookPrivateNetworks
  return networks.length > 0 ? `private receivers in ${networks.join(', ')} allowed (WEBHOOK_PRIVATE_NETWORKS)` : 'private receivers allowed (WEBHOOK_ALLOW_PRIVATE)'
}
