// An Idempotency-Key as every write that takes one claims it: plants, batches and stock movements.

export interface IdempotencyClaim {
  key: string
  /** A hash of the request body: the same key with another body is refused. */
  requestHash: string
}
