import { hash } from 'node:crypto'
import { nameKey } from '../catalogue/name-key.js'
import { foldKey } from '../catalogue/search-key.js'
import { filterKey, sortKeyOf, type PlantQuery, type Position } from '../catalogue/query.js'
import { gtinKey, parseTimestamp, priceCents, skuKey } from '../catalogue/price-sku-barcode.js'
import { HttpProblem } from '../http/problems/problem.js'
import type { ListQuery } from './schemas.js'

// A list query as HTTP speaks it: `q` split into terms, and the cursors that carry a page's end.
// What the query means (its filters and orders) is the catalogue's (catalogue/query.ts).

const CONTROL = /\p{Cc}/u

/** A refusal of a query-string parameter, worded as the schema's are ("querystring /q must …"). */
const refuseParameter = (name: string, why: string): never => {
  throw new HttpProblem(400, 'invalid-input', `querystring /${name} ${why}`, [{ path: `/${name}`, message: why }])
}

/**
 * Splits `q` into its lower-cased terms, or refuses it naming the rule. An empty `q` (a search box
 * the user cleared) or one of white space alone holds no term: it searches for nothing, as no `q`.
 */
export function parseTerms (q: string | undefined): string[] {
  if (q === undefined) return []
  const terms = q.split(/\s+/u).filter((t) => t !== '')
  const refuse = (why: string): never => refuseParameter('q', why)
  if (terms.length > 5) refuse(`must hold at most 5 terms (it holds ${terms.length})`)
  // Refused before either engine sees them: a NUL cut SQLite's MATCH string short (a 500).
  if (terms.some((t) => CONTROL.test(t))) refuse('terms must not hold control characters (U+0000–U+001F, U+007F–U+009F)')
  // Folded as the names are (search-key.ts); a term of accents alone would be empty. A compatibility
  // form may fold to white space ("¨" is a space and an accent): what it separates are terms apart.
  const folded = terms.map((t) => foldKey(nameKey(t)).split(/\s+/u).filter((f) => f !== ''))
  const bare = terms.find((_t, i) => folded[i].length === 0)
  if (bare !== undefined) refuse(`terms must each hold a character other than an accent ("${bare}" holds none)`)
  return [...new Set(folded.flat())]
}

/**
 * The filters (and sort) of a list request as the catalogue's query. The list and the count both
 * parse through here, so a filter added to the list's query string counts as it lists.
 */
export function plantQueryOf (query: Omit<ListQuery, 'limit' | 'cursor'>): PlantQuery {
  const { status, category, tag, q, sort = 'id', sku, barcode, updatedSince, priceMin, priceMax, inStock, lowStock } = query
  // Category and tags as their keys: "Indoor" and "indoor" are one filter, and one cursor.
  const found: PlantQuery = { statuses: [...new Set(status)], category: category === undefined ? undefined : filterKey(category), tags: [...new Set(tag?.map(filterKey))], terms: parseTerms(q), sort }
  // Absent filters stay absent: the cursor's fingerprint of a query without them is as before.
  if (sku !== undefined) found.sku = skuKey(sku)
  // As its GTIN-14 key: a UPC-A and the same code as an EAN-13 or GTIN-14 are one filter, and one cursor.
  if (barcode !== undefined) found.barcode = gtinKey(barcode)
  if (updatedSince !== undefined) found.updatedSince = parseTimestamp(plusRestored(updatedSince)) ?? refuseTime(updatedSince)
  // The schema's pattern has checked both prices.
  if (priceMin !== undefined) found.priceMin = priceCents(priceMin)
  if (priceMax !== undefined) found.priceMax = priceCents(priceMax)
  if (inStock !== undefined) found.inStock = inStock
  if (lowStock === true) found.lowStock = true
  if (found.priceMin !== undefined && found.priceMax !== undefined && found.priceMin > found.priceMax) {
    // Nothing could match: a client that swapped them is told rather than shown an empty list.
    const why = `priceMin (${priceMin!}) is above priceMax (${priceMax!}): no price lies between them`
    throw new HttpProblem(400, 'invalid-input', `querystring /priceMin and /priceMax: ${why}`,
      [{ path: '/priceMin', message: `must be at most priceMax (${priceMax!})` }, { path: '/priceMax', message: `must be at least priceMin (${priceMin!})` }])
  }
  return found
}

/**
 * A + sent unencoded in a query string reads as a space, so "18:44:00+01:00" arrives as
 * "18:44:00 01:00". A space followed by an offset at the end of a date-time can only have been
 * that + (a - is not decoded, and a zone is required), so it is read as one.
 */
const plusRestored = (text: string): string => text.replace(/^(.*\d) (\d{2}:\d{2})$/s, '$1+$2')

const refuseTime = (text: string): never => {
  const spaced = /\s/.test(text) ? '; a + in the offset must be sent encoded, as %2B' : ''
  return refuseParameter('updatedSince', `must be an RFC 3339 date-time with seconds and a zone, e.g. 2026-05-01T12:00:00.000Z or 2026-05-01T14:00:00%2B02:00, and a time that exists (a second 60 only at a leap second)${spaced}`)
}

// Cursors: the position after which the next page starts, plus a fingerprint of the sort and filters
// the cursor was made for, so a cursor sent with other ones is refused instead of silently skipping.

// A page request checks its cursor's fingerprint and makes the next one's: a hash each time showed
// in a list page's CPU profile. The few filter sets clients page through are remembered.
const fingerprints = new Map<string, string>()
const REMEMBERED = 512

/**
 * Name sorts ordered by the lower-cased name until names were read as people read them
 * (catalogue/name-order.ts). A cursor names the order it was made in, so one from before (`before`)
 * is told apart and refused: continued in the new order, its walk would skip or repeat the plants
 * the two orders place differently, where starting again shows each once.
 */
function fingerprint (query: PlantQuery, before = false): string {
  const sort = sortKeyOf(query.sort) === 'name' && !before ? `${query.sort} as read` : query.sort
  const seed = [sort, [...new Set(query.statuses)].sort(), query.category ?? null, [...new Set(query.tags)].sort(), [...query.terms].sort()]
  // The store fields' filters only when one is given, so a cursor made before they existed still fits.
  const { sku, barcode, updatedSince, priceMin, priceMax } = query
  const more = [sku, barcode, updatedSince, priceMin, priceMax]
  const withStore = more.some((v) => v !== undefined) ? [...seed, more.map((v) => v ?? null)] : seed
  // The stock's filters likewise only when given.
  const stock = [query.inStock, query.lowStock]
  const canonical = JSON.stringify(stock.some((v) => v !== undefined) ? [...withStore, more.map((v) => v ?? null), stock.map((v) => v ?? null)] : withStore)
  let value = fingerprints.get(canonical)
  if (value === undefined) {
    value = hash('sha256', canonical, 'base64url').slice(0, 11)
    if (fingerprints.size >= REMEMBERED) fingerprints.clear()
    fingerprints.set(canonical, value)
  }
  return value
}

export function encodeCursor (query: PlantQuery, last: Position): string {
  const parts: Array<string | number> = [fingerprint(query), last.id]
  if (last.key !== undefined) parts.push(last.key)
  if (last.value !== undefined) parts.push(last.value)
  return Buffer.from(JSON.stringify(parts)).toString('base64url')
}

const malformed = (): HttpProblem =>
  new HttpProblem(400, 'invalid-input', 'cursor is malformed: pass the nextCursor of a previous page', [{ path: '/cursor', message: 'is malformed' }])

export function decodeCursor (cursor: string | undefined, query: PlantQuery): Position | undefined {
  if (cursor === undefined) return undefined
  let parts: unknown
  try {
    parts = JSON.parse(Buffer.from(cursor, 'base64url').toString())
  } catch {
    throw malformed()
  }
  const by = sortKeyOf(query.sort)
  const named = by === 'name'
  const numbered = by === 'number'
  if (!Array.isArray(parts) || parts.length !== (by === 'id' ? 2 : 3) || typeof parts[0] !== 'string' ||
    !Number.isSafeInteger(parts[1]) || parts[1] < 1 || (named && typeof parts[2] !== 'string') || (numbered && !Number.isSafeInteger(parts[2]))) {
    // A cursor of another sort has another shape: say so rather than "malformed".
    if (Array.isArray(parts) && typeof parts[0] === 'string' && parts[0] !== fingerprint(query)) throw otherQuery()
    throw malformed()
  }
  const position: Position = named
    ? { id: parts[1] as number, key: parts[2] as string }
    : numbered ? { id: parts[1] as number, value: parts[2] as number } : { id: parts[1] as number }
  if (named && parts[0] === fingerprint(query, true)) throw orderBefore()
  if (encodeCursor(query, position) !== cursor && parts[0] === fingerprint(query)) throw malformed()
  if (parts[0] !== fingerprint(query)) throw otherQuery()
  return position
}

const orderBefore = (): HttpProblem => new HttpProblem(400, 'invalid-input',
  'cursor was made when sort=name ordered by the lower-cased name; names now order ignoring accents, with numbers by value: start again without a cursor',
  [{ path: '/cursor', message: 'belongs to the name order before' }])

const otherQuery = (): HttpProblem => new HttpProblem(400, 'invalid-input',
  'cursor was made for another sort or other filters: send it with the same sort, status, tag, category, q, sku, barcode, updatedSince, priceMin, priceMax, inStock and lowStock as the page it came from',
  [{ path: '/cursor', message: 'belongs to another sort or other filters' }])
