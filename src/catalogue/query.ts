import { nameKey } from './name-key.js'
import { nameOrderKey } from './name-order.js'
import { foldKey, keyHolds } from './search-key.js'
import type { Plant, PlantStatus } from './plant.js'
import { gtinKey, priceCents, skuKey } from './price-sku-barcode.js'

// What a list query means, in one place: the route parses requests into a PlantQuery, both engines
// translate it to SQL, and the property test walks the same functions over an in-memory catalogue.

export const SORTS = ['id', '-id', 'name', '-name', 'price', '-price', 'updated', '-updated', 'available', '-available'] as const
export type Sort = typeof SORTS[number]

export interface PlantQuery {
  /** Any of these statuses; empty: any status. */
  statuses: PlantStatus[]
  /** Compared ignoring the case of A–Z (filterKey): given as its key. */
  category?: string
  /** Every one of these tags, ignoring the case of A–Z (filterKey): given as their keys. */
  tags: string[]
  /** Lower-cased, accent-free terms the name's folded key must each hold (search-key.ts: short ones at a word's start). */
  terms: string[]
  /** The plant with this SKU, ignoring case. */
  sku?: string
  /** Plants whose barcode stands for this GTIN at any length (price-sku-barcode.ts gtinKey): given as its key. */
  barcode?: string
  /** Plants whose updatedAt is at or after this time (epoch milliseconds). */
  updatedSince?: number
  /** Prices in cents, both inclusive; either excludes unpriced plants. */
  priceMin?: number
  priceMax?: number
  /** true: available > 0; false: tracked with none available. Untracked plants match neither. */
  inStock?: boolean
  /** Tracked plants whose available is at or below their lowStockAt. */
  lowStock?: boolean
  sort: Sort
}

/**
 * Where a page ends: the next page starts strictly after it, in the query's order. `key` is the
 * name's order key (sort=name: name-order.ts), `value` the number a numeric sort orders by (sortValue).
 */
export interface Position { id: number, key?: string, value?: number }

/** sort=price orders unpriced plants as this many cents: after every price (all are below 10^11 cents). */
export const UNPRICED = 100_000_000_000

/** What a sort orders by beside the id: nothing, the name key, or a number. */
export const sortKeyOf = (sort: Sort): 'id' | 'name' | 'number' =>
  sort === 'id' || sort === '-id' ? 'id' : sort === 'name' || sort === '-name' ? 'name' : 'number'

/**
 * The number sort=price, sort=available or sort=updated orders a plant by: its cents (UNPRICED when
 * none), its available stock (UNPRICED when untracked: after every count), or its updatedAt in epoch milliseconds.
 */
export const sortValue = (plant: Plant, sort: Sort): number =>
  sort === 'price' || sort === '-price'
    ? (plant.price === null ? UNPRICED : priceCents(plant.price)!)
    : sort === 'available' || sort === '-available' ? (plant.stock === null ? UNPRICED : plant.stock.available) : Date.parse(plant.updatedAt)

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

/**
 * What category and tag filters compare: the value with A–Z lower-cased and nothing else, which is
 * what SQLite's lower() and PostgreSQL's lower(… COLLATE "C") do, so both engines' expression
 * indexes answer it alike ("Indoor" finds "indoor"; "É" stays apart from "é").
 */
export const filterKey = (value: string): string => value.replace(/[A-Z]+/g, (s) => s.toLowerCase())

/** Does `plant` belong in the query's result? */
export function matches (plant: Plant, query: PlantQuery): boolean {
  if (query.statuses.length > 0 && !query.statuses.includes(plant.status as PlantStatus)) return false
  if (query.category !== undefined && (plant.category === null || filterKey(plant.category) !== filterKey(query.category))) return false
  if (!query.tags.every((t) => plant.tags.some((own) => filterKey(own) === filterKey(t)))) return false
  if (query.sku !== undefined && (plant.sku === null || skuKey(plant.sku) !== skuKey(query.sku))) return false
  if (query.barcode !== undefined && (plant.barcode === null || gtinKey(plant.barcode) !== gtinKey(query.barcode))) return false
  if (query.updatedSince !== undefined && Date.parse(plant.updatedAt) < query.updatedSince) return false
  if (query.priceMin !== undefined || query.priceMax !== undefined) {
    const cents = plant.price === null ? undefined : priceCents(plant.price)
    if (cents === undefined || cents < (query.priceMin ?? 0) || cents > (query.priceMax ?? Infinity)) return false
  }
  if (query.inStock !== undefined && (plant.stock === null || (plant.stock.available > 0) !== query.inStock)) return false
  if (query.lowStock === true && (plant.stock === null || plant.lowStockAt === null || plant.stock.available > plant.lowStockAt)) return false
  const folded = foldKey(nameKey(plant.name))
  return query.terms.every((t) => keyHolds(folded, t))
}

/** The query's order on positions: negative when `a` comes first. */
export function comparePositions (sort: Sort, a: Position, b: Position): number {
  const byId = a.id - b.id
  const ascending = sort.startsWith('-') ? -1 : 1
  const by = sortKeyOf(sort)
  if (by === 'id') return ascending * byId
  if (by === 'number') return ascending * (a.value! - b.value! || byId)
  return ascending * (compareCodePoints(a.key!, b.key!) || byId)
}

export function positionOf (plant: Plant, sort: Sort): Position {
  const by = sortKeyOf(sort)
  if (by === 'name') return { id: plant.id, key: nameOrderKey(plant.name) }
  return by === 'number' ? { id: plant.id, value: sortValue(plant, sort) } : { id: plant.id }
}

/** One page of `plants` (any order) for the query, after `after`: the model both engines must agree with. */
export function pageOf<P extends Plant> (plants: Iterable<P>, query: PlantQuery, after: Position | undefined, limit: number): P[] {
  const order = (a: P, b: P): number => comparePositions(query.sort, positionOf(a, query.sort), positionOf(b, query.sort))
  return [...plants]
    .filter((p) => matches(p, query) && (after === undefined || comparePositions(query.sort, positionOf(p, query.sort), after) > 0))
    .sort(order)
    .slice(0, limit)
}
