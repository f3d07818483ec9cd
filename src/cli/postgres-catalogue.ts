import pg from 'pg'
import { toRecord, type Plant } from '../catalogue/plant.js'
import { positionOf, type PlantQuery, type Position } from '../catalogue/query.js'
import { parseDatabaseUrl } from '../store/postgres/connection.js'
import { ROW_COLUMNS, toPlant, type PlantRow } from '../store/postgres/group-writes.js'
import { listQuery } from '../store/postgres/list-query.js'
import { nameColumns } from '../store/postgres/search-columns.js'
import { toPostgresText } from '../store/postgres/text-escape.js'
import type { ApplyOutcome, Catalogue, PlantFinder } from './catalogue-interface.js'
import { CommandFailed } from './command.js'
import { reasonOf } from './network-reason.js'

// The catalogue in PostgreSQL, for commands run with the service's DATABASE_URL.

/** The URL without its password or parameters, for messages. */
export function redactUrl (url: string): string {
  const u = new URL(url)
  return `${u.protocol}//${u.username ? `${u.username}${u.password ? ':***' : ''}@` : ''}${u.host}${u.pathname}`
}

export async function connect (databaseUrl: string): Promise<pg.Client> {
  let connectionString: string
  try {
    connectionString = parseDatabaseUrl(databaseUrl).connectionString
  } catch (err) {
    throw new CommandFailed((err as Error).message)
  }
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 10_000, application_name: 'plants' })
  client.on('error', () => {}) // a lost connection fails the query in progress, which reports it
  try {
    await client.connect()
  } catch (err) {
    await client.end().catch(() => {})
    throw new CommandFailed(`cannot reach PostgreSQL at ${redactUrl(databaseUrl)}: ${reasonOf(err)}`)
  }
  return client
}

/** Whether the database holds the store's tables (the service creates them when it first starts). */
export async function postgresHasCatalogue (databaseUrl: string): Promise<boolean> {
  const client = await connect(databaseUrl)
  try {
    const { rows } = await client.query<{ present: boolean }>("SELECT to_regclass('plants') IS NOT NULL AS present")
    return rows[0].present
  } finally {
    await client.end().catch(() => {})
  }
}

/**
 * Reading PostgreSQL for an export: one connection, one REPEATABLE READ READ ONLY transaction, so
 * the whole export is a single snapshot while instances keep writing, read in keyset pages.
 */
export class PostgresSnapshotCatalogue implements Catalogue {
  readonly where: string
  private constructor (private readonly client: pg.Client, databaseUrl: string) {
    this.where = `PostgreSQL database ${redactUrl(databaseUrl)}`
  }

  static async open (databaseUrl: string): Promise<PostgresSnapshotCatalogue> {
    const catalogue = new PostgresSnapshotCatalogue(await connect(databaseUrl), databaseUrl)
    const { rows } = await catalogue.client.query<{ present: boolean }>("SELECT to_regclass('plants') IS NOT NULL AS present")
    if (!rows[0].present) {
      await catalogue.close()
      throw new CommandFailed(`no catalogue in the ${catalogue.where} (it has no plants table)`)
    }
    return catalogue
  }

  async * pages (pageSize: number, query?: PlantQuery): AsyncGenerator<Plant[]> {
    await this.client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
    try {
      let after: Position = { id: 0 }
      for (;;) {
        // Every column, store fields and times included: an export edited and imported again merges
        // what its rows say, so a column read as empty here would clear it in the catalogue. With a
        // query, the store's own list query (its filters and order), walked in this one snapshot.
        const { text, values } = query === undefined
          ? { text: `SELECT ${ROW_COLUMNS} FROM plants WHERE id > $1 ORDER BY id LIMIT $2`, values: [after.id, pageSize] }
          : listQuery({ ...query, tags: query.tags.map(toPostgresText), afterId: after.id, afterKey: after.key, afterValue: after.value, limit: pageSize }, SNAPSHOT_COLUMNS)
        const { rows } = await this.client.query<PlantRow>(text, values)
        if (rows.length === 0) return
        const page = rows.map(recordOf)
        yield page
        after = positionOf(page[page.length - 1], query?.sort ?? 'id')
      }
    } finally {
      await this.client.query('COMMIT').catch(() => {})
    }
  }

  async applyAll (): Promise<ApplyOutcome> {
    throw new Error('an export snapshot is read-only')
  }

  async close (): Promise<void> {
    await this.client.end().catch(() => {})
  }
}

/** ROW_COLUMNS of the list query's `p`. */
const SNAPSHOT_COLUMNS = ROW_COLUMNS.split(', ').map((c) => `p.${c}`).join(', ')

// This module's connections read BIGINT as text (the store's read them as numbers).
const recordOf = (r: PlantRow): Plant => toRecord(toPlant({
  ...r, id: Number(r.id), price: r.price === null ? null : Number(r.price), created_at: Number(r.created_at), updated_at: Number(r.updated_at)
}))

/**
 * Looking plants up for an import, as its rows are planned, on a connection of its own. No snapshot
 * is held across the import: one held while 100,000 plants are updated keeps every old row version
 * and index entry alive, and made the import three times slower. The import sees to it that every
 * key its own writes can change has been looked up before the write (import.ts, Lookup).
 */
export class PostgresPlantFinder implements PlantFinder {
  private constructor (private readonly client: pg.Client) {}

  static async open (databaseUrl: string): Promise<PostgresPlantFinder> {
    return new PostgresPlantFinder(await connect(databaseUrl))
  }

  async existing (ids: number[]): Promise<number[]> {
    const { rows } = await this.query<{ id: string }>('SELECT id FROM plants WHERE id = ANY ($1::bigint[])', [ids])
    return rows.map((r) => Number(r.id))
  }

  // Ids and SKUs apart: as one query with OR, PostgreSQL read the whole table (200 ms) for 1,000 of each.
  async byIds (ids: number[]): Promise<Plant[]> {
    const { rows } = await this.query<PlantRow>(`SELECT ${ROW_COLUMNS} FROM plants WHERE id = ANY ($1::bigint[])`, [ids])
    return rows.map(recordOf)
  }

  async bySkus (skus: string[]): Promise<Plant[]> {
    // The SKU's holder as the store finds it (plants_sku, lower(sku)).
    const { rows } = await this.query<PlantRow>(`SELECT ${ROW_COLUMNS} FROM plants WHERE sku IS NOT NULL AND lower(sku) = ANY ($1::text[])`, [skus])
    return rows.map(recordOf)
  }

  async byNames (names: string[]): Promise<Plant[]> {
    // Through name_key (the index plants_name; a plant written before it was filled has none), then the name itself.
    const { rows } = await this.query<PlantRow>(`SELECT ${ROW_COLUMNS} FROM plants WHERE (name_key = ANY ($1::text[]) OR name_key IS NULL) AND name = ANY ($2::text[])`,
      [names.map((n) => nameColumns(n).nameKey), names.map(toPostgresText)])
    return rows.map(recordOf)
  }

  private async query<R extends pg.QueryResultRow> (text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.client.query<R>(text, values)
    } catch (err) {
      throw new CommandFailed(`reading the catalogue: ${reasonOf(err)}`)
    }
  }

  async close (): Promise<void> {
    await this.client.end().catch(() => {})
  }
}
