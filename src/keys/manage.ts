import { ENV_KEY_NAME, KEY_NAME, type ApiKey, type Scope } from '../catalogue/keys.js'
import type { KeyStore } from '../store/key-store.js'
import { hashOf, newSecret } from './secrets.js'

// Creating a key, the same for `plants keys create` and POST /v3/keys: the secret is made here,
// returned once, and only its hash is stored.

/** The name rule in words: the API's schema, its refusals and the CLI say it the same way. */
export const KEY_NAME_RULE = 'must be 1 to 63 lower-case letters, digits, \'.\', \'_\' or \'-\', starting with a letter or digit'

/** Why a new key's name or expiry cannot be taken: which of the two, and why, in words for the person who chose them. */
export interface NewKeyProblem { field: 'name' | 'expiresAt', message: string }

export function newKeyProblem (name: string, expiresAt: number | null, now: number): NewKeyProblem | undefined {
  if (!KEY_NAME.test(name)) return { field: 'name', message: KEY_NAME_RULE }
  if (ENV_KEY_NAME.test(name)) return { field: 'name', message: 'must not be env-N: those name the keys of API_KEYS and API_KEYS_FILE' }
  if (expiresAt !== null && !(expiresAt > now)) return { field: 'expiresAt', message: `must be in the future (${new Date(expiresAt).toISOString()} has passed)` }
  return undefined
}

/** How expiries are written, for help texts and refusals. */
export const EXPIRY_FORMS = 'a date (2027-01-31: the key works through that day, UTC, and expires at the start of the next) or an RFC 3339 date-time with its zone (2027-01-31T18:00:00Z, taken as given)'

export type Expiry = { ok: true, ms: number } | { ok: false, why: string }

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|([+-])(\d{2}):(\d{2})))?$/
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December']

/**
 * An expiry as epoch ms. A date alone means the key works through that day (UTC): it expires at
 * the start of the next day. A date-time is taken as given. Dates that do not exist (2027-02-30,
 * 24:00:00) are refused, never rolled over into the next month or day.
 */
export function parseExpiry (text: string): Expiry {
  const m = DATE_TIME.exec(text)
  if (m === null) return { ok: false, why: `must be ${EXPIRY_FORMS}` }
  const [year, month, day] = [m[1], m[2], m[3]].map(Number)
  if (month < 1 || month > 12) return { ok: false, why: `${JSON.stringify(text)} is not a date: there is no month ${month}` }
  const days = new Date(Date.UTC(year, month, 0)).getUTCDate()
  if (day < 1 || day > days) return { ok: false, why: `${JSON.stringify(text)} is not a date: ${MONTHS[month - 1]} ${year} has ${days} days` }
  if (m[4] === undefined) return { ok: true, ms: Date.UTC(year, month - 1, day + 1) }
  const [hour, minute, second] = [m[4], m[5], m[6]].map(Number)
  if (hour > 23 || minute > 59 || second > 59) return { ok: false, why: `${JSON.stringify(text)} is not a time of day: hours go to 23, minutes and seconds to 59` }
  if (m[9] !== undefined && (Number(m[10]) > 23 || Number(m[11]) > 59)) return { ok: false, why: `${JSON.stringify(text)} has no valid zone offset (-23:59 to +23:59)` }
  const ms = Date.parse(text.replace(' ', 'T'))
  return Number.isNaN(ms) ? { ok: false, why: `${JSON.stringify(text)} is not a date-time` } : { ok: true, ms }
}

export interface CreatedKey { key: ApiKey, secret: string }

/** Stores a new key (KeyNameTaken when the name is used); the caller has checked newKeyProblem. */
export async function createKey (store: KeyStore, name: string, scope: Scope, expiresAt: number | null, now: number): Promise<CreatedKey> {
  const secret = newSecret()
  const key = await store.create({ name, scope, hash: hashOf(secret), expiresAt, now })
  return { key, secret }
}
