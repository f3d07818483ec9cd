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

/**
 * What an Idempotency-Key's request was, as stored beside the key: the JSON of `parts` when it is
 * short, else its SHA-256 (base64url). The digest of a short text cost more than keeping the text:
 * about 8 µs of a till's sale on the event loop, most of it OpenSSL's lookup of the digest each call
 * (bench/results/issue-49-stock.md, stop 63). A digest never starts with `[` or `{`, a text always does.
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
  stored === claimed || (claimed.length <= KEPT_AS_TEXT && (claimed[0] === '[' || claimed[0] === '{') && stored === digest(claimed))
