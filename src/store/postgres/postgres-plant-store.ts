import type { PlantStore } from '../plant-store.js'

export interface PostgresStoreOptions { connectionString: string, feedRetentionMs: number }

export async function openPostgresStore (_options: PostgresStoreOptions): Promise<PlantStore> {
  throw new Error('PostgreSQL store: being written')
}
