import pg from 'pg'
import { StorageUnavailable } from '../../catalogue/errors.js'
import { isDatabaseError, storageError } from './storage-errors.js'

export interface Timeouts {
  /** The longest a request waits on PostgreSQL (pool slot, connect, queries) before it gets a 503. */
  operationMs: number
  /** The longest a new connection may take. */
  connectMs: number
}

const INT8 = 20
// BIGINT arrives as a string (it may exceed 2^53); ids and sequence numbers stay below that, so a number it is.
export const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser']
}

/**
 * Checks DATABASE_URL at open, so a malformed one stops start-up with one line that never echoes
 * the password. `pool_max` (ours, not libpq's) is taken out; every other parameter goes to node-postgres.
 */
export function parseDatabaseUrl (connectionString: string): { connectionString: string, poolMax?: number } {
  let url: URL
  try {
    url = new URL(connectionString)
  } catch {
    throw new Error('DATABASE_URL is not a valid URL; expected postgres://user:password@host:port/database')
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') throw new Error('DATABASE_URL must start with postgres:// or postgresql://')
  if (url.hostname === '' && !url.searchParams.get('host')) throw new Error('DATABASE_URL names no host (postgres://user:password@host:port/database)')
  for (const [part, value] of [['user name', url.username], ['password', url.password], ['database name', url.pathname]]) {
    try { decodeURIComponent(value) } catch { throw new Error(`DATABASE_URL has a malformed percent-escape in its ${part}`) }
  }
  if (url.pathname.length > 1 && url.pathname.slice(1).includes('/')) throw new Error('DATABASE_URL: the database name must not contain "/"')
  let poolMax: number | undefined
  const max = url.searchParams.get('pool_max')
  if (max !== null) {
    poolMax = Number(max)
    if (!Number.isInteger(poolMax) || poolMax < 1 || poolMax > 1000) throw new Error('DATABASE_URL: pool_max must be an integer from 1 to 1000')
    url.searchParams.delete('pool_max')
  }
  return { connectionString: url.toString(), poolMax }
}

/** Settings for every connection: pooled, the LISTEN connection and the migration connection alike. */
export function clientConfig (connectionString: string, timeouts: Timeouts): pg.ClientConfig {
  return {
    connectionString,
    types,
    connectionTimeoutMillis: timeouts.connectMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    application_name: 'plant-catalogue',
    // Server side: a statement nobody waits for any more stops, and a transaction whose client went
    // silent (a partition mid-commit) is ended instead of holding its row locks for hours.
    statement_timeout: timeouts.operationMs,
    idle_in_transaction_session_timeout: Math.max(5_000, 3 * timeouts.operationMs)
  }
}

/**
 * Runs work on a pooled connection within a deadline. When the deadline passes the caller gets
 * StorageUnavailable at once and the connection is destroyed (a frozen server never answers; a
 * socket left waiting would hold a pool slot for ever).
 */
export class Session {
  constructor (
    private readonly pool: pg.Pool,
    private readonly timeouts: Timeouts,
    /** Resolves once the schema is migrated; work waits for it within its deadline. */
    private readonly ready: () => Promise<void>
  ) {}

  async run<T> (fn: (client: pg.PoolClient) => Promise<T>, budgetMs = this.timeouts.operationMs): Promise<T> {
    let client: pg.PoolClient | undefined
    let released = false
    let expired = false
    const release = (err?: Error): void => {
      if (client && !released) {
        released = true
        client.release(err)
      }
    }
    const work = (async () => {
      await this.ready()
      const c = await this.pool.connect()
      if (expired) { c.release(); throw new StorageUnavailable('postgres: deadline passed') }
      client = c
      try {
        const result = await fn(c)
        release()
        return result
      } catch (err) {
        // A server-side error leaves the connection usable; anything else may have broken it.
        release(isDatabaseError(err) ? undefined : err as Error)
        throw err
      }
    })()
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        expired = true
        release(new Error('deadline passed'))
        reject(new StorageUnavailable(`postgres: no answer within ${budgetMs} ms`))
      }, budgetMs)
    })
    try {
      return await Promise.race([work, deadline])
    } catch (err) {
      throw storageError(err)
    } finally {
      clearTimeout(timer)
      work.catch(() => {}) // settled after the deadline: already answered
    }
  }

  /**
   * `fn` inside BEGIN … COMMIT; rolled back when it throws. With `begun`, `fn`'s first statement
   * opens the transaction itself (a BEGIN sent with it saves a round trip).
   */
  transaction<T> (fn: (client: pg.PoolClient) => Promise<T>, budgetMs?: number, begun = false): Promise<T> {
    return this.run(async (client) => {
      if (!begun) await client.query('BEGIN')
      try {
        const result = await fn(client)
        await client.query('COMMIT')
        return result
      } catch (err) {
        try {
          await client.query('ROLLBACK')
        } catch (rollbackError) {
          // Could not even roll back: make sure the connection is thrown away, not reused mid-transaction.
          throw isDatabaseError(rollbackError) ? new Error(`rollback failed: ${rollbackError.message}`) : rollbackError
        }
        throw err
      }
    }, budgetMs)
  }
}
