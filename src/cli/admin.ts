import type { Config } from '../config.js'
import { AdminRefused, CatalogueUnreachable, type CatalogueAdmin, type CatalogueLocation, type EngineAdmin, type FolderAdmin, type FolderLocation, type PostgresAdmin, type PostgresLocation } from '../store/admin-store.js'
import type { PlantStore } from '../store/plant-store.js'
import { CommandFailed } from './command.js'
import { reasonOf } from './network-reason.js'

// The commands reach a catalogue's database only through the admin part of the store interface.

/** The store's refusals as the command line's: one line, shown as it is; anything else is left as it is. */
export function adminFailure (err: unknown): unknown {
  if (err instanceof AdminRefused) return new CommandFailed(err.message)
  if (err instanceof CatalogueUnreachable) return new CommandFailed(`${err.message}: ${reasonOf(err.reason)}`)
  return err
}

/** `fn`'s answer, with the store's refusals turned into the command line's. */
export async function admin<T> (fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw adminFailure(err)
  }
}

export async function openCatalogueAdmin (where: FolderLocation): Promise<FolderAdmin>
export async function openCatalogueAdmin (where: PostgresLocation): Promise<PostgresAdmin>
export async function openCatalogueAdmin (where: CatalogueLocation): Promise<EngineAdmin>
export async function openCatalogueAdmin (where: CatalogueLocation): Promise<EngineAdmin> {
  const { openAdmin } = await import('../store/open/open-admin.js')
  return admin(async () => openAdmin(where))
}

/** Refuses, with `hint` after the store's own words, a folder or database that holds no catalogue. */
export async function requireCatalogue (catalogue: CatalogueAdmin, hint: string): Promise<void> {
  try {
    await catalogue.requireCatalogue()
  } catch (err) {
    throw err instanceof AdminRefused ? new CommandFailed(`${err.message}; ${hint}`) : adminFailure(err)
  }
}

/** The store the service would open at `where`, with the service's retention: opening one purges the feed, trash and history by it, as the service would. */
export async function openStoreAt (where: CatalogueLocation, { feedRetentionMs, trashRetentionMs, historyRetentionMs }: Config): Promise<PlantStore> {
  const { openStore } = await import('../store/open/open-store.js')
  const retention = { feedRetentionMs, trashRetentionMs, historyRetentionMs }
  return openStore(where.kind === 'postgres' ? { databaseUrl: where.databaseUrl, dataDir: '', ...retention } : { dataDir: where.dataDir, ...retention })
}
