// The catalogue's refusals and failures: thrown by the store, turned into the contract's error
// body in one place (http/error-handler.ts).

export class PlantNotFound extends Error {}
export class VersionMismatch extends Error {}
/** An Idempotency-Key used before for another request: when (epoch ms), and until when it is kept. */
export class IdempotencyKeyReused extends Error {
  constructor (readonly usedAt: number, readonly keptUntil: number) { super('Idempotency-Key used for another request') }
}
/** Another plant has this SKU (ignoring case): `holder` is its id. */
export class SkuTaken extends Error {
  constructor (readonly sku: string, readonly holder: number) { super(`sku ${sku} is taken by plant ${holder}`) }
}
export class FeedGone extends Error {
  constructor (readonly reason: 'expired' | 'ahead') { super(`feed position ${reason}`) }
}
/** A history cursor handed out before the catalogue was restored from a backup (cursorBeforeRestore). */
export class HistoryCursorGone extends Error {}
export class PhotoNotFound extends Error {}
export class PhotoLimitReached extends Error {}
/**
 * A list query ran past its time limit: answered 503 so it never holds the service up. `waitedMs`:
 * how long it waited for a reader thread before it ran (SQLite's readers), which the limit does not
 * count; undefined where nothing waited in the service's sight.
 */
export class QueryTooSlow extends Error {
  constructor (message: string, readonly waitedMs?: number) { super(message) }
}
/** The storage cannot take or answer the request now (down, busy, disk full); worth a retry. */
export class StorageUnavailable extends Error {
  constructor (message: string, readonly cause?: unknown) { super(message) }
}
/** A new order of a plant's photos that does not name each of them once (catalogue/photo.ts: photoOrderProblem). */
export class PhotoOrderInvalid extends Error {}
/** No plant with that id in the trash (never deleted, restored, or purged). */
export class TrashedNotFound extends Error {}
/** A revert to a version the plant's history no longer keeps (past HISTORY_RETENTION_DAYS, or from before history was kept). */
export class VersionNotKept extends Error {}
