import type { ListFilter } from '../plant-store.js'

// A list query in SQLite: one walk along an index in the page's order (keyset, no OFFSET), the
// other filters checked per candidate. Which index leads is chosen here, not left to the planner,
// so a page's cost stays flat: the rarest tag, the name's trigrams, or the order's own index.

/** Below this many candidates a driver's rows are fetched whole and sorted; above, the order's index is walked. */
export const SMALL = 2_000

export interface Sql { text: string, args: unknown[] }

export type Driver =
  | { kind: 'order' }
  | { kind: 'tag', tag: string }
  | { kind: 'fts' }

/**
 * A MATCH expression for FTS5: trigrams that tile each term (every third one, and the last), each
 * quoted (a quote doubled), all required. A name holding the term holds them all, and instr() then
 * narrows the candidates to the names that hold the term itself. The overlapping trigrams in between
 * add nothing to that but their doclists: every one of them is walked (a 7-character term reads 3
 * instead of 5).
 */
export const ftsMatch = (terms: string[]): string => [...new Set(terms.flatMap((t) => {
  const chars = [...t]
  const starts = []
  for (let i = 0; i + 3 <= chars.length; i += 3) starts.push(i)
  if (chars.length % 3 !== 0) starts.push(chars.length - 3)
  return starts.map((i) => chars.slice(i, i + 3).join(''))
}))].map((t) => `"${t.replaceAll('"', '""')}"`).join(' AND ')

/** Counts up to `cap` candidates of a driver: the cost is bounded by the cap, not the catalogue. */
export function probeSql (driver: Exclude<Driver, { kind: 'order' }>, filter: ListFilter, cap: number): Sql {
  return driver.kind === 'tag'
    ? { text: 'SELECT count(*) FROM (SELECT 1 FROM plant_tags WHERE tag = ? LIMIT ?)', args: [driver.tag, cap] }
    : { text: 'SELECT count(*) FROM (SELECT 1 FROM plants_fts WHERE plants_fts MATCH ? LIMIT ?)', args: [ftsMatch(filter.terms ?? []), cap] }
}

export function listSql (filter: ListFilter, driver: Driver): Sql {
  if (driver.kind !== 'fts') return walk(filter, driver)
  // The search index is written behind (search-backlog.ts): names it does not hold yet are in its
  // backlog, so the page is the first `limit` of both walks together. A plant in both is one row.
  const indexed = walk(filter, driver, true)
  const pending = walk(filter, { kind: 'pending' }, true)
  const dir = filter.sort?.startsWith('-') ? ' DESC' : ''
  const order = filter.sort === 'name' || filter.sort === '-name' ? `name_key${dir}, id${dir}` : `id${dir}`
  return {
    text: `SELECT id, name, category, tags, status, version, photos FROM (SELECT * FROM (${indexed.text}) UNION SELECT * FROM (${pending.text})) ORDER BY ${order} LIMIT ?`,
    args: [...indexed.args, ...pending.args, filter.limit]
  }
}

/** One ordered walk of a driver; `withKey` adds the name key, which the union of two walks orders by. */
function walk (filter: ListFilter, driver: Driver | { kind: 'pending' }, withKey = false): Sql {
  const sort = filter.sort ?? 'id'
  const byName = sort === 'name' || sort === '-name'
  const desc = sort.startsWith('-')
  const args: unknown[] = []
  const where: string[] = []
  let from = 'plants p'
  // The id the keyset and the order use: the driver's own column, so its index gives the order.
  let id = 'p.id'
  if (driver.kind === 'tag') {
    from = 'plant_tags t0 JOIN plants p ON p.id = t0.plant_id'
    id = 't0.plant_id'
    where.push('t0.tag = ?')
    args.push(driver.tag)
  } else if (driver.kind === 'fts') {
    from = 'plants_fts f JOIN plants p ON p.id = f.rowid'
    id = 'f.rowid'
    where.push('plants_fts MATCH ?')
    args.push(ftsMatch(filter.terms ?? []))
  } else if (driver.kind === 'pending') {
    from = '(SELECT DISTINCT plant_id FROM plants_fts_pending WHERE added = 1) f JOIN plants p ON p.id = f.plant_id'
    id = 'f.plant_id'
  }
  if (byName) {
    if (filter.afterKey !== undefined) {
      where.push(`(p.name_key, ${id}) ${desc ? '<' : '>'} (?, ?)`)
      args.push(filter.afterKey, filter.afterId)
    }
  } else if (filter.afterId > 0) {
    where.push(`${id} ${desc ? '<' : '>'} ?`)
    args.push(filter.afterId)
  }
  // The guard runs once per candidate row: past the time limit it stops the statement. A walk
  // that rejects no candidate ends after `limit` rows, so it gets none: a call into JavaScript per
  // row was a fifth of reading a plain page.
  const guard = where.length
  for (const tag of (filter.tags ?? [])) {
    if (driver.kind === 'tag' && tag === driver.tag) continue
    where.push('EXISTS (SELECT 1 FROM plant_tags t WHERE t.tag = ? AND t.plant_id = p.id)')
    args.push(tag)
  }
  for (const term of filter.terms ?? []) {
    where.push('instr(p.name_key, ?) > 0')
    args.push(term)
  }
  const statuses = filter.statuses ?? []
  if (statuses.length > 0) {
    // The unary + keeps the planner from trading the ordered walk for the status index and a sort.
    const column = driver.kind === 'order' && !byName && statuses.length === 1 && filter.category === undefined ? 'p.status' : '+p.status'
    where.push(`${column} IN (${statuses.map(() => '?').join(', ')})`)
    args.push(...statuses)
  }
  if (filter.category !== undefined) {
    where.push(`${driver.kind === 'order' && !byName ? 'p.category' : '+p.category'} = ?`)
    args.push(filter.category)
  }
  if (where.length > guard) where.splice(guard, 0, 'query_guard(p.id)')
  const dir = desc ? ' DESC' : ''
  const order = byName ? `p.name_key${dir}, ${id}${dir}` : `${id}${dir}`
  args.push(filter.limit)
  const indexed = byName && driver.kind === 'order' ? ' INDEXED BY plants_name' : ''
  return {
    text: `SELECT p.id, p.name, p.category, p.tags, p.status, p.version, p.photos${withKey ? ', p.name_key' : ''} FROM ${from.replace('plants p', `plants p${indexed}`)} ${where.length > 0 ? `WHERE ${where.join(' AND ')} ` : ''}ORDER BY ${order} LIMIT ?`,
    args
  }
}
