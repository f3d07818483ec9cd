import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

// The environment's schema: the only place that knows variable names, defaults and rules.
const Env = Type.Object({
  HOST: Type.String({ minLength: 1, default: '127.0.0.1' }),
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  DATA_DIR: Type.String({ minLength: 1, default: './data' }),
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  LOG_LEVEL: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }),
  API_KEYS: Type.Optional(Type.String()),
  API_KEYS_FILE: Type.Optional(Type.String({ minLength: 1 })),
  ALLOW_ANONYMOUS_WRITES: Type.Boolean({ default: false }),
  RATE_LIMIT: Type.Integer({ minimum: 0, default: 0 }),
  TRUST_PROXY: Type.Optional(Type.String({ minLength: 1 })),
  CORS_ORIGINS: Type.Optional(Type.String()),
  SHUTDOWN_GRACE_MS: Type.Integer({ minimum: 0, maximum: 120_000, default: 5000 }),
  FEED_RETENTION_DAYS: Type.Number({ exclusiveMinimum: 0, default: 7 }),
  FEED_MAX_STREAMS: Type.Integer({ minimum: 1, default: 1000 }),
  FEED_MAX_STREAMS_PER_CLIENT: Type.Integer({ minimum: 1, default: 20 }),
  WORKERS: Type.Union([Type.Literal('auto'), Type.Integer({ minimum: 1, maximum: 256 })], { default: 1 })
})
type Env = Static<typeof Env>

/** The service's configuration: the shape returned by loadConfig, written nowhere else. */
export type Config = ReturnType<typeof loadConfig>

export class ConfigError extends Error {}

const list = (s: string | undefined): string[] => (s ?? '').split(',').map((x) => x.trim()).filter(Boolean)

/** Reads and validates the environment once; a bad value throws a ConfigError naming the variable. */
export function loadConfig (env: NodeJS.ProcessEnv = process.env) {
  const raw: Record<string, unknown> = {}
  for (const key of Object.keys(Env.properties)) {
    const value = env[key]
    if (value !== undefined && value !== '') raw[key] = value
  }
  const parsed = Value.Convert(Env, Value.Default(Env, raw))
  const error = Value.Errors(Env, parsed).First()
  if (error) {
    const name = error.path.split('/')[1]
    throw new ConfigError(`Invalid configuration: ${name}=${JSON.stringify(raw[name] ?? '')} ${error.message.toLowerCase()}`)
  }
  const e = parsed as Env
  return {
    host: e.HOST,
    port: e.PORT,
    dataDir: e.DATA_DIR,
    databaseUrl: e.DATABASE_URL,
    logLevel: e.LOG_LEVEL as string,
    apiKeys: list(e.API_KEYS),
    apiKeysFile: e.API_KEYS_FILE,
    allowAnonymousWrites: e.ALLOW_ANONYMOUS_WRITES,
    rateLimit: e.RATE_LIMIT,
    /** Proxy addresses (or `true`) whose X-Forwarded-For names the client, so limits count real clients. */
    trustProxy: e.TRUST_PROXY === undefined ? false : e.TRUST_PROXY === 'true' ? true : list(e.TRUST_PROXY),
    corsOrigins: list(e.CORS_ORIGINS),
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    feedRetentionMs: e.FEED_RETENTION_DAYS * 86_400_000,
    /** Event streams open at once on this instance, and from one client address (past them: 503, 429). */
    feedMaxStreams: e.FEED_MAX_STREAMS,
    feedMaxStreamsPerClient: e.FEED_MAX_STREAMS_PER_CLIENT,
    workers: e.WORKERS
  }
}

/** A config for tests and tools: the defaults with some values replaced. */
export function testConfig (overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({}), logLevel: 'silent', ...overrides }
}
