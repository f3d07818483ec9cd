import { hash } from 'node:crypto'

// An Idempotency-Key as every write that takes one claims it (plants, batches, stock movements,
// reservations), and the request it named as the key keeps it.

export interface IdempotencyClaim {
  key: string
  /** What the request was (requestHash): the same key sent with another request is refused. */
  requestHash: string
}

/** A request's canonical text up to this long is kept as it is, not as its digest: a till's sale is ~45 bytes. */
const KEPT_AS_TEXT = 64

const digest = (text: string): string => hash('sha256', text, 'base64url')
/** A digest never starts with `[` or `{`, a request's text always does. */
const isText = (request: string): boolean => request[0] === '[' || request[0] === '{'

/**
 * What an Idempotency-Key's request was, as stored beside the key: the JSON of `parts` when it is
 * short, else its SHA-256 (base64url). The digest of a short text cost more than keeping the text:
 * about 8 µs of a till's sale on the event loop, most of it OpenSSL's lookup of the digest each call
 * (bench/results/issue-49-stock.md, stop 63). A store that instances of two releases share keeps
 * the digest instead (digestedClaim).
 */
export function requestHash (parts: unknown): string {
  const text = JSON.stringify(parts)
  return text.length <= KEPT_AS_TEXT ? text : digest(text)
}

/**
 * Whether a key's stored request is the one claimed now: the same string, or, for a short request,
 * the digest of its text (kept so before short requests were kept as text: a retry that spans the
 * upgrade, or a key copied from a catalogue of that release, still replays).
 */
export const sameRequest = (stored: string, claimed: string): boolean =>
  stored === claimed || (claimed.length <= KEPT_AS_TEXT && isText(claimed) && stored === digest(claimed))

/**
 * The claim with its request as the digest every release keeps and compares: PostgreSQL's, whose
 * instances of the release before and of this one answer the same keys during a rolling upgrade (a
 * retry reaching an older instance must find what it compares). SQLite's single service keeps text.
 */
export const digestedClaim = (claim: IdempotencyClaim | undefined): IdempotencyClaim | undefined =>
  claim === undefined || !isText(claim.requestHash) ? claim : { key: claim.key, requestHash: digest(claim.requestHash) }
