import type { CatalogueAdmin, CatalogueLocation } from '../admin-store.js'

/** The admin part of the store (admin-store.ts) for the engine that keeps the catalogue at `where`; each engine is loaded only when named. */
export async function openAdmin (where: CatalogueLocation): Promise<CatalogueAdmin> {
  if (where.kind === 'postgres') {
    const { PostgresAdmin } = await import('../postgres/admin.js')
    return new PostgresAdmin(where.databaseUrl)
  }
  const { SqliteAdmin } = await import('../sqlite/admin.js')
  return new SqliteAdmin(where.dataDir)
}
