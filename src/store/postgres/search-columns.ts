import pg from 'pg'
import { nameKey } from '../../catalogue/name-key.js'
import { orderKeyOfFolded } from '../../catalogue/name-order.js'
import { foldKey, startTokens, startTokensOfFolded } from '../../catalogue/search-key.js'
import { toKey } from './list-query.js'
import { fromPostgresText } from './text-escape.js'

// What q searches on PostgreSQL (migration 007), computed in JavaScript as on SQLite (search-key.ts):
// search_key, the folded name key, whose trigrams (pg_trgm) find long terms; search_starts, the
// first one and two characters of its words (a GIN index over the array), which find short ones.
// Neither holds a control character (folded to spaces), so neither needs text-escape.ts.

/** A PostgreSQL array literal of text: each element quoted, `"` and `\` escaped. */
export const textArray = (items: string[]): string => `{${items.map((s) => `"${s.replace(/[\\"]/g, '\\$&')}"`).join(',')}}`

export const searchKeyOf = (name: string): string => foldKey(nameKey(name))
export const searchStartsOf = (name: string): string[] => startTokens(nameKey(name))

/** A name's derived columns (name_key as stored, sort=name's key, search_key, search_starts), each step taken once. */
export function nameColumns (name: string): { nameKey: string, nameOrderKey: string, searchKey: string, searchStarts: string[] } {
  const key = nameKey(name)
  const searchKey = foldKey(key)
  return { nameKey: toKey(key), nameOrderKey: orderKeyOfFolded(searchKey), searchKey, searchStarts: startTokensOfFolded(searchKey) }
}

/**
 * Fills the search columns of plants written before migration 007 (or by an older instance), in
 * batches along the id, saying how far it got on a large catalogue.
 */
export async function fillSearchKeys (config: pg.ClientConfig, progress: (message: string) => void = (m) => { process.stderr.write(`${m}\n`) }): Promise<void> {
  const client = new pg.Client({ ...config, statement_timeout: undefined })
  client.on('error', () => {})
  await client.connect()
  try {
    let done = 0
    let after = 0
    for (;;) {
      const { rows } = await client.query<{ id: string, name: string }>(
        'SELECT id, name FROM plants WHERE id > $1 AND search_key IS NULL ORDER BY id LIMIT 20000', [after])
      if (rows.length === 0) break
      const names = rows.map((r) => fromPostgresText(r.name))
      await client.query(`UPDATE plants p SET search_key = v.k, search_starts = v.s::text[]
        FROM unnest($1::bigint[], $2::text[], $3::text[]) AS v (id, k, s) WHERE p.id = v.id AND p.search_key IS NULL`,
      [rows.map((r) => r.id), names.map(searchKeyOf), names.map((n) => textArray(searchStartsOf(n)))])
      after = Number(rows[rows.length - 1].id)
      done += rows.length
      if (done >= 20000) progress(`search keys filled for ${done} plants`)
    }
  } finally {
    await client.end().catch(() => {})
  }
}
