import { AdminRefused, type CatalogueSnapshot, type CopyOptions, type PlantFinder, type PostgresAdmin } from '../admin-store.js'
import type { RestoreMarks, RestoreOutcome } from '../restore-marks.js'
import { parseDatabaseUrl } from './connection.js'
import { copyInto } from './copy-in.js'
import { migrate } from './migrate.js'
import { PostgresPlantFinder } from './plant-finder.js'
import { applyMarks, readMarks, serviceConnections } from './restore-marks.js'
import { connectAdmin, hasPlantsTable, PostgresSnapshot, redactUrl } from './snapshot.js'

// The admin part of the store (admin-store.ts) on PostgreSQL: each call on a connection of its own.

export class PostgresDatabaseAdmin implements PostgresAdmin {
  readonly kind = 'postgres'
  readonly where: string
  readonly address: string
  private readonly connectionString: string

  constructor (private readonly databaseUrl: string) {
    try {
      this.connectionString = parseDatabaseUrl(databaseUrl).connectionString
    } catch (err) {
      throw new AdminRefused((err as Error).message)
    }
    this.address = redactUrl(databaseUrl)
    this.where = `PostgreSQL database ${this.address}`
  }

  async hasCatalogue (): Promise<boolean> {
    const client = await connectAdmin(this.databaseUrl)
    try { return await hasPlantsTable(client) } finally { await client.end().catch(() => {}) }
  }

  async requireCatalogue (): Promise<void> {
    if (!await this.hasCatalogue()) throw this.noCatalogue()
  }

  private noCatalogue (): AdminRefused {
    return new AdminRefused(`no catalogue in the ${this.where} (it has no plants table)`)
  }

  async snapshot (): Promise<CatalogueSnapshot> {
    const client = await connectAdmin(this.databaseUrl)
    try {
      if (!await hasPlantsTable(client)) throw this.noCatalogue()
      return await PostgresSnapshot.open(client)
    } catch (err) {
      await client.end().catch(() => {})
      throw err
    }
  }

  readonly finder = async (): Promise<PlantFinder> => PostgresPlantFinder.open(this.databaseUrl)

  async readMarks (): Promise<RestoreMarks> {
    const client = await connectAdmin(this.databaseUrl)
    try { return await readMarks(client) } finally { await client.end().catch(() => {}) }
  }

  readonly serviceConnections = async (): Promise<number> => {
    const client = await connectAdmin(this.databaseUrl)
    try { return await serviceConnections(client) } finally { await client.end().catch(() => {}) }
  }

  /** A dump of an older release is brought to the current schema first, as an instance would. */
  readonly applyMarks = async (marks: RestoreMarks, progress: (message: string) => void): Promise<RestoreOutcome> => {
    try {
      await migrate({ connectionString: this.connectionString }, undefined, progress)
    } catch (err) {
      throw new AdminRefused(`cannot migrate ${this.address}: ${(err as Error).message}`)
    }
    const client = await connectAdmin(this.databaseUrl)
    try { return await applyMarks(client, marks) } finally { await client.end().catch(() => {}) }
  }

  /** The schema is the store's own migrations' (made or brought up to date), then the copy (copy-in.ts). */
  readonly receive = async (source: CatalogueSnapshot, options: CopyOptions): Promise<void> => {
    let client
    try {
      await migrate({ connectionString: this.connectionString })
      client = await connectAdmin(this.databaseUrl)
    } catch (err) {
      const cause = (err as { reason?: unknown }).reason ?? err
      throw new AdminRefused(`cannot prepare ${this.address}: ${(cause as Error).message}`)
    }
    try {
      await copyInto(client, this.address, source, options)
    } finally {
      await client.end().catch(() => {})
    }
  }

  async close (): Promise<void> {}
}
