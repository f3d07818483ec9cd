import type { Config } from '../config.js'
import type { PlantStore } from '../store/plant-store.js'
import { locate, serviceConfig } from './catalogue.js'
import { CommandFailed, UsageError, type Io } from './command.js'

/**
 * Runs `fn` on the catalogue's own store (a data folder or DATABASE_URL; never through --url: keys
 * and webhooks are managed where they are kept), with the service's settings, and closes it after.
 */
export async function withCatalogueStore (command: string, values: Record<string, any>, io: Io, fn: (store: PlantStore, config: Config) => Promise<number>): Promise<number> {
  const where = await locate(values, io)
  if (where.kind === 'service') throw new UsageError(`${command} takes no --url`)
  const { openStore } = await import('../store/open-store.js')
  // The service's own retention: opening a store purges the feed by it, as the service would.
  const config = await serviceConfig(io)
  let store: PlantStore
  try {
    store = where.kind === 'postgres'
      ? await openStore({ databaseUrl: where.databaseUrl, dataDir: '', feedRetentionMs: config.feedRetentionMs })
      : await openStore({ dataDir: where.dataDir, feedRetentionMs: config.feedRetentionMs })
  } catch (err) {
    throw new CommandFailed(`cannot open the catalogue: ${(err as Error).message}`)
  }
  try {
    return await fn(store, config)
  } finally {
    await store.close()
  }
}
