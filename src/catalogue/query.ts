import { nameKey } from './name-key.js'
import type { Plant, PlantStatus } from './plant.js'

// What a list query means, in one place: the route parses requests into a PlantQuery, both engines
// translate it to SQL, and the property test walks the same functions over an in-memory catalogue.

export const SORTS = ['id', '-id', 'name', '-name'] as const
export type Sort = typeof SORTS[number]

export interface PlantQuery {
  /** Any of these statuses; empty: any status. */
  statuses: PlantStatus[]
  category?: string
  /** Every one of these tags. */
  tags: string[]
  /** Lower-cased terms the lower-cased name must each contain. */
  terms: string[]
  sort: Sort
}

/** Where a page ends: the next page starts strictly after it, in the query's order. */
export interface Position { id: number, key?: string }

/** Compares by Unicode code point (JavaScript's < compares UTF-16 units, which orders astral characters differently). */
export function compareCodePoints (a: string, b: string): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a.codePointAt(i)!
    const y = b.codePointAt(i)!
    if (x !== y) return x < y ? -1 : 1
    if (x > 0xffff) i++
  }
  return a.length - b.length
}

/** Does `plant` belong in the query's result? */
export function matches (plant: Plant, query: PlantQuery): boolean {
  if (query.statuses.length > 0 && !query.statuses.includes(plant.status as PlantStatus)) return false
  if (query.category !== undefined && plant.category !== query.category) return false
  if (!query.tags.every((t) => plant.tags.includes(t))) return false
  const key = nameKey(plant.name)
  return query.terms.every((t) => key.includes(t))
}

/** The query's order on positions: negative when `a` comes first. */
export function comparePositions (sort: Sort, a: Position, b: Position): number {
  const byId = a.id - b.id
  const ascending = sort === 'id' || sort === 'name' ? 1 : -1
  if (sort === 'id' || sort === '-id') return ascending * byId
  return ascending * (compareCodePoints(a.key!, b.key!) || byId)
}

export const positionOf = (plant: Plant, sort: Sort): Position =>
  sort === 'name' || sort === '-name' ? { id: plant.id, key: nameKey(plant.name) } : { id: plant.id }

/** One page of `plants` (any order) for the query, after `after`: the model both engines must agree with. */
export function pageOf<P extends Plant> (plants: Iterable<P>, query: PlantQuery, after: Position | undefined, limit: number): P[] {
  const order = (a: P, b: P): number => comparePositions(query.sort, positionOf(a, query.sort), positionOf(b, query.sort))
  return [...plants]
    .filter((p) => matches(p, query) && (after === undefined || comparePositions(query.sort, positionOf(p, query.sort), after) > 0))
    .sort(order)
    .slice(0, limit)
}
