import pg from 'pg'
import { fromPostgresText } from './text-escape.js'

// The name's key columns, computed in JavaScript as every write computes them, so that both engines
// order and match the same keys: name_key (migration 002: toLowerCase) and name_order_key
// (migration 014: catalogue/name-order.ts, the very string SQLite stores).

/** The key columns filled this way, and what a progress line calls each. */
const FILLED = { name_key: 'name keys', name_order_key: 'name order keys' } as const

/**
 * Fills `column` for the plants written before its migration (or by an older instance), 20,000 a
 * batch, each plant's key `keyOf` its name; the column's index holds the missing ones first by id.
 */
export async function fillNameKeyColumn (config: pg.ClientConfig, column: keyof typeof FILLED, keyOf: (name: string) => string,
  progress: (message: string) => void = (m) => { process.stderr.write(`${m}\n`) }): Promise<void> {
  const client = new pg.Client({ ...config, statement_timeout: undefined })
  client.on('error', () => {})
  await client.connect()
  try {
    let done = 0
    for (;;) {
      const { rows } = await client.query<{ id: string, name: string }>(`SELECT id, name FROM plants WHERE ${column} IS NULL ORDER BY id LIMIT 20000`)
      if (rows.length === 0) break
      await client.query(`UPDATE plants p SET ${column} = v.k FROM unnest($1::bigint[], $2::text[]) AS v (id, k) WHERE p.id = v.id AND p.${column} IS NULL`,
        [rows.map((r) => r.id), rows.map((r) => keyOf(fromPostgresText(r.name)))])
      done += rows.length
      if (done >= 20000) progress(`${FILLED[column]} filled for ${done} plants`)
    }
  } finally {
    await client.end().catch(() => {})
  }
}
