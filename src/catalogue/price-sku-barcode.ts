import type { PlantFields } from './plant.js'

// The fields a till and a shop front need (price, SKU, barcode) and the record's times: their
// rules, and the exact arithmetic of prices. A price never passes through a binary float: the
// decimal string is read into integer cents, stored as such, and written back with 2 fraction digits.

/** A price as sent: a decimal ≥ 0 and < 1,000,000,000, at most 2 fraction digits, no sign, exponent or leading zero. */
export const PRICE_PATTERN = '^(0|[1-9][0-9]{0,8})(\\.[0-9]{1,2})?$'
const PRICE = new RegExp(PRICE_PATTERN)
/** A SKU: 1–64 characters of A–Z a–z 0–9 . _ - (ASCII only, so lower-casing is the same everywhere). */
export const SKU_PATTERN = '^[A-Za-z0-9._-]{1,64}$'
/** A GTIN's shape (8, 12, 13 or 14 digits); its check digit is checked by isGtin. */
export const GTIN_PATTERN = '^([0-9]{8}|[0-9]{12,14})$'
const GTIN = new RegExp(GTIN_PATTERN)

/** The cents a price string stands for, or undefined when it breaks PRICE_PATTERN. */
export function priceCents (price: string): number | undefined {
  if (!PRICE.test(price)) return undefined
  const [whole, fraction = ''] = price.split('.')
  return Number(whole) * 100 + Number(fraction.padEnd(2, '0'))
}

/** Cents as the record shows them: always 2 fraction digits ("12.50"). */
export function formatCents (cents: number): string {
  const whole = Math.trunc(cents / 100)
  return `${whole}.${String(cents - whole * 100).padStart(2, '0')}`
}

/** The record's form of a valid price string ("12.5" → "12.50"); null stays null. */
export const canonicalPrice = (price: string | null): string | null => {
  if (price === null) return null
  const cents = priceCents(price)
  if (cents === undefined) throw new RangeError(`not a price: ${price}`)
  return formatCents(cents)
}

/** A GTIN-8, -12, -13 or -14 whose last digit is the GS1 check digit of the others. */
export function isGtin (code: string): boolean {
  if (!GTIN.test(code)) return false
  let sum = 0
  // From the right, leaving out the check digit: weights 3, 1, 3, 1, …
  for (let i = code.length - 2, weight = 3; i >= 0; i--, weight = 4 - weight) sum += Number(code[i]) * weight
  return (10 - (sum % 10)) % 10 === Number(code[code.length - 1])
}

/**
 * What barcodes are found by: the GTIN-14 the code stands for (left-padded with zeros). A GTIN-8,
 * a UPC-A (GTIN-12) and the EAN-13 written with a leading 0 are one product's code at different
 * lengths; GS1 pads them so, and the check digit (weighted from the right) stays valid. The record
 * keeps the barcode as the client wrote it; both engines index this key (an expression index).
 */
export const gtinKey = (code: string): string => code.padStart(14, '0')

/**
 * A plant's fields in a fixed order, the price in its record form: what tells two requests (an
 * Idempotency-Key's) or two rows (an import's) for the same plant apart. The seed's fields alone
 * give the list they always gave, so what was remembered before still matches.
 */
export function identityFields ({ name, category, tags, status, description, price, sku, barcode, lowStockAt }: PlantFields): unknown[] {
  const seed = [name, category, tags, status]
  const store = description === null && price === null && sku === null && barcode === null ? seed : [...seed, description, canonicalPrice(price), sku, barcode]
  // Appended only when set, so a key used before the field existed still hashes as it did.
  return lowStockAt === null || lowStockAt === undefined ? store : [...store, { lowStockAt }]
}

/** What SKUs are unique and found by: the SKU in lower case. */
export const skuKey = (sku: string): string => sku.toLowerCase()

const DAY_MS = 86_400_000
/** The last day formatted: its 'YYYY-MM-DDT' (the times of one page mostly share a day). */
let lastDay = NaN
let dayPrefix = ''
const two = (n: number): string => n < 10 ? `0${n}` : String(n)
/** The latest time toISOString writes with a four-digit year (9999-12-31T23:59:59.999Z). */
const LAST_FOUR_DIGIT_YEAR = 253_402_300_799_999

/**
 * A time as the record shows it: RFC 3339, UTC, milliseconds; exactly what Date's toISOString
 * writes. Written out here from the day's prefix, because toISOString cost a few µs per call: two
 * per plant, so a tenth of a page of 20's CPU (bench/profile-pair.ts). Times before 1970 or past
 * year 9999 are left to toISOString.
 */
export function timestamp (ms: number): string {
  if (!Number.isInteger(ms) || ms < 0 || ms > LAST_FOUR_DIGIT_YEAR) return new Date(ms).toISOString()
  const day = Math.floor(ms / DAY_MS)
  if (day !== lastDay) {
    dayPrefix = new Date(day * DAY_MS).toISOString().slice(0, 11)
    lastDay = day
  }
  let rest = ms - day * DAY_MS
  const hours = Math.floor(rest / 3_600_000)
  rest -= hours * 3_600_000
  const minutes = Math.floor(rest / 60_000)
  rest -= minutes * 60_000
  const seconds = Math.floor(rest / 1000)
  const millis = rest - seconds * 1000
  return `${dayPrefix}${two(hours)}:${two(minutes)}:${two(seconds)}.${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`
}

// RFC 3339's date-time: a T (or t, or a space, which section 5.6 allows) between date and time,
// seconds required, any fraction, Z or an offset.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/

/** Epoch milliseconds of an RFC 3339 date-time (a fraction beyond milliseconds rounded up, so ≥ keeps its meaning), or undefined. */
export function parseTimestamp (text: string): number | undefined {
  const m = RFC3339.exec(text)
  if (!m) return undefined
  const [, y, mo, d, h, mi, s, fraction = '', zone] = m
  const month = Number(mo); const day = Number(d); const hour = Number(h); const minute = Number(mi); const second = Number(s)
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 60) return undefined
  const base = Date.UTC(Number(y), month - 1, day, hour, minute, Math.min(second, 59))
  if (new Date(base).getUTCDate() !== day) return undefined // 31 April, 30 February
  const digits = fraction.slice(1)
  const millis = Number(digits.slice(0, 3).padEnd(3, '0')) + (/[1-9]/.test(digits.slice(3)) ? 1 : 0)
  const offset = zone.toUpperCase() === 'Z' ? 0 : (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(4, 6)))
  const at = base - offset * 60_000
  // Second 60 exists only at a leap second: 23:59:60 UTC at the end of a day the IERS named.
  if (second === 60 && !LEAP_SECOND_DAYS.has(new Date(at).toISOString().slice(0, 19))) return undefined
  return at + millis
}

/** The UTC minutes that ended in a leap second (23:59:60), 1972–2016; none has been added since. */
const LEAP_SECOND_DAYS = new Set([
  '1972-06-30', '1972-12-31', '1973-12-31', '1974-12-31', '1975-12-31', '1976-12-31', '1977-12-31', '1978-12-31', '1979-12-31',
  '1981-06-30', '1982-06-30', '1983-06-30', '1985-06-30', '1987-12-31', '1989-12-31', '1990-12-31', '1992-06-30', '1993-06-30',
  '1994-06-30', '1995-12-31', '1997-06-30', '1998-12-31', '2005-12-31', '2008-12-31', '2012-06-30', '2015-06-30', '2016-12-31'
].map((day) => `${day}T23:59:59`))
