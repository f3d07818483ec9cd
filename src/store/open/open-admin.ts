import type { EngineAdmin, FolderAdmin, FolderLocation, CatalogueLocation, PostgresAdmin, PostgresLocation } from '../admin-store.js'

/** The admin part of the store (admin-store.ts) for the engine that keeps the catalogue at `where`; each engine is loaded only when named. */
export async function openAdmin (where: FolderLocation): Promise<FolderAdmin>
export async function openAdmin (where: PostgresLocation): Promise<PostgresAdmin>
export async function openAdmin (where: CatalogueLocation): Promise<EngineAdmin>
export async function openAdmin (where: CatalogueLocation): Promise<EngineAdmin> {
  if (where.kind === 'postgres') {
    const { PostgresDatabaseAdmin } = await import('../postgres/admin.js')
    return new PostgresDatabaseAdmin(where.databaseUrl)
  }
  const { SqliteAdmin } = await import('../sqlite/admin.js')
  return new SqliteAdmin(where.dataDir)
}
