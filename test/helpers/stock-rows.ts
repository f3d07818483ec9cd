import Database from 'better-sqlite3'
import pg from 'pg'
import { join } from 'node:path'

// Stock in a closed data folder's catalogue, for the commands that carry it (migrate, backup,
// restore): a second location, and for each plant named a ledger whose sum is its levels and
// totals, written as the rows the store's movements leave.

export interface SeededMovement { plant: number, location: string, delta: number, reason: string, reference: string | null }

export function seedStock (dataDir: string, movements: SeededMovement[], locations: string[] = ['greenhouse']): void {
  const db = new Database(join(dataDir, 'catalogue.db'))
  try {
    db.transaction(() => {
      for (const name of locations) db.prepare('INSERT INTO locations (name, created_at) VALUES (?, ?)').run(name, Date.UTC(2026, 10, 1))
      const level = db.prepare<[number, string]>('SELECT on_hand FROM stock_levels WHERE plant_id = ? AND location = ?').pluck()
      const put = db.prepare('INSERT INTO stock_levels (plant_id, location, on_hand) VALUES (?, ?, ?) ON CONFLICT (plant_id, location) DO UPDATE SET on_hand = excluded.on_hand')
      const append = db.prepare('INSERT INTO stock_movements (plant_id, at, actor, location, delta, reason, reference, on_hand_after) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      let at = Date.UTC(2026, 10, 2)
      for (const m of movements) {
        const after = ((level.get(m.plant, m.location) as number | undefined) ?? 0) + m.delta
        put.run(m.plant, m.location, after)
        append.run(m.plant, at++, 'till-1', m.location, m.delta, m.reason, m.reference, after)
      }
      db.prepare(`UPDATE plants SET on_hand = t.on_hand, reserved = t.reserved, available = t.on_hand - t.reserved
        FROM (SELECT plant_id, sum(on_hand) AS on_hand, sum(reserved) AS reserved FROM stock_levels GROUP BY plant_id) AS t WHERE plants.id = t.plant_id`).run()
    })()
  } finally {
    db.close()
  }
}

/** The same rows in a PostgreSQL catalogue (`url` with its search_path). */
export async function seedStockPostgres (url: string, movements: SeededMovement[], locations: string[] = ['greenhouse']): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('BEGIN')
    for (const name of locations) await client.query('INSERT INTO locations (name, created_at) VALUES ($1, $2)', [name, Date.UTC(2026, 10, 1)])
    let at = Date.UTC(2026, 10, 2)
    for (const m of movements) {
      const { rows: [{ after }] } = await client.query(`INSERT INTO stock_levels (plant_id, location, on_hand) VALUES ($1, $2, $3)
        ON CONFLICT (plant_id, location) DO UPDATE SET on_hand = stock_levels.on_hand + $3 RETURNING on_hand::int AS after`, [m.plant, m.location, m.delta])
      await client.query('INSERT INTO stock_movements (plant_id, at, actor, location, delta, reason, reference, on_hand_after) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
        [m.plant, at++, 'till-1', m.location, m.delta, m.reason, m.reference, after])
    }
    await client.query(`UPDATE plants SET on_hand = t.on_hand, reserved = t.reserved, available = t.on_hand - t.reserved
      FROM (SELECT plant_id, sum(on_hand) AS on_hand, sum(reserved) AS reserved FROM stock_levels GROUP BY plant_id) AS t WHERE plants.id = t.plant_id`)
    await client.query('COMMIT')
  } finally {
    await client.end()
  }
}

/** Stock in the catalogue a `plants` command test points at (test/helpers/cli-targets.ts), its store closed. */
export async function seedStockAt (target: { env: NodeJS.ProcessEnv, args: string[] }, movements: SeededMovement[], locations?: string[]): Promise<void> {
  if (target.env.DATABASE_URL !== undefined) await seedStockPostgres(target.env.DATABASE_URL, movements, locations)
  else seedStock(target.args[target.args.indexOf('--data-dir') + 1], movements, locations)
}
