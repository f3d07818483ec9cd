import type Database from 'better-sqlite3'
import { QueryTooSlow } from '../../catalogue/errors.js'
import { sortKeyOf, UNPRICED } from '../../catalogue/query.js'
import { foldKey, isShortTerm, keyHolds, startTrigram } from '../../catalogue/search-key.js'
import { orderKeyDecides } from '../../catalogue/name-order.js'
import { gtinKey, skuKey } from '../../catalogue/price-sku-barcode.js'
import type { CountFilter, ListFilter } from '../plant-store.js'
import { PLANT_COLUMNS } from './plant-rows.js'
import { INDEXED_UP_TO } from './search-backlog.js'
import type { NameBounds } from './category-name-bounds.js'

// A list query in SQLite: one walk along an index in the page's order (keyset, no OFFSET), the
// other filters checked per candidate. Which index leads is chosen here, not left to the planner,
// so a page's cost stays flat: the rarest tag, the name's trigrams, or the order's own index.

/** Below this many candidates a driver's rows are fetched whole and sorted; above, the order's index is walked. */
export const SMALL = 2_000

export interface Sql { text: string, args: unknown[] }

const PRINTABLE_ASCII = /^[\x20-\x7e]+$/

export type Driver =
  | { kind: 'order' }
  | { kind: 'tag', tag: string }
  | { kind: 'fts' }
  /** The plants with the filter's sku or barcode, by its index, sorted whole (a handful). */
  | { kind: 'lookup' }
  /** The plants in a column's index range (fewer than SMALL: list-plan.ts), sorted whole. */
  | { kind: 'column', column: Column }
  /**
   * The sort's own index walked as 'order' walks it, each entry first looked up in a candidate set
   * (the ids SQLite gathers once, from that candidate's index alone, into a table of its own in
   * memory). The sort's index holds the id, so an entry outside the set costs an index step and a
   * lookup, not a plant's row: a large set whose plants sit together far along the sort's order
   * (every Monstera in name order, no fern among the unpriced first by -price) is met there at a
   * small cost per entry, where sorting it whole read each of its plants.
   */
  | { kind: 'member', of: Candidate }

/** A filter's column with an index of its own (migrations.ts). */
export type Column = 'category' | 'status' | 'price' | 'updated' | 'inStock' | 'lowStock'
/** A driver that list-plan.ts counts before choosing it. */
export type Candidate = Exclude<Driver, { kind: 'order' } | { kind: 'lookup' } | { kind: 'member' }>
const COLUMN_INDEXES: Record<Exclude<Column, 'inStock'>, string> = { category: 'plants_category_key', status: 'plants_status', price: 'plants_price', updated: 'plants_updated', lowStock: 'plants_low_stock' }
/** A column's index: inStock's is one of two partial indexes (stock-migration.ts), by the value asked. */
const columnIndex = (column: Column, filter: ListFilter): string =>
  column === 'inStock' ? (filter.inStock === true ? 'plants_in_stock' : 'plants_out_of_stock') : COLUMN_INDEXES[column]

/**
 * What sort=price and sort=updated order by: index expressions (migrations.ts), written here exactly
 * as there so SQLite walks the index. An unpriced plant orders as UNPRICED cents: after every price.
 */
const NUMBER_KEYS = { price: `coalesce(p.price, ${UNPRICED})`, updated: 'p.updated_at', available: `coalesce(p.available, ${UNPRICED})` }
const NUMBER_INDEXES = { price: 'plants_price', updated: 'plants_updated', available: 'plants_available' }
/**
 * A barcode's GTIN-14 key (catalogue/price-sku-barcode.ts gtinKey) in SQL: the expression of the index
 * plants_gtin (migrations.ts), written here exactly as there so SQLite seeks it.
 */
export const GTIN_KEY = "substr('0000000000000' || p.barcode, -14)"
const numberKey = (sort: string): 'price' | 'updated' | 'available' => sort.endsWith('price') ? 'price' : sort.endsWith('available') ? 'available' : 'updated'

/**
 * A MATCH expression for FTS5: a few trigrams of each term, each quoted (a quote doubled), all
 * required. Any trigrams of the term find a superset of the names holding it, and q_match() then
 * narrows the candidates to those; what a search costs is the doclists it walks. So a term is tiled
 * (every third trigram and the last, not every overlapping one), and trigrams of letters and digits
 * only are preferred: one that holds a space or a sign ("#48", "a #") is in many names, so it is left
 * out when two others remain (on 1,000,000 bench names `#483291` walked 19,000 entries, now 8,000).
 * A term whose tiles repeat ("potpotpot": pot, pot, pot) takes every distinct trigram instead: its
 * tiles alone select every name holding "pot", all of them false matches to reject, where "otp" is rare.
 * A short term (1–2 characters) is one marked trigram of the word starts (search-key.ts).
 */
export const ftsMatch = (terms: string[]): string => [...new Set(terms.flatMap((term) => {
  if (isShortTerm(term)) return [startTrigram(term)]
  const chars = [...term]
  const all = tiles(chars)
  const words = tiles(chars, (trigram) => /^[\p{L}\p{N}]{3}$/u.test(trigram))
  const chosen = new Set(words).size >= 2 ? words : all
  return new Set(chosen).size < chosen.length ? overlapping(chars) : chosen
}))].map((t) => `"${t.replaceAll('"', '""')}"`).join(' AND ')

const overlapping = (chars: string[]): string[] => [...new Set(chars.slice(2).map((c, i) => chars[i] + chars[i + 1] + c))]

/** Trigrams (of those `keep` accepts) that cover the term from the left, and the last one. */
function tiles (chars: string[], keep: (trigram: string) => boolean = () => true): string[] {
  const out: string[] = []
  let last: string | undefined
  let covered = 0
  for (let i = 0; i + 3 <= chars.length; i++) {
    const trigram = chars.slice(i, i + 3).join('')
    if (!keep(trigram)) continue
    last = trigram
    if (i >= covered) {
      out.push(trigram)
      covered = i + 3
    }
  }
  if (last !== undefined && out[out.length - 1] !== last) out.push(last)
  return out
}

/** Counts up to `cap` candidates of a driver: the cost is bounded by the cap, not the catalogue. */
export function probeSql (driver: Candidate, filter: ListFilter, cap: number): Sql {
  if (driver.kind === 'column') {
    const { text, args } = columnTerm(driver.column, filter, '')
    return { text: `SELECT count(*) FROM (SELECT 1 FROM plants p INDEXED BY ${columnIndex(driver.column, filter)} WHERE ${text} LIMIT ?)`, args: [...args, cap] }
  }
  return driver.kind === 'tag'
    ? { text: 'SELECT count(*) FROM (SELECT 1 FROM plant_tags WHERE tag_key = ? LIMIT ?)', args: [driver.tag, cap] }
    : { text: 'SELECT count(*) FROM (SELECT 1 FROM plants_fts WHERE plants_fts MATCH ? LIMIT ?)', args: [ftsMatch(filter.terms ?? []), cap] }
}

/** A candidate set's ids, read from its own index alone (a 'member' walk's set). */
function candidateIds (driver: Candidate, filter: ListFilter): Sql {
  if (driver.kind === 'column') {
    const { text, args } = columnTerm(driver.column, filter, '')
    return { text: `SELECT p.id FROM plants p INDEXED BY ${columnIndex(driver.column, filter)} WHERE ${text}`, args }
  }
  return driver.kind === 'tag'
    ? { text: 'SELECT plant_id FROM plant_tags WHERE tag_key = ?', args: [driver.tag] }
    : { text: 'SELECT rowid FROM plants_fts WHERE plants_fts MATCH ?', args: [ftsMatch(filter.terms ?? [])] }
}

/** Whether a driver's candidates come from the search index, which a page merges with its backlog (pendingSql). */
export const searchesIndex = (driver: Driver): boolean => driver.kind === 'fts' || (driver.kind === 'member' && driver.of.kind === 'fts')

/**
 * A column's term of the filter, as its index holds it (`prefix` '+' keeps the planner off the
 * index, '' lets a walk seek it). The filter must ask for the column.
 */
function columnTerm (column: Column, filter: ListFilter, prefix: '' | '+'): Sql {
  switch (column) {
    case 'category':
      // The key, as plants_category_key holds it (catalogue/query.ts filterKey).
      return { text: `${prefix}lower(p.category) = ?`, args: [filter.category] }
    case 'status': {
      const asked = statuses(filter)
      return { text: `${prefix}p.status IN (${asked.map(() => '?').join(', ')})`, args: asked }
    }
    case 'price':
      // Either bound leaves unpriced plants out.
      return { text: `${prefix}${NUMBER_KEYS.price} BETWEEN ? AND ?`, args: [filter.priceMin ?? 0, filter.priceMax ?? UNPRICED - 1] }
    case 'updated':
      return { text: `${prefix}p.updated_at >= ?`, args: [filter.updatedSince] }
    // As the partial indexes' own terms (stock-migration.ts stockStateMigration), so SQLite may walk them.
    case 'inStock':
      return { text: filter.inStock === true ? `${prefix}p.stock_state & 1` : `${prefix}p.stock_state & 2`, args: [] }
    case 'lowStock':
      return { text: `${prefix}p.stock_state & 4`, args: [] }
  }
}

/**
 * `bounds`: the asked category's name order bounds (category-name-bounds.ts), which a walk of the
 * name index seeks to instead of stepping every entry outside them.
 */
export function listSql (filter: ListFilter, driver: Driver, bounds?: NameBounds): Sql {
  return walk(filter, driver, searchesIndex(driver), bounds)
}

/**
 * Counts up to `cap` plants of the filter: the list's own walk by id (in the order any driver's
 * index gives for free) stopped at the cap. SQLite leaves the walk's unused columns unread. With
 * `pending`, the search index's backlog is walked too and a plant in both counted once, so the
 * count can exceed `cap` (up to twice): the caller caps it.
 */
export function countSql (filter: CountFilter, driver: Driver, cap: number, pending: boolean): Sql {
  const walkOf = { ...filter, afterId: 0, limit: cap }
  const { text, args } = listSql(walkOf, driver)
  if (!pending) return { text: `SELECT count(*) FROM (${text})`, args }
  const backlog = pendingSql(walkOf)
  return { text: `SELECT count(*) FROM (SELECT id FROM (${text}) UNION SELECT id FROM (${backlog.text}))`, args: [...args, ...backlog.args] }
}

/**
 * The same page from the search index's backlog (search-backlog.ts): the names written since the
 * index last took its changes. A page of q is the first `limit` of this walk and the index's
 * together (mergePages); both carry the sort's key last.
 */
export function pendingSql (filter: ListFilter): Sql {
  return walk(filter, { kind: 'pending' }, true)
}

type Row = unknown[]
/** Merges two pages in the filter's order (name order keys compared by code point, as SQLite compares them); a plant in both is one row. */
export function mergePages (a: Row[], b: Row[], filter: ListFilter): Row[] {
  const keyed = sortKeyOf(filter.sort ?? 'id') !== 'id'
  const sign = filter.sort?.startsWith('-') ? -1 : 1
  // The sort's key is the row's last column (a name order key or a number).
  const byKey = (x: unknown, y: unknown): number => typeof x === 'string' ? compareCodePoints(x, y as string) : (x as number) - (y as number)
  const order = (x: Row, y: Row): number => sign * ((keyed ? byKey(x[x.length - 1], y[y.length - 1]) : 0) || (x[0] as number) - (y[0] as number))
  const seen = new Set(a.map((row) => row[0]))
  return [...a, ...b.filter((row) => !seen.has(row[0]))].sort(order).slice(0, filter.limit)
}

const statuses = (filter: ListFilter): string[] => filter.statuses ?? []

function compareCodePoints (a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b)) // UTF-8 bytes sort as code points do
}

/** One ordered walk of a driver; `withKey` adds the sort's key, which the union of two walks orders by. */
function walk (filter: ListFilter, driver: Driver | { kind: 'pending' }, withKey = false, bounds?: NameBounds): Sql {
  const sort = filter.sort ?? 'id'
  const byName = sort === 'name' || sort === '-name'
  const numbered = sortKeyOf(sort) === 'number'
  const keyExpr = byName ? 'p.name_order_key' : numbered ? NUMBER_KEYS[numberKey(sort)] : 'p.id'
  const desc = sort.startsWith('-')
  // A walk of the sort's own index.
  const order = driver.kind === 'order' || driver.kind === 'member'
  const args: unknown[] = []
  const where: string[] = []
  let from = 'plants p'
  // The id the keyset and the order use: the driver's own column, so its index gives the order.
  let id = 'p.id'
  if (driver.kind === 'tag') {
    from = 'plant_tags t0 JOIN plants p ON p.id = t0.plant_id'
    id = 't0.plant_id'
    // Tags are compared by their keys (catalogue/query.ts filterKey), which lead plant_tags' primary
    // key: the walk is in plant_id order. A plant holding two tags of one key ("Big", "big") has two
    // rows there: only its least is walked.
    where.push('t0.tag_key = ? AND NOT EXISTS (SELECT 1 FROM plant_tags d WHERE d.tag_key = ? AND d.plant_id = t0.plant_id AND d.tag < t0.tag)')
    args.push(driver.tag, driver.tag)
  } else if (driver.kind === 'fts') {
    from = 'plants_fts f JOIN plants p ON p.id = f.rowid'
    id = 'f.rowid'
    where.push('plants_fts MATCH ?')
    args.push(ftsMatch(filter.terms ?? []))
  } else if (driver.kind === 'pending') {
    from = `(SELECT DISTINCT plant_id FROM changes WHERE seq > ${INDEXED_UP_TO} AND index_add IS NOT NULL) f JOIN plants p ON p.id = f.plant_id`
    id = 'f.plant_id'
  } else if (driver.kind === 'member') {
    // Before the guard and every term that reads the plant's row: SQLite checks it on the index entry.
    const set = candidateIds(driver.of, filter)
    where.push(`p.id IN (${set.text})`)
    args.push(...set.args)
  }
  if (driver.kind === 'lookup') {
    // The lookup's own index leads: its terms go first, unprefixed.
    if (filter.sku !== undefined) {
      where.push('p.sku IS NOT NULL AND lower(p.sku) = ?')
      args.push(skuKey(filter.sku))
    }
    if (filter.barcode !== undefined) {
      where.push(`p.barcode IS NOT NULL AND ${filter.sku !== undefined ? '+' : ''}${GTIN_KEY} = ?`)
      args.push(gtinKey(filter.barcode))
    }
  }
  if (byName) {
    // On the index entry, before the guard: SQLite seeks plants_name to the bound and stops at the other.
    if (bounds !== undefined && (driver.kind === 'order' || driver.kind === 'member')) {
      where.push('p.name_order_key BETWEEN ? AND ?')
      args.push(bounds.least, bounds.greatest)
    }
    if (filter.afterKey !== undefined) {
      where.push(`(p.name_order_key, ${id}) ${desc ? '<' : '>'} (?, ?)`)
      args.push(filter.afterKey, filter.afterId)
    }
  } else if (numbered) {
    if (filter.afterValue !== undefined) {
      // Spelt out: SQLite seeks an expression index by a bound on the expression, not by a row value.
      const [strict, loose] = desc ? ['<', '<='] : ['>', '>=']
      where.push(`${keyExpr} ${loose} ? AND (${keyExpr} ${strict} ? OR ${id} ${strict} ?)`)
      args.push(filter.afterValue, filter.afterValue, filter.afterId)
    }
  } else if (filter.afterId > 0) {
    where.push(`${id} ${desc ? '<' : '>'} ?`)
    args.push(filter.afterId)
  }
  // The guard runs once per candidate row: past the time limit it stops the statement. A walk
  // that rejects no candidate ends after `limit` rows, so it gets none: a call into JavaScript per
  // row was a fifth of reading a plain page.
  // A member walk steps index entries, most of them outside its set: each other tag asked is a set
  // of its own too, gathered once, so an entry that lacks it costs a lookup in memory, not a seek of
  // plant_tags (two tags never on one plant: each of the first tag's plants asked the index).
  const memberTags = driver.kind === 'member'
  if (memberTags) {
    for (const tag of new Set(filter.tags ?? [])) {
      if (driver.of.kind === 'tag' && tag === driver.of.tag) continue
      where.push('p.id IN (SELECT plant_id FROM plant_tags WHERE tag_key = ?)')
      args.push(tag)
    }
  }
  // By name, a term the name order key decides (name-order.ts) is checked on the index entry, before
  // the guard: an entry whose name lacks it costs the key's comparison, not its plant's row.
  const keyTerms = byName && order ? (filter.terms ?? []).filter(orderKeyDecides) : []
  for (const term of keyTerms) {
    // GLOB, which compares as instr() does but costs less an entry; the term's own signs escaped.
    where.push('p.name_order_key GLOB ?')
    args.push(`*${term.replace(/[*?[]/g, '[$&]')}*`)
  }
  const guard = where.length
  for (const tag of (memberTags ? [] : filter.tags ?? [])) {
    // The driver's own tag holds already.
    if (driver.kind === 'tag' && tag === driver.tag) continue
    // By the driver's own id: checked before the plant's row is read, so a candidate that lacks the
    // tag costs an index lookup, not a row (two tags never together, walked from one of them).
    where.push(`EXISTS (SELECT 1 FROM plant_tags t WHERE t.tag_key = ? AND t.plant_id = ${id})`)
    args.push(tag)
  }
  for (const term of filter.terms ?? []) {
    if (keyTerms.includes(term)) continue
    // In JavaScript (search-key.ts), so the folding and the words are those of the other engine and the model.
    // A long term of printable ASCII found as written in the key is found in its folded form too:
    // SQLite's instr() settles those names without a call into JavaScript for each.
    if (!isShortTerm(term) && PRINTABLE_ASCII.test(term)) {
      where.push('(instr(p.name_key, ?) > 0 OR q_match(p.name_key, ?))')
      args.push(term, term)
    } else {
      where.push('q_match(p.name_key, ?)')
      args.push(term)
    }
  }
  // A column's term is left bare where its index does the walk: the column driver's own, the sort's
  // when it is the same column, or for an id order the status and category indexes (which hold the id).
  const single = statuses(filter).length === 1 && filter.category === undefined
  const bare: Record<Column, boolean> = {
    updated: order && numbered && numberKey(sort) === 'updated',
    price: order && numbered && numberKey(sort) === 'price',
    inStock: false,
    lowStock: false,
    // The unary + keeps the planner from trading the ordered walk for the status index and a sort.
    status: order && sortKeyOf(sort) === 'id' && single,
    category: order && sortKeyOf(sort) === 'id'
  }
  if (driver.kind === 'column') bare[driver.column] = true
  const asked: Record<Column, boolean> = {
    updated: filter.updatedSince !== undefined,
    price: filter.priceMin !== undefined || filter.priceMax !== undefined,
    status: statuses(filter).length > 0,
    category: filter.category !== undefined,
    inStock: filter.inStock !== undefined,
    lowStock: filter.lowStock === true
  }
  for (const column of ['updated', 'price', 'status', 'category', 'inStock', 'lowStock'] as const) {
    if (!asked[column]) continue
    const term = columnTerm(column, filter, bare[column] ? '' : '+')
    where.push(term.text)
    args.push(...term.args)
  }
  // A walk that checks terms on the key keeps its guard: the entries that pass are the rows it reads.
  if (where.length > guard || keyTerms.length > 0) where.splice(guard, 0, `query_guard(${id})`)
  const dir = desc ? ' DESC' : ''
  const orderBy = sortKeyOf(sort) !== 'id' ? `${keyExpr}${dir}, ${id}${dir}` : `${id}${dir}`
  args.push(filter.limit)
  const indexed = driver.kind === 'column'
    ? ` INDEXED BY ${columnIndex(driver.column, filter)}`
    : !order ? '' : byName ? ' INDEXED BY plants_name' : numbered ? ` INDEXED BY ${NUMBER_INDEXES[numberKey(sort)]}` : ''
  return {
    text: `SELECT ${PLANT_COLUMNS}${withKey ? `, ${keyExpr}` : ''} FROM ${from.replace('plants p', `plants p${indexed}`)} ${where.length > 0 ? `WHERE ${where.join(' AND ')} ` : ''}ORDER BY ${orderBy} LIMIT ?`,
    args
  }
}

/** How many names one search may reject as false matches of the index before it is refused (503 query-too-slow). */
export const REJECT_BUDGET = 10_000

/**
 * Registers q_match(name_key, term), the per-candidate check of a term, on a connection. Each search
 * through the trigram index may reject at most `budget` names (counted from `reset()`): a term whose trigrams are all common
 * but which is in few names makes the index's candidates mostly false matches, and each costs a row
 * read and a call here; the budget bounds that work by count, as the guard's timer bounds it by time.
 */
export function searchFunctions (db: Database.Database, budget = REJECT_BUDGET): { reset: (counted?: boolean) => void } {
  let rejected = 0
  let limit = budget
  let lastKey: string | undefined
  let lastFolded = ''
  db.function('q_match', { deterministic: false }, (key: unknown, term: unknown) => {
    if (key !== lastKey) {
      lastKey = key as string
      lastFolded = foldKey(lastKey)
    }
    if (keyHolds(lastFolded, term as string)) return 1
    if (++rejected > limit) throw new QueryTooSlow(`the search rejected more than ${limit} names its index suggested`)
    return 0
  })
  // Uncounted: a walk of the sort's index meets names the index never suggested, and its own row
  // budget (list-plan.ts WALK_BUDGET) bounds it.
  return { reset: (counted = true) => { rejected = 0; limit = counted ? budget : Infinity } }
}
