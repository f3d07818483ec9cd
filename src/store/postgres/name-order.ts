import pg from 'pg'
import { nameOrderKey } from '../../catalogue/name-order.js'
import { fromPostgresText } from './text-escape.js'

// sort=name's key on PostgreSQL (migration 014): the very string SQLite stores (catalogue/name-order.ts),
// computed in JavaScript. It holds no control character below U+0001 (the fold makes them spaces),
// so text takes it as it is.

/**
 * Fills the order key of plants written before migration 014 (or by an older instance), in batches
 * along the index plants_name_order, which holds the missing ones first by id.
 */
export async function fillNameOrderKeys (config: pg.ClientConfig, progress: (message: string) => void = (m) => { process.stderr.write(`${m}\n`) }): Promise<void> {
  const client = new pg.Client({ ...config, statement_timeout: undefined })
  client.on('error', () => {})
  await client.connect()
  try {
    let done = 0
    for (;;) {
      const { rows } = await client.query<{ id: string, name: string }>('SELECT id, name FROM plants WHERE name_order_key IS NULL ORDER BY id LIMIT 20000')
      if (rows.length === 0) break
      await client.query('UPDATE plants p SET name_order_key = v.k FROM unnest($1::bigint[], $2::text[]) AS v (id, k) WHERE p.id = v.id AND p.name_order_key IS NULL',
        [rows.map((r) => r.id), rows.map((r) => nameOrderKey(fromPostgresText(r.name)))])
      done += rows.length
      if (done >= 20000) progress(`name order keys filled for ${done} plants`)
    }
  } finally {
    await client.end().catch(() => {})
  }
}
