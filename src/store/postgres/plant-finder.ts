import type pg from 'pg'
import { toRecord, type Plant } from '../../catalogue/plant.js'
import type { PlantFinder } from '../admin-store.js'
import { ROW_COLUMNS, toPlant, type PlantRow } from './group-writes.js'
import { nameColumns } from './search-columns.js'
import { connectAdmin } from './snapshot.js'
import { toPostgresText } from './text-escape.js'

/**
 * Looking plants up for an import, as its rows are planned, on a connection of its own. No snapshot
 * is held across the import: one held while 100,000 plants are updated keeps every old row version
 * and index entry alive, and made the import three times slower. The import sees to it that every
 * key its own writes can change has been looked up before the write (cli/import.ts, Lookup).
 */
export class PostgresPlantFinder implements PlantFinder {
  private constructor (private readonly client: pg.Client) {}

  static async open (databaseUrl: string): Promise<PostgresPlantFinder> {
    return new PostgresPlantFinder(await connectAdmin(databaseUrl))
  }

  async existing (ids: number[]): Promise<number[]> {
    const { rows } = await this.client.query<{ id: number }>('SELECT id FROM plants WHERE id = ANY ($1::bigint[])', [ids])
    return rows.map((r) => r.id)
  }

  // Ids and SKUs apart: as one query with OR, PostgreSQL read the whole table for a thousand of each.
  async byIds (ids: number[]): Promise<Plant[]> {
    return this.plants(`SELECT ${ROW_COLUMNS} FROM plants WHERE id = ANY ($1::bigint[])`, [ids])
  }

  async bySkus (skus: string[]): Promise<Plant[]> {
    // The SKU's holder as the store finds it (plants_sku, lower(sku)).
    return this.plants(`SELECT ${ROW_COLUMNS} FROM plants WHERE sku IS NOT NULL AND lower(sku) = ANY ($1::text[])`, [skus])
  }

  async byNames (names: string[]): Promise<Plant[]> {
    // Through name_key (the index plants_name; a plant written before it was filled has none), then the name itself.
    return this.plants(`SELECT ${ROW_COLUMNS} FROM plants WHERE (name_key = ANY ($1::text[]) OR name_key IS NULL) AND name = ANY ($2::text[])`,
      [names.map((n) => nameColumns(n).nameKey), names.map(toPostgresText)])
  }

  private async plants (text: string, values: unknown[]): Promise<Plant[]> {
    const { rows } = await this.client.query<PlantRow>(text, values)
    return rows.map((r) => toRecord(toPlant(r)))
  }

  async close (): Promise<void> {
    await this.client.end().catch(() => {})
  }
}
