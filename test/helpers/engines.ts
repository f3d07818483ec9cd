import { openSqliteStore } from '../../src/store/sqlite/sqlite-plant-store.js'
import type { PlantStore } from '../../src/store/plant-store.js'
import { postgresEngine } from './postgres-engine.js'

// Every HTTP test runs once per engine. SQLite always; PostgreSQL when TEST_DATABASE_URL is set.

export interface StoreOptions { feedRetentionMs?: number, trashRetentionMs?: number, historyRetentionMs?: number, now?: () => number }

export interface Engine {
  name: 'sqlite' | 'postgres'
  /** A reason to skip this engine's tests, printed by the runner; false to run them. */
  skip: string | false
  /** A fresh, empty, migrated store of its own. */
  open (options?: StoreOptions): Promise<PlantStore>
}

const DAY = 86_400_000

export const sqliteEngine: Engine = {
  name: 'sqlite',
  skip: false,
  // A read's 250 ms deadline is crossed by a loaded machine (tests run side by side): tests that
  // mean to cross it open a store of their own with a deadline of a few ms.
  open: async (options = {}) => openSqliteStore({ dataDir: ':memory:', feedRetentionMs: options.feedRetentionMs ?? 7 * DAY, trashRetentionMs: options.trashRetentionMs, historyRetentionMs: options.historyRetentionMs, now: options.now, queryTimeoutMs: 10_000 })
}

export const ENGINES: Engine[] = [sqliteEngine, postgresEngine]
