import type { Config } from '../config.js'
import type { PlantStore } from '../store/plant-store.js'
import { openCatalogueAdmin, openStoreAt, requireCatalogue } from './admin.js'
import { locate, serviceConfig, type Location } from './target.js'
import { CommandFailed, UsageError, type Io } from './command.js'

export interface CatalogueStoreOptions {
  /** The person passed --create: a folder or database without a catalogue gets a new one. */
  create?: boolean
  /** What to tell a person whose folder or database holds no catalogue (after the refusal itself). */
  hint?: string
}

/**
 * Runs `fn` on the catalogue's own store (a data folder or DATABASE_URL; never through --url: keys
 * and webhooks are managed where they are kept), with the service's settings, and closes it after.
 * A folder or database that holds no catalogue is refused unless `create`, as import and export
 * refuse it: a mistyped --data-dir must not quietly become a second catalogue (with a key in it).
 */
export async function withCatalogueStore (command: string, values: Record<string, any>, io: Io, fn: (store: PlantStore, config: Config) => Promise<number>, options: CatalogueStoreOptions = {}): Promise<number> {
  const where = await locate(values, io)
  if (where.kind === 'service') throw new UsageError(`${command} takes no --url`)
  if (options.create !== true) await refuseEmpty(where, options.hint ?? 'is --data-dir (or DATA_DIR, DATABASE_URL) right?')
  const config = await serviceConfig(io)
  let store: PlantStore
  try {
    store = await openStoreAt(where, config)
  } catch (err) {
    throw new CommandFailed(`cannot open the catalogue: ${(err as Error).message}`)
  }
  try {
    return await fn(store, config)
  } finally {
    await store.close()
  }
}

async function refuseEmpty (where: Exclude<Location, { kind: 'service' }>, hint: string): Promise<void> {
  await requireCatalogue(await openCatalogueAdmin(where), hint)
}
