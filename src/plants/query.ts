import { createHash } from 'node:crypto'
import { nameKey } from '../catalogue/name-key.js'
import type { PlantQuery, Position } from '../catalogue/query.js'
import { HttpProblem } from '../http/problem.js'
import type { ListQuery } from './schemas.js'

// bench/ names the query's type through this module.

// A list query as HTTP speaks it: `q` split into terms, and the cursors that carry a page's end.
// What the query means (its filters and orders) is the catalogue's (catalogue/query.ts).

export const Q_RULE = 'must be 1–100 characters holding 1–5 terms separated by white space, each of at least 3 characters'

/** Splits `q` into its lower-cased terms, or refuses it naming the rule. */
export function parseTerms (q: string | undefined): string[] {
  if (q === undefined) return []
  const terms = q.split(/\s+/u).filter((t) => t !== '')
  const refuse = (why: string): never => {
    throw new HttpProblem(400, 'invalid-input', `q ${why}`, [{ path: '/q', message: why }])
  }
  if (terms.length === 0) refuse('must hold at least one term (it is only white space)')
  if (terms.length > 5) refuse(`must hold at most 5 terms (it holds ${terms.length})`)
  const short = terms.find((t) => [...t].length < 3)
  if (short !== undefined) refuse(`terms must each be at least 3 characters ("${short}" is shorter)`)
  return [...new Set(terms.map(nameKey))]
}

/**
 * The filters (and sort) of a list request as the catalogue's query. The list and the count both
 * parse through here, so a filter added to the list's query string counts as it lists.
 */
export function plantQueryOf (query: Omit<ListQuery, 'limit' | 'cursor'>): PlantQuery {
  const { status, category, tag, q, sort = 'id' } = query
  return { statuses: [...new Set(status)], category, tags: [...new Set(tag)], terms: parseTerms(q), sort }
}

// Cursors: the position after which the next page starts, plus a fingerprint of the sort and filters
// the cursor was made for, so a cursor sent with other ones is refused instead of silently skipping.

// A page request checks its cursor's fingerprint and makes the next one's: a hash each time was
// 2–3 % of a list page's CPU. The few filter sets clients page through are remembered.
const fingerprints = new Map<string, string>()
const REMEMBERED = 512

function fingerprint (query: PlantQuery): string {
  const canonical = JSON.stringify([query.sort, [...new Set(query.statuses)].sort(), query.category ?? null, [...new Set(query.tags)].sort(), [...query.terms].sort()])
  let value = fingerprints.get(canonical)
  if (value === undefined) {
    value = createHash('sha256').update(canonical).digest('base64url').slice(0, 11)
    if (fingerprints.size >= REMEMBERED) fingerprints.clear()
    fingerprints.set(canonical, value)
  }
  return value
}

export function encodeCursor (query: PlantQuery, last: Position): string {
  const parts: Array<string | number> = [fingerprint(query), last.id]
  if (last.key !== undefined) parts.push(last.key)
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
  const named = query.sort === 'name' || query.sort === '-name'
  if (!Array.isArray(parts) || parts.length !== (named ? 3 : 2) || typeof parts[0] !== 'string' ||
    !Number.isSafeInteger(parts[1]) || parts[1] < 1 || (named && typeof parts[2] !== 'string')) {
    // A cursor of another sort has another shape: say so rather than "malformed".
    if (Array.isArray(parts) && typeof parts[0] === 'string' && parts[0] !== fingerprint(query)) throw otherQuery()
    throw malformed()
  }
  const position: Position = named ? { id: parts[1] as number, key: parts[2] as string } : { id: parts[1] as number }
  if (encodeCursor(query, position) !== cursor && parts[0] === fingerprint(query)) throw malformed()
  if (parts[0] !== fingerprint(query)) throw otherQuery()
  return position
}

const otherQuery = (): HttpProblem => new HttpProblem(400, 'invalid-input',
  'cursor was made for another sort or other filters: send it with the same sort, status, tag, category and q as the page it came from',
  [{ path: '/cursor', message: 'belongs to another sort or other filters' }])
