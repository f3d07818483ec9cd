import type { Config } from '../config.js'
import type { PlantStore } from './plant-store.js'
import { openSqliteStore } from './sqlite/sqlite-plant-store.js'

/** The store the configuration names: PostgreSQL when DATABASE_URL is set, else the embedded SQLite file. */
export async function openStore (config: Config): Promise<PlantStore> {
  if (config.databaseUrl) {
    const { openPostgresStore } = await import('./postgres/postgres-plant-store.js')
    return openPostgresStore({ connectionString: config.databaseUrl, feedRetentionMs: config.feedRetentionMs })
  }
  return openSqliteStore({ dataDir: config.dataDir, feedRetentionMs: config.feedRetentionMs })
}
