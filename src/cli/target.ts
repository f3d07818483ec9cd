import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import type { PlantClient } from '../client/plant-client.js'
type ClientModule = typeof import('../client/plant-client.js')
import type { Config } from '../config.js'
import type { BatchOperation } from '../catalogue/batch.js'
import type { WriteMeta } from '../catalogue/changes.js'
import { HISTORY_PAGE_MAX, type HistoryEntry } from '../catalogue/history.js'
import { toRecord, type Plant } from '../catalogue/plant.js'
import { positionOf, type PlantQuery, type Position } from '../catalogue/query.js'
import { TRASH_PAGE_MAX, type TrashPosition } from '../catalogue/trash.js'
import type { CatalogueSnapshot, PlantFinder } from '../store/admin-store.js'
import type { PlantStore } from '../store/plant-store.js'
import { admin, openCatalogueAdmin, openStoreAt, requireCatalogue } from './admin.js'
import { refusedByService, refusedByStore, wireOperation } from './batches.js'
import type { ApplyOutcome, Catalogue, IdSet, StockCounter, StockReader } from './target-interface.js'
import { CommandFailed, UsageError, type Io } from './command.js'
import { listParamsOf } from './list-filters.js'
import { mainFirst } from './locations.js'
import { reasonOf } from './network-reason.js'
import { serviceStock } from './service-stock.js'
import { pagesBefore } from './pages-before.js'
import { storeCounter } from './store-counter.js'

// The service's modules are loaded only by the paths that use them: the configuration schema alone
// weighs much memory, which an export given --data-dir has no need of (its memory is a promise).
export async function serviceConfig (io: Io): Promise<Config> {
  const { ConfigError, loadConfig } = await import('../config.js')
  try {
    return loadConfig(io.env)
  } catch (err) {
    throw err instanceof ConfigError ? new CommandFailed(err.message) : err
  }
}

// The catalogue a command works on (target-interface.ts): a data folder or PostgreSQL, both through
// the store (StoreCatalogue), or a running service through its API (ServiceCatalogue).

export interface TargetValues { 'data-dir'?: string, url?: string, 'api-key-file'?: string }

/**
 * Where a command's catalogue is: what the person named (--url, --data-dir), else where the
 * service's own configuration puts it: DATABASE_URL when set, else DATA_DIR (default ./data).
 */
export type Location =
  | { kind: 'service', url: string, apiKeyFile?: string }
  | { kind: 'folder', dataDir: string }
  | { kind: 'postgres', databaseUrl: string }

export async function locate (values: TargetValues, io: Io): Promise<Location> {
  if (values.url !== undefined && values['data-dir'] !== undefined) throw new UsageError('give either --url or --data-dir, not both')
  if (values.url !== undefined) return { kind: 'service', url: values.url, apiKeyFile: values['api-key-file'] }
  if (values['api-key-file'] !== undefined) throw new UsageError('--api-key-file goes with --url')
  if (values['data-dir'] !== undefined) return { kind: 'folder', dataDir: values['data-dir'] }
  const config = await serviceConfig(io)
  return config.databaseUrl !== undefined ? { kind: 'postgres', databaseUrl: config.databaseUrl } : { kind: 'folder', dataDir: config.dataDir }
}

/** The data folder the command names, else DATA_DIR as the service reads it. */
export async function dataDirOf (values: TargetValues, io: Io): Promise<string> {
  return values['data-dir'] ?? (await serviceConfig(io)).dataDir
}

/** The key in --api-key-file, and the file it came from (a refusal names it); a file that cannot be read or holds no key is a one-line failure. */
function readKeyFile (file: string): ApiKey {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (err) {
    throw new CommandFailed(`--api-key-file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`)
  }
  const lines = text.split('\n').map((line) => line.trim()).filter(Boolean)
  if (lines.length === 0) throw new CommandFailed(`--api-key-file ${file} holds no key (it is empty); write the key on one line`)
  if (lines.length > 1) throw new CommandFailed(`--api-key-file ${file} holds ${lines.length} lines; write the one key on one line`)
  return { value: lines[0], file }
}

/** An API key given to a command, and the file it came from. */
export interface ApiKey { value: string, file: string }

const NO_CATALOGUE_HINT = 'pass --create to start a new catalogue there'

/**
 * Opens the catalogue a command works on. A data folder or database without a catalogue is refused
 * unless `create` (the person's --create): a mistyped folder must not quietly become a new catalogue.
 */
export async function openCatalogue (where: Location, io: Io, { create = false, readOnly = false }: { create?: boolean, readOnly?: boolean }): Promise<Catalogue> {
  if (where.kind === 'service') {
    const apiKey = where.apiKeyFile === undefined ? undefined : readKeyFile(where.apiKeyFile)
    return new ServiceCatalogue(where.url, apiKey, await import('../client/plant-client.js'))
  }
  const { StorageUnavailable } = await import('../catalogue/errors.js')
  const catalogue = await openCatalogueAdmin(where)
  if (readOnly) return new SnapshotCatalogue(catalogue.where, await admin(async () => catalogue.snapshot()))
  // Asked first, also with --create: an unreachable database is then named with its cause at once.
  if (create) await admin(async () => catalogue.hasCatalogue())
  else await requireCatalogue(catalogue, NO_CATALOGUE_HINT)
  const config = await serviceConfig(io)
  const store = await openStoreAt(where, config)
  const finder = catalogue.kind === 'postgres' ? async () => new ReadingFinder(await admin(async () => catalogue.finder())) : undefined
  return new StoreCatalogue(store, catalogue.where, (err) => err instanceof StorageUnavailable, config.historyRetentionMs, finder)
}

/** The actor of the changes the command line writes to a catalogue it opens itself (through a service: the key's name). */
export const CLI_WRITE: WriteMeta = { actor: 'cli' }

/** Storage that is busy now (another writer, a checkpoint) is waited for, a few times, before giving up. */
async function withRetries<T> (what: string, attempt: () => Promise<T>, retryable: (err: unknown) => number | undefined): Promise<T> {
  for (let tries = 1; ; tries++) {
    try {
      return await attempt()
    } catch (err) {
      if (err instanceof CommandFailed) throw err
      const wait = retryable(err)
      if (wait === undefined || tries >= 8) {
        throw new CommandFailed(`${what}: ${reasonOf(err)}`)
      }
      await sleep(wait * tries)
    }
  }
}

/** What a dry run compares with when the data folder holds no catalogue yet. */
export const emptyCatalogue = (where: string): Catalogue => ({
  where,
  async * pages () {},
  applyAll: async () => { throw new Error('an empty catalogue stands in for a dry run only') },
  close: async () => {}
})

export class StoreCatalogue implements Catalogue {
  /** `historyRetentionMs`: how long the store keeps a version (this run's HISTORY_RETENTION_DAYS, as the service's, reading the same settings). */
  constructor (readonly store: PlantStore, readonly where: string, private readonly busy: (err: unknown) => boolean, readonly historyRetentionMs: number, readonly finder?: () => Promise<PlantFinder>) {}

  async * pages (pageSize: number, query?: PlantQuery): AsyncGenerator<Plant[]> {
    let after: Position = { id: 0 }
    for (;;) {
      const page = await this.store.list({ ...query, afterId: after.id, afterKey: after.key, afterValue: after.value, limit: pageSize })
      if (page.length === 0) return
      yield page.map(toRecord)
      after = positionOf(page[page.length - 1], query?.sort ?? 'id')
    }
  }

  /** One walk through the trash, newest first: its size is bounded by the retention, not by the file (whose ids may all be unknown). */
  async trashed (wanted: IdSet): Promise<number[]> {
    const found: number[] = []
    let after: TrashPosition | undefined
    while (wanted.size > found.length) {
      const page = await this.store.trash(after, TRASH_PAGE_MAX)
      for (const { plant } of page) if (wanted.has(plant.id)) found.push(plant.id)
      if (page.length < TRASH_PAGE_MAX) break
      const last = page[page.length - 1]
      after = { trashedAt: last.trashedAt, id: last.plant.id }
    }
    return found
  }

  history (id: number): AsyncGenerator<HistoryEntry[]> {
    return pagesBefore((before, size) => this.store.history(id, before, size), HISTORY_PAGE_MAX, (entry) => entry.version)
  }

  get counter (): StockCounter { return storeCounter(this.store, CLI_WRITE) }

  async applyAll (operations: BatchOperation[], _key: string, after?: Promise<unknown>): Promise<ApplyOutcome> {
    // The store's batch, as POST /v3/plant/batch: one transaction (one fsync on a data folder), so a
    // batch lands whole or not at all; busy storage is tried again.
    let aheadFailed = false
    after?.catch(() => { aheadFailed = true })
    return withRetries('writing to the catalogue', async () => {
      try {
        // No plants back: an import only counts them.
        await this.store.batch(operations, undefined, CLI_WRITE, { results: false, after })
        return { ok: true } as const
      } catch (error) {
        return refusedByStore(error, operations)
      }
      // The batch before it failed (and fails the import): nothing to try again.
    }, (err) => !aheadFailed && this.busy(err) ? 200 : undefined)
  }

  close (): Promise<void> {
    return this.store.close()
  }
}

/** A whole catalogue read in one snapshot (an export): the admin store's, on either engine. */
class SnapshotCatalogue implements Catalogue {
  constructor (readonly where: string, private readonly snapshot: CatalogueSnapshot) {}

  readonly stock: StockReader = {
    locations: async () => {
      const names: string[] = []
      for await (const page of this.snapshot.rows('locations', 1000)) names.push(...page.map((l) => l.name))
      return mainFirst(names)
    },
    onHand: async (ids) => {
      const levels = new Map<number, Map<string, number>>()
      for (const l of await this.snapshot.levels(ids)) {
        let plant = levels.get(l.plant_id)
        if (plant === undefined) levels.set(l.plant_id, plant = new Map())
        plant.set(l.location, l.on_hand)
      }
      return levels
    }
  }

  pages (pageSize: number, query?: PlantQuery): AsyncGenerator<Plant[]> {
    return this.snapshot.plants(pageSize, query)
  }

  async applyAll (): Promise<ApplyOutcome> {
    throw new Error('an export snapshot is read-only')
  }

  close (): Promise<void> {
    return this.snapshot.close()
  }
}

/** The store's finder, its failures said as the command line says a failed read. */
class ReadingFinder implements PlantFinder {
  constructor (private readonly finder: PlantFinder) {}
  existing (ids: number[]): Promise<number[]> { return this.reading(async () => this.finder.existing(ids)) }
  byIds (ids: number[]): Promise<Plant[]> { return this.reading(async () => this.finder.byIds(ids)) }
  bySkus (skus: string[]): Promise<Plant[]> { return this.reading(async () => this.finder.bySkus(skus)) }
  byNames (names: string[]): Promise<Plant[]> { return this.reading(async () => this.finder.byNames(names)) }
  close (): Promise<void> { return this.finder.close() }

  private async reading<T> (read: () => Promise<T>): Promise<T> {
    try {
      return await read()
    } catch (err) {
      throw new CommandFailed(`reading the catalogue: ${reasonOf(err)}`)
    }
  }
}

/** How a key is given to a command that writes through a service (--url). */
const GIVE_KEY = 'pass --api-key-file FILE, a file holding the key'

class Retry extends Error {
  constructor (message: string, readonly waitMs: number) { super(message) }
}

export class ServiceCatalogue implements Catalogue {
  readonly where: string
  private readonly client: PlantClient
  /** Each batch of a run has its own key, so a retry after a lost answer cannot apply it twice. */
  private answered = false
  private readonly run = `plants-import-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`

  constructor (url: string, private readonly apiKey: ApiKey | undefined, private readonly lib: ClientModule) {
    let origin: URL
    try {
      origin = new URL(url)
    } catch {
      throw new UsageError(`--url ${JSON.stringify(url)} is not a URL`)
    }
    this.where = `service ${origin.origin}`
    this.client = lib.createPlantClient({ baseUrl: origin.origin, apiKey: apiKey?.value })
    this.stock = serviceStock(this.client, async (attempt) => withRetries(`reading ${this.where}`, async () => {
      const { data, error, response } = await attempt()
      this.answered = true
      if (data !== undefined) return data
      throw this.failure(response, error)
    }, this.retryable))
  }

  readonly stock: StockReader

  async * pages (pageSize: number, query?: PlantQuery): AsyncGenerator<Plant[]> {
    let cursor: string | undefined
    const found = query && listParamsOf(query)
    for (;;) {
      const page = await withRetries(`reading ${this.where}`, async () => {
        const { data, error, response } = await this.client.GET('/v3/plant', { params: { query: { ...found, limit: Math.min(pageSize, 500), cursor } } })
        this.answered = true
        if (data) return data
        throw this.failure(response, error)
      }, this.retryable)
      if (page.items.length > 0) yield page.items
      if (page.nextCursor === null) return
      cursor = page.nextCursor
    }
  }

  /**
   * GET /v3/trash, walked once (see StoreCatalogue.trashed). It needs a write key: without one (a
   * dry run with reads open), each id's history answers instead, which a plant in the trash keeps.
   */
  async trashed (wanted: IdSet): Promise<number[]> {
    if (wanted.size === 0) return []
    const found: number[] = []
    let cursor: string | undefined
    while (wanted.size > found.length) {
      const page = await withRetries(`reading the trash of ${this.where}`, async () => {
        const { data, error, response } = await this.client.GET('/v3/trash', { params: { query: { limit: TRASH_PAGE_MAX, cursor } } })
        this.answered = true
        if (data) return data
        if (response.status === 401 || response.status === 403) return undefined
        throw this.failure(response, error)
      }, this.retryable)
      if (page === undefined) return await this.trashedByHistory(wanted)
      for (const { id } of page.items) if (wanted.has(id)) found.push(id)
      if (page.nextCursor === null) break
      cursor = page.nextCursor
    }
    return found
  }

  async * history (id: number): AsyncGenerator<HistoryEntry[]> {
    let cursor: string | undefined
    for (;;) {
      const page = await withRetries(`reading ${this.where}`, async () => {
        const { data, error, response } = await this.client.GET('/v3/plant/{id}/history', { params: { path: { id }, query: { limit: HISTORY_PAGE_MAX, cursor } } })
        this.answered = true
        if (data) return data
        if (response.status === 404) return undefined
        throw this.failure(response, error)
      }, this.retryable)
      if (page === undefined) return
      yield page.items as HistoryEntry[]
      if (page.nextCursor === null) return
      cursor = page.nextCursor
    }
  }

  /** The ids (of no live plant) whose history can be read: those of plants in the trash. */
  private async trashedByHistory (ids: Iterable<number>): Promise<number[]> {
    const found: number[] = []
    for (const id of ids) {
      const held = await withRetries(`reading ${this.where}`, async () => {
        const { data, error, response } = await this.client.GET('/v3/plant/{id}/history', { params: { path: { id }, query: { limit: 1 } } })
        this.answered = true
        if (data) return true
        if (response.status === 404) return false
        throw this.failure(response, error)
      }, this.retryable)
      if (held) found.push(id)
    }
    return found
  }

  /**
   * GET /v3/trash needs what a write needs (scope write): without a key it answers 401 exactly when
   * the service has keys. One request and no retries: a note must not fail a dry run that is done.
   */
  async writesNeed (): Promise<string | undefined> {
    if (this.apiKey !== undefined) return undefined
    const answer = await this.client.GET('/v3/trash', { params: { query: { limit: 1 } } }).catch(() => undefined)
    return answer?.response.status === 401 ? `${this.where} takes writes only with an API key with write access (scope write or admin): ${GIVE_KEY}` : undefined
  }

  /** POST /v3/plant/batch: refusals (400, 404, 409, 412) name the operations by index; 429, 503 and lost connections are waited out. */
  async applyAll (operations: BatchOperation[], key: string, after?: Promise<unknown>): Promise<ApplyOutcome> {
    // A request cannot wait for the one before it inside the service: it is sent once that one is answered.
    await after
    return withRetries(`writing to ${this.where}`, async () => {
      const { data, error, response } = await this.lib.batchPlants(this.client, operations.map(wireOperation), { idempotencyKey: `${this.run}-${key}` })
      this.answered = true
      if (data) return { ok: true } as const
      const status = response.status
      if ([400, 404, 409, 412].includes(status) && error?.errors !== undefined) return refusedByService(status, error.errors)
      if (status === 413) throw new CommandFailed(`${this.where} refused a batch of ${operations.length} rows as too large (413): pass a smaller --batch-size`)
      throw this.failure(response, error)
    }, this.retryable)
  }

  /**
   * Overload, rate limits and lost connections are worth waiting out, once the service has answered:
   * a service that never answered is more likely a wrong address than a restart, and is reported at once.
   */
  private readonly retryable = (err: unknown): number | undefined => {
    if (err instanceof Retry) return err.waitMs
    if (err instanceof CommandFailed || err instanceof UsageError) return undefined
    return err instanceof TypeError && this.answered ? 500 : undefined // fetch's network failures are TypeErrors
  }

  private failure (response: Response, error: unknown): Error {
    const status = response.status
    const message = this.lib.describeProblem(status, error as { detail?: string })
    if (status === 401) return new CommandFailed(this.unauthorized(message))
    if (status === 429 || status === 503) {
      const after = Number(response.headers.get('retry-after'))
      return new Retry(message, Number.isFinite(after) && after > 0 ? Math.min(after, 30) * 1000 : 500)
    }
    return new CommandFailed(`${this.where} answered ${message}`)
  }

  /** A 401 says what to change: give a key, or give the right one (a digest from API_KEYS_FILE is not a key). */
  private unauthorized (message: string): string {
    if (this.apiKey === undefined) return `${this.where} needs an API key (scope write to write; to read, scope read, where the service has READS=keys): ${GIVE_KEY} (${message})`
    const digest = /^(sha256:)?[0-9a-f]{64}$/i.test(this.apiKey.value)
      ? '; it looks like a SHA-256 digest (a line of API_KEYS_FILE), and the file must hold the key itself'
      : ''
    return `${this.where} refused the key in --api-key-file ${this.apiKey.file}: it is not one of the service's keys${digest} (${message})`
  }

  async close (): Promise<void> {}
}
