import type { PlantStore } from '../plant-store.js'
import { openSqliteStore } from '../sqlite/sqlite-plant-store.js'

/** What choosing and opening a store needs of the configuration (src/config.ts's Config has it). */
export interface StoreSettings {
  databaseUrl?: string
  dataDir: string
  feedRetentionMs: number
  /** How long a deleted plant stays in the trash (default 30 days). */
  trashRetentionMs?: number
  /** How long a plant's versions stay in its history (default 365 days). */
  historyRetentionMs?: number
  /** SQLite's reader threads (sqlite-plant-store.ts: default 1). */
  sqliteReaders?: number
  /** Told when the hourly retention purge fails. */
  onPurgeError?: (err: unknown) => void
}

/** The store the configuration names: PostgreSQL when DATABASE_URL is set, else the embedded SQLite file. */
export async function openStore (config: StoreSettings): Promise<PlantStore> {
  if (config.databaseUrl) {
    const { openPostgresStore } = await import('../postgres/postgres-plant-store.js')
    return openPostgresStore({ connectionString: config.databaseUrl, feedRetentionMs: config.feedRetentionMs, trashRetentionMs: config.trashRetentionMs, historyRetentionMs: config.historyRetentionMs, onPurgeError: config.onPurgeError })
  }
  return openSqliteStore({ dataDir: config.dataDir, feedRetentionMs: config.feedRetentionMs, trashRetentionMs: config.trashRetentionMs, historyRetentionMs: config.historyRetentionMs, readers: config.sqliteReaders, onPurgeError: config.onPurgeError })
}
