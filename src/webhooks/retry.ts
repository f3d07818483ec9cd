// When to try a failed delivery again: seconds at first, then hours, each a little random so that
// receivers coming back from an outage are not hit by every webhook at the same moment.

/** Retries stop this long after the first failure at one change; the webhook then turns `failing`. */
export const RETRY_FOR_MS = 3 * 86_400_000
const FIRST_MS = 5_000
const LONGEST_MS = 6 * 3_600_000

/** The delay before attempt `failures + 1` (5 s, 15 s, 45 s, … up to 6 h), ±20 %. */
export function retryDelayMs (failures: number, random = Math.random): number {
  const base = Math.min(LONGEST_MS, FIRST_MS * 3 ** Math.max(0, failures - 1))
  return Math.round(base * (0.8 + 0.4 * random()))
}
