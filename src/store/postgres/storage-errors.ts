import { StorageUnavailable } from '../../catalogue/errors.js'

// Which failures mean "PostgreSQL cannot serve this now, retry shortly" (503) rather than a bug (500).

/** SQLSTATE classes: connection exception, insufficient resources, operator intervention
 * (shutdown, cancel, "starting up"), system error, transaction rollback (deadlock, serialization:
 * retried before they get here). */
const UNAVAILABLE_CLASSES = new Set(['08', '53', '57', '58', '40'])
/** lock_not_available; read_only_sql_transaction, which a failover that left us on a standby gives. */
const UNAVAILABLE_CODES = new Set(['55P03', '25006'])
/** node-postgres reports a dead or silent connection as a plain Error with one of these messages. */
const CONNECTION_MESSAGE = /connection|terminated|timeout|timed out|not queryable/i

/** A server-side error: the connection itself is still good. */
export function isDatabaseError (err: unknown): err is Error & { code: string } {
  const e = err as { code?: unknown, severity?: unknown }
  return typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) && typeof e.severity === 'string'
}

/**
 * Deadlock or serialization failure: nothing was written, the transaction may simply be run again.
 * So is a SKU another instance took between our check and our write (the unique index plants_sku
 * settles the race): run again, the check sees the winner and refuses with its id.
 */
export function isRetryable (err: unknown): boolean {
  return isDatabaseError(err) && (err.code === '40001' || err.code === '40P01' ||
    (err.code === '23505' && (err as { constraint?: unknown }).constraint === 'plants_sku'))
}

export function isUnavailable (err: unknown): boolean {
  if (err instanceof StorageUnavailable) return true
  if (isDatabaseError(err)) return UNAVAILABLE_CLASSES.has(err.code.slice(0, 2)) || UNAVAILABLE_CODES.has(err.code)
  if (!(err instanceof Error)) return false
  const code = (err as { code?: unknown }).code
  // ECONNREFUSED, ECONNRESET, ETIMEDOUT, EPIPE, EHOSTUNREACH, ENOTFOUND, EAI_AGAIN, …
  if (typeof code === 'string' && /^E[A-Z_]+$/.test(code)) return true
  return code === undefined && CONNECTION_MESSAGE.test(err.message)
}

/** StorageUnavailable for what a retry may cure; anything else unchanged (the error handler makes it a 500). */
export function storageError (err: unknown): unknown {
  if (err instanceof StorageUnavailable || !isUnavailable(err)) return err
  const what = isDatabaseError(err) ? `SQLSTATE ${err.code}` : (err as Error).message
  return new StorageUnavailable(`postgres: ${what}`, err)
}
