import { sortKeyOf } from '../../catalogue/query.js'
import type { ListFilter } from '../plant-store.js'
import { probeSql, SMALL, type Candidate, type Driver } from './list-query.js'

// Which index a list walks, chosen from what the store can count cheaply: each candidate set (a
// tag, the q trigrams, a column's index range) counted up to SMALL. A page then costs what its
// driver costs, whatever the catalogue's size: a small set is fetched whole and sorted; otherwise
// the sort's own index is walked, and with no small set among the filters each row it meets
// matches often enough to fill a page soon.

/** Counts rows up to a cap (a probe's SQL), on the connection the list will run on. */
export type Probe = (text: string, args: unknown[]) => number

/** The columns whose own index can lead a walk, when the filter asks for them. */
function columnCandidates (filter: ListFilter): Candidate[] {
  const sort = filter.sort ?? 'id'
  const out: Candidate[] = []
  if (filter.category !== undefined) out.push({ kind: 'column', column: 'category' })
  if ((filter.statuses ?? []).length > 0) out.push({ kind: 'column', column: 'status' })
  // Sorted by the same column, the sort's own walk starts and stops at the bound: nothing to gain.
  if ((filter.priceMin !== undefined || filter.priceMax !== undefined) && !sort.endsWith('price')) out.push({ kind: 'column', column: 'price' })
  if (filter.updatedSince !== undefined && !sort.endsWith('updated')) out.push({ kind: 'column', column: 'updated' })
  if (filter.inStock !== undefined) out.push({ kind: 'column', column: 'inStock' })
  if (filter.lowStock === true) out.push({ kind: 'column', column: 'lowStock' })
  return out
}

/**
 * How many rows a walk of the sort's index may read before the list takes the rarest filter's
 * rows instead: filters each common but rarely together (two tags never on one plant) leave it
 * reading the whole index for a page. Each row read costs about 1 µs at 1,000,000 plants; a
 * filter that gives up this walk is answered by a member walk or a small sort, both bounded, so
 * the walk's bet is kept small: a set of SMALL plants spread evenly fills a page of 20 within
 * it up to 100,000 plants, and past that is sorted whole at about the cost of this walk.
 */
export const WALK_BUDGET = 2 * SMALL
/** How far the rarest filter is counted when the walk gave up: past it, any of them will do. */
const FALLBACK_CAP = 200_000

/**
 * After the walk gave up, the rarest set is sorted whole when it holds at most this share of the
 * catalogue, and is otherwise a 'member' walk's set. Measured at 1,000,000 plants: sorting reads
 * each candidate's plant (about 1 µs each); the member walk gathers the set's ids (about 0.1 µs
 * each) and steps through the sort's index (about 0.05 µs an entry, at worst all of it).
 */
export const SORTED_SHARE = 1 / 20

/** The plan's thresholds (tests make them small, so a few rows show what a million would). */
export interface PlanLimits { small: number, walkBudget: number, sortedShare: number }
export const PLAN_LIMITS: PlanLimits = { small: SMALL, walkBudget: WALK_BUDGET, sortedShare: SORTED_SHARE }

/** The candidates the filter names (none: the walk reads every row it meets, and never gives up). */
function candidatesOf (filter: ListFilter): { ordered: Candidate[], columns: Candidate[] } {
  const ordered: Candidate[] = [...new Set(filter.tags ?? [])].map((tag) => ({ kind: 'tag', tag }))
  if ((filter.terms ?? []).length > 0) ordered.push({ kind: 'fts' })
  return { ordered, columns: columnCandidates(filter) }
}

/** No filter at all: the sort's index, from the cursor, gives the page's rows and no others. */
export function walksOnlyItsPage (filter: ListFilter): boolean {
  const { ordered, columns } = candidatesOf(filter)
  return ordered.length === 0 && columns.length === 0 && filter.sku === undefined && filter.barcode === undefined &&
    (filter.priceMin ?? filter.priceMax ?? filter.updatedSince) === undefined
}

/**
 * After a walk of the sort's index ran past WALK_BUDGET rows: the filter's rarest candidate set,
 * counted up to FALLBACK_CAP. A small share of the catalogue (`plants`, about) is fetched and
 * sorted whole: its cost is that set's size, where the walk's was the catalogue's. A larger one
 * leads a 'member' walk of the sort's index instead (by id there is no index to walk but the
 * plants themselves, so it is sorted whole at any size).
 */
export function fallbackDriver (filter: ListFilter, probe: Probe, plants: number, { sortedShare }: PlanLimits = PLAN_LIMITS): Driver {
  const { ordered, columns } = candidatesOf(filter)
  // By price or updated, the sort's own column bounds the walk too: it is a candidate here.
  const sort = filter.sort ?? 'id'
  if ((filter.priceMin !== undefined || filter.priceMax !== undefined) && sort.endsWith('price')) columns.push({ kind: 'column', column: 'price' })
  if (filter.updatedSince !== undefined && sort.endsWith('updated')) columns.push({ kind: 'column', column: 'updated' })
  const byId = sortKeyOf(sort) === 'id'
  // Past the sorted share, how many more a set holds changes nothing: counting stops there.
  const cap = byId ? FALLBACK_CAP : Math.min(FALLBACK_CAP, Math.floor(sortedShare * plants) + 1)
  let best: Driver = { kind: 'order' }
  let fewest = Infinity
  for (const candidate of [...ordered, ...columns]) {
    const { text, args } = probeSql(candidate, filter, cap)
    const n = probe(text, args)
    if (n < fewest) { best = candidate; fewest = n }
  }
  if (best.kind === 'order' || fewest <= sortedShare * plants || byId) return best
  return { kind: 'member', of: best }
}

export function chooseDriver (filter: ListFilter, probe: Probe, { small }: PlanLimits = PLAN_LIMITS): Driver {
  // A SKU names one plant, a barcode a handful: their index leads, whatever else is asked.
  if (filter.sku !== undefined || filter.barcode !== undefined) return { kind: 'lookup' }
  // A tag's rows and the q trigrams' come in id order: by id, one of them leads at any size.
  const { ordered, columns } = candidatesOf(filter)
  const byId = sortKeyOf(filter.sort ?? 'id') === 'id'
  if (byId && ordered.length === 1 && columns.length === 0) return ordered[0]
  let smallest: Driver = { kind: 'order' }
  let fewest = Infinity
  let rarestOrdered: Candidate | undefined
  let rarestCount = Infinity
  for (const candidate of [...ordered, ...columns]) {
    const { text, args } = probeSql(candidate, filter, small)
    const n = probe(text, args)
    if (n < fewest) { smallest = candidate; fewest = n }
    if (candidate.kind !== 'column' && n < rarestCount) { rarestOrdered = candidate; rarestCount = n }
    if (n === 0) break
  }
  if (fewest < small) return smallest
  // Nothing small: by id the rarest tag or the trigrams keep the order; else the sort's own index.
  return byId && rarestOrdered !== undefined ? rarestOrdered : { kind: 'order' }
}

/**
 * A count's walk: a list's, always by id and to the cap, except where the list would walk every
 * plant in id order: a stock filter's partial index (stock-migration.ts) holds that filter's plants
 * alone, in id order, so walking it reaches the cap reading no plant the id walk would not (at
 * 1,000,000 plants, 1 in 12 low on stock, the id walk read 120,000 plants to count 10,000).
 */
export function countDriver (filter: ListFilter, probe: Probe, limits: PlanLimits = PLAN_LIMITS): Driver {
  const driver = chooseDriver(filter, probe, limits)
  if (driver.kind !== 'order') return driver
  return columnCandidates(filter).find((c) => c.kind === 'column' && (c.column === 'inStock' || c.column === 'lowStock')) ?? driver
}
