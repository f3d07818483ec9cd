import pg from 'pg'
import { sortKeyOf, UNPRICED } from '../../catalogue/query.js'
import { isShortTerm } from '../../catalogue/search-key.js'
import { gtinKey, skuKey } from '../../catalogue/price-sku-barcode.js'
import type { ListFilter } from '../plant-store.js'
import { toPostgresText } from './text-escape.js'

// A list query on PostgreSQL: keyset pagination along the page's order (no OFFSET); the planner
// picks between the order's index, the tag rows and the search columns' indexes from its statistics.

/**
 * The name key as stored: text cannot hold U+0000, so U+0000 and U+0001 become two characters that
 * keep code point order (U+0001 U+0001, U+0001 U+0002), unlike the record's escape (see text-escape.ts).
 */
export const toKey = (key: string): string =>
  key.includes('\0') || key.includes('\u0001') ? key.replaceAll('\u0001', '\u0001\u0002').replaceAll('\0', '\u0001\u0001') : key

/**
 * Tags ordered rarest first, each counted up to a cap so the count's cost is bounded: the walk starts
 * from the rarest. Bitmap scans are off for the count: one reads every row of the tag before the
 * LIMIT applies, where an index scan stops at the cap.
 */
export async function rarestFirst (client: pg.PoolClient, tags: string[]): Promise<string[]> {
  if (tags.length < 2) return tags
  await client.query('SET enable_bitmapscan = off')
  try {
    const { rows } = await client.query<{ tag: string, n: number }>(
      'SELECT t.tag, (SELECT count(*)::int FROM (SELECT 1 FROM plant_tags WHERE lower(tag COLLATE "C") = t.tag LIMIT 500) x) AS n FROM unnest($1::text[]) AS t (tag)', [tags])
    return rows.sort((a, b) => a.n - b.n).map((r) => r.tag)
  } finally {
    await client.query('RESET enable_bitmapscan')
  }
}

const likeEscape = (s: string): string => s.replace(/[\\%_]/g, (c) => `\\${c}`)

/** `tags` are already escaped for PostgreSQL and ordered rarest first. */
export function listQuery (filter: ListFilter, columns: string): { text: string, values: unknown[] } {
  const sort = filter.sort ?? 'id'
  const byName = sort === 'name' || sort === '-name'
  const numbered = sortKeyOf(sort) === 'number'
  // What sort=price, sort=updated and sort=available order by: the index expressions of migrations 004 and 018, written alike.
  const keyExpr = byName
    ? 'p.name_order_key'
    : sort.endsWith('price') ? `coalesce(p.price, ${UNPRICED})` : sort.endsWith('available') ? `coalesce(p.available, ${UNPRICED})` : 'p.updated_at'
  const desc = sort.startsWith('-')
  const tags = filter.tags ?? []
  const values: unknown[] = []
  const param = (v: unknown): string => { values.push(v); return `$${values.length}` }
  const where: string[] = []
  let from = 'plants p'
  let id = 'p.id'
  // A SKU names one plant, a barcode a handful: their indexes (plants_sku; plants_gtin, migration
  // 011: a barcode's GTIN-14 key, catalogue/price-sku-barcode.ts gtinKey, the same expression) lead,
  // whatever else is asked. OFFSET 0 plans them apart: joined to the rest, the planner guessed a
  // barcode common and walked the order's index past every plant for it.
  const lookup: string[] = []
  if (filter.sku !== undefined) lookup.push(`p.sku IS NOT NULL AND lower(p.sku) = ${param(skuKey(filter.sku))}`)
  if (filter.barcode !== undefined) lookup.push(`p.barcode IS NOT NULL AND lpad(p.barcode, 14, '0') = ${param(gtinKey(filter.barcode))}`)
  if (lookup.length > 0) {
    from = `(SELECT * FROM plants p WHERE ${lookup.join(' AND ')} OFFSET 0) p`
    if (tags.length > 0) where.push(`ARRAY(SELECT lower(t COLLATE "C") FROM unnest(p.tags) AS t) @> ${param(tags)}::text[]`)
  } else if (tags.length > 0) {
    // Walk the rarest tag's rows in id order; the other tags are checked per candidate. By id, the plant
    // is fetched in a LATERAL subquery that OFFSET 0 keeps from being flattened: the walk stays the outer
    // loop whatever the planner guesses of the filters (without statistics it guessed them rare and
    // scanned every plant).
    from = byName || numbered
      ? 'plant_tags t0 JOIN plants p ON p.id = t0.plant_id'
      : 'plant_tags t0 CROSS JOIN LATERAL (SELECT * FROM plants q WHERE q.id = t0.plant_id OFFSET 0) p'
    // Tags are compared by their keys (catalogue/query.ts filterKey: lower() of the "C" collation folds
    // A–Z alone), along the index plant_tags_key; a plant holding two tags of one key ("Big", "big")
    // has two rows there: only its least is walked.
    const first = param(tags[0])
    where.push(`lower(t0.tag COLLATE "C") = ${first} AND NOT EXISTS (SELECT 1 FROM plant_tags d WHERE lower(d.tag COLLATE "C") = ${first} AND d.plant_id = t0.plant_id AND d.tag < t0.tag)`)
    if (!byName && !numbered) id = 't0.plant_id'
    // The row's own tags column, one predicate: an EXISTS per tag made a join each, and planning 20 joins took longer than running them.
    if (tags.length > 1) where.push(`ARRAY(SELECT lower(t COLLATE "C") FROM unnest(p.tags) AS t) @> ${param(tags.slice(1))}::text[]`)
  }
  if (byName) {
    if (filter.afterKey !== undefined) where.push(`(p.name_order_key, p.id) ${desc ? '<' : '>'} (${param(filter.afterKey)}, ${param(filter.afterId)})`)
  } else if (numbered) {
    if (filter.afterValue !== undefined) where.push(`(${keyExpr}, p.id) ${desc ? '<' : '>'} (${param(filter.afterValue)}::bigint, ${param(filter.afterId)}::bigint)`)
  } else if (filter.afterId > 0) {
    where.push(`${id} ${desc ? '<' : '>'} ${param(filter.afterId)}`)
  }
  // The search columns (search-columns.ts): a long term anywhere in the folded key (pg_trgm), a short
  // one among its words' starts (GIN over the array). Terms hold no control character: no escape.
  for (const term of filter.terms ?? []) {
    where.push(isShortTerm(term) ? `p.search_starts @> ARRAY[${param(term)}::text]` : `p.search_key LIKE ${param(`%${likeEscape(term)}%`)}`)
  }
  if (filter.updatedSince !== undefined) where.push(`p.updated_at >= ${param(filter.updatedSince)}::bigint`)
  // The price index's expression, so sort=price walks only the range; either bound leaves unpriced plants out.
  if (filter.priceMin !== undefined || filter.priceMax !== undefined) {
    where.push(`coalesce(p.price, ${UNPRICED}) BETWEEN ${param(filter.priceMin ?? 0)}::bigint AND ${param(filter.priceMax ?? UNPRICED - 1)}::bigint`)
  }
  // As the partial indexes' own predicates (migration 018), so the planner may walk them.
  if (filter.inStock !== undefined) where.push(filter.inStock ? 'p.available > 0' : 'p.available = 0')
  if (filter.lowStock === true) where.push('p.available <= p.low_stock_at')
  const statuses = filter.statuses ?? []
  if (statuses.length > 0) where.push(`p.status = ANY (${param(statuses)}::text[])`)
  // The key, as the index plants_category_key holds it.
  if (filter.category !== undefined) where.push(`lower(p.category COLLATE "C") = ${param(toPostgresText(filter.category))}`)
  const dir = desc ? ' DESC' : ''
  const order = byName || numbered ? `${keyExpr}${dir}, p.id${dir}` : `${id}${dir}`
  return { text: `SELECT ${columns} FROM ${from} WHERE ${where.length > 0 ? where.join(' AND ') : 'true'} ORDER BY ${order} LIMIT ${param(filter.limit)}`, values }
}
