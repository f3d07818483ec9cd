import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import Database from 'better-sqlite3'
import pg from 'pg'
import { parseDatabaseUrl } from '../store/postgres/connection.js'
import { migrate as migratePostgres } from '../store/postgres/migrate.js'
import { databaseFile, dataDirOf, serviceConfig } from './catalogue.js'
import { CommandFailed, formatDuration, plural, positiveInteger, UsageError, type Command, type Io } from './command.js'
import { fromPostgresText, toPostgresText } from '../store/postgres/text-escape.js'
import { storedPhotoFiles } from '../store/sqlite/photo-writes.js'
import { redactUrl } from './postgres-catalogue.js'
import { copyWebhooks, sourceWebhookCounts, targetWebhookCounts, type WebhookCounts } from './migrate-webhooks.js'

export const migrateCommand: Command = {
  name: 'migrate',
  usage: `Usage: plants migrate [--to postgres://USER:PASSWORD@HOST:PORT/DATABASE] [options]

Copies the embedded catalogue of a data folder into PostgreSQL, as the PostgreSQL store keeps it:
plants with their ids and versions (so ETags stay valid), the id sequence (an id handed out on
SQLite, even one since deleted, is never handed out again), the change feed with its sequence
numbers (clients resume where they were), the Idempotency-Keys still remembered, the trash, the
plants' history, the API keys, the webhooks (with their secrets, their place in the feed and their
recent attempts), and the photos: each plant's list and every photo file (BLOB rows become bytea
rows, so every instance serves them).

The target's schema is created (or brought up to date) by the store's own migrations; the target
must hold no catalogue yet. Everything is copied in one transaction, and before it commits the
copy is verified: the number of plants, tags, changes, keys, photo files, history versions and
webhooks, the inventory's counts, the id and feed sequences, a digest of every photo file (name,
references, bytes), of every webhook and of every plant read back from PostgreSQL must equal the
source's. A failed check commits
nothing.

The copy is a snapshot of the data folder when the command starts: stop the service's writes first
(stop it, or point its load balancer away), then start it with DATABASE_URL set to the target.

Options:
  --to URL           the PostgreSQL database (postgres:// or postgresql://); search_path and other
                     connection parameters in the URL are honoured (default: $DATABASE_URL)
  --data-dir DIR     the data folder to copy (default: $DATA_DIR, else ./data)
  --batch-size N     plants per INSERT (default 5000)
  -h, --help         this help`,
  options: {
    to: { type: 'string' },
    'data-dir': { type: 'string' },
    // Accepted to be refused with a way forward: --url names a running service in other commands.
    url: { type: 'string' },
    'batch-size': { type: 'string' }
  },
  run: runMigrate
}

interface PlantRow {
  id: number,
  name: string,
  category: string | null,
  tags: string,
  status: string,
  version: number,
  photos: string,
  created_at: number,
  updated_at: number,
  description: string | null,
  price: number | null,
  sku: string | null,
  barcode: string | null
}
/** The store fields and times (issue 25) as both engines keep them: price in cents, times in epoch milliseconds. */
const STORE_COLUMNS = 'description, price, sku, barcode, created_at, updated_at'
const storeValues = (r: { description: string | null, price: number | null, sku: string | null, barcode: string | null, created_at: number, updated_at: number }): unknown[] =>
  [r.description, r.price, r.sku, r.barcode, r.created_at, r.updated_at]
type Counts = WebhookCounts & { plants: number, inventory: string, tags: number, changes: number, keys: number, lastId: number, feedHead: number, feedFloor: number, digest: string, photoFiles: number, fileDigest: string, apiKeys: number, apiKeyDigest: string, trash: number, trashDigest: string, history: number, historyDigest: string }

/** A trashed plant as both engines keep it: its record as JSON text, copied as it is. */
interface TrashRow { id: number, plant: string, version: number, trashed_at: number, trashed_by: string | null }
const TRASH_COLUMNS = 'id, plant, version, trashed_at, trashed_by'

/** How many plants of each status, as GET /v3/store/inventory answers: "available 2, pending 0, sold 1". */
const inventoryOf = (counts: Array<{ status: string, n: number | string }>): string =>
  ['available', 'pending', 'sold'].map((status) => `${status} ${Number(counts.find((c) => c.status === status)?.n ?? 0)}`).join(', ')

/** The trash's count and a digest of every entry, in id order. */
function trashDigest (rows: TrashRow[]): Pick<Counts, 'trash' | 'trashDigest'> {
  const hash = createHash('sha256')
  for (const r of rows) hash.update(JSON.stringify([Number(r.id), r.plant, r.version, Number(r.trashed_at), r.trashed_by])).update('\n')
  return { trash: rows.length, trashDigest: hash.digest('hex') }
}

/** The data folder's trash (none before the trash's migration). */
const sourceTrash = (db: Database.Database): TrashRow[] =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'trash'").get() === undefined
    ? []
    : db.prepare(`SELECT ${TRASH_COLUMNS} FROM trash ORDER BY id`).all() as TrashRow[]

/** A plant's version as both engines keep it (catalogue/history.ts): the changes as JSON text, copied as they are. */
interface HistoryRow { plant_id: number, version: number, kind: number, at: number, actor: string, changes: string }
const HISTORY_COLUMNS = 'plant_id, version, kind, at, actor, changes'
const HISTORY_ORDER = 'ORDER BY plant_id, version'

/** The history's count and a digest of every version, in (plant, version) order. */
class HistoryDigest {
  private readonly hash = createHash('sha256')
  count = 0
  add (r: HistoryRow): void {
    this.count++
    this.hash.update(JSON.stringify([Number(r.plant_id), r.version, r.kind, Number(r.at), r.actor, r.changes])).update('\n')
  }

  counts (): Pick<Counts, 'history' | 'historyDigest'> { return { history: this.count, historyDigest: this.hash.digest('hex') } }
}

/** The data folder's history, in (plant, version) order (none before the history's migration). */
function * sourceHistory (db: Database.Database): Generator<HistoryRow> {
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'history'").get() === undefined) return
  yield * db.prepare(`SELECT ${HISTORY_COLUMNS} FROM history ${HISTORY_ORDER}`).iterate() as IterableIterator<HistoryRow>
}

/** A digest of every plant in id order (its photo list included), the same whichever engine the rows come from. */
class PlantDigest {
  private readonly hash = createHash('sha256')
  add (id: number, name: string, category: string | null, tags: string[], status: string, version: number, photos: string, store: unknown[]): void {
    this.hash.update(JSON.stringify([id, name, category, tags, status, version, photos, ...store])).update('\n')
  }

  hex (): string { return this.hash.digest('hex') }
}

/** An API key as both engines hand it over: times in epoch milliseconds. */
interface ApiKeyRow { name: string, scope: string, hash: string, created_at: number, expires_at: number | null, last_used_at: number | null, revoked_at: number | null }
const API_KEY_COLUMNS = 'name, scope, hash, created_at, expires_at, last_used_at, revoked_at'

/** The API keys' count and a digest of every one (its hash and times included), in name order (sorted here: the engines' collations differ). */
function apiKeyDigest (rows: ApiKeyRow[]): Pick<Counts, 'apiKeys' | 'apiKeyDigest'> {
  const hash = createHash('sha256')
  for (const r of [...rows].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0)) {
    hash.update(JSON.stringify([r.name, r.scope, r.hash, r.created_at, r.expires_at, r.last_used_at, r.revoked_at])).update('\n')
  }
  return { apiKeys: rows.length, apiKeyDigest: hash.digest('hex') }
}

/** A digest of every photo file in name order: its name, reference count and a hash of its bytes. */
class FileDigest {
  private readonly hash = createHash('sha256')
  count = 0
  add (name: string, refs: number, bytes: Uint8Array): void {
    this.count++
    this.hash.update(`${name}\t${refs}\t${createHash('sha256').update(bytes).digest('base64url')}\n`)
  }

  hex (): string { return this.hash.digest('hex') }
}

async function runMigrate (values: Record<string, any>, positionals: string[], io: Io): Promise<number> {
  if (values.url !== undefined) {
    throw new UsageError('migrate copies a data folder (--data-dir) into PostgreSQL (--to postgres://…), not from a running service (--url): run it on the service\'s host')
  }
  if (positionals.length > 0) throw new UsageError('migrate takes no FILE (the target goes in --to)')
  // The target defaults to the service's own DATABASE_URL: migrate, then start the service as configured.
  const to: string | undefined = values.to ?? (await serviceConfig(io)).databaseUrl
  if (to === undefined) throw new UsageError('--to postgres://… is required (or set DATABASE_URL, as for the service)')
  let connectionString: string
  try {
    connectionString = parseDatabaseUrl(to).connectionString
  } catch (err) {
    throw new UsageError(`--to: ${(err as Error).message.replace(/^DATABASE_URL/, 'the URL')}`)
  }
  const batchSize = positiveInteger('batch-size', values['batch-size'], 5000)
  const dataDir = await dataDirOf(values, io)
  const source = databaseFile(dataDir)
  if (!existsSync(source)) throw new CommandFailed(`no catalogue in ${dataDir} (${source} does not exist)`)
  const started = Date.now()
  const target = redactUrl(to)

  const sqlite = new Database(source, { readonly: true, fileMustExist: true })
  const client = new pg.Client({ connectionString })
  client.on('error', () => {}) // a lost connection fails the query in progress, which reports it
  try {
    sqlite.pragma('busy_timeout = 10000')
    // One read transaction: every table is read from the same snapshot, however long the copy takes.
    sqlite.prepare('BEGIN').run()
    const expected = sourceCounts(sqlite)

    try {
      await migratePostgres({ connectionString })
      await client.connect()
    } catch (err) {
      throw new CommandFailed(`cannot prepare ${target}: ${(err as Error).message}`)
    }
    const { rows: [existing] } = await client.query<{ n: string }>(
      "SELECT (SELECT count(*) FROM plants) + (SELECT count(*) FROM changes) + (SELECT count(*) FROM webhooks) + (SELECT value FROM meta WHERE key = 'feed_head') AS n")
    if (Number(existing.n) > 0) throw new CommandFailed(`${target} already holds a catalogue; migrate only into an empty one`)

    await client.query('BEGIN')
    try {
      await copy(sqlite, client, expected, batchSize)
      const copied = await targetCounts(client)
      const wrong = (Object.keys(expected) as Array<keyof Counts>).filter((k) => expected[k] !== copied[k])
      if (wrong.length > 0) {
        throw new CommandFailed(`the copy does not match the source (nothing committed): ${wrong.map((k) => `${k} ${String(copied[k])} instead of ${String(expected[k])}`).join(', ')}`)
      }
      await client.query('COMMIT')
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {})
      if (err instanceof CommandFailed) throw err
      throw new CommandFailed(`copying into ${target} failed, nothing committed: ${(err as Error).message}`)
    }
    sqlite.prepare('COMMIT').run()

    // Writes the service took while we copied are not in PostgreSQL: say so rather than lose them quietly.
    const after = (sqlite.prepare('SELECT coalesce(max(seq), 0) AS seq FROM changes').get() as { seq: number }).seq
    io.stdout.write(`migrated the data folder ${dataDir} to ${target} in ${formatDuration(Date.now() - started)}\n` +
      `  plants          ${expected.plants.toLocaleString('en')} (last id handed out ${expected.lastId}; ${expected.inventory})\n` +
      `  tags            ${expected.tags.toLocaleString('en')}\n` +
      `  changes         ${expected.changes.toLocaleString('en')} (feed head ${expected.feedHead}, floor ${expected.feedFloor})\n` +
      `  idempotency keys ${expected.keys.toLocaleString('en')}\n` +
      `  photo files     ${expected.photoFiles.toLocaleString('en')}\n` +
      `  API keys        ${expected.apiKeys.toLocaleString('en')}\n` +
      `  in the trash    ${expected.trash.toLocaleString('en')}\n` +
      `  history         ${expected.history.toLocaleString('en')} versions\n` +
      `  webhooks        ${expected.webhooks.toLocaleString('en')} (with their secrets and places in the feed; ${plural(expected.webhookDeliveries, 'attempt')} in their logs)\n` +
      '  verified: counts, the inventory, sequences, a digest of every plant, of every photo file, of every API key, of the trash, of the history and of the webhooks match the source\n')
    if (after > expected.feedHead) {
      io.stderr.write(`warning: ${plural(after - expected.feedHead, 'change')} reached the data folder after the snapshot and ${after - expected.feedHead === 1 ? 'is' : 'are'} not in PostgreSQL; stop the service's writes and migrate into an empty database again\n`)
      return 1
    }
    return 0
  } finally {
    if (sqlite.inTransaction) sqlite.prepare('ROLLBACK').run()
    sqlite.close()
    await client.end().catch(() => {})
  }
}

function sourceCounts (db: Database.Database): Counts {
  const one = <T>(sql: string): T => db.prepare(sql).get() as T
  const seq = (name: string): number => (db.prepare('SELECT seq FROM sqlite_sequence WHERE name = ?').get(name) as { seq: number } | undefined)?.seq ?? 0
  const digest = new PlantDigest()
  let tags = 0
  for (const r of db.prepare(`SELECT id, name, category, tags, status, version, photos, ${STORE_COLUMNS} FROM plants ORDER BY id`).iterate() as IterableIterator<PlantRow>) {
    const list = JSON.parse(r.tags) as string[]
    tags += list.length
    digest.add(r.id, r.name, r.category, list, r.status, r.version, r.photos, storeValues(r))
  }
  const { plants, maxId } = one<{ plants: number, maxId: number }>('SELECT count(*) AS plants, coalesce(max(id), 0) AS maxId FROM plants')
  const { changes, maxSeq } = one<{ changes: number, maxSeq: number }>('SELECT count(*) AS changes, coalesce(max(seq), 0) AS maxSeq FROM changes')
  return {
    plants,
    inventory: inventoryOf(db.prepare('SELECT status, count(*) AS n FROM plants GROUP BY status').all() as Array<{ status: string, n: number }>),
    tags,
    changes,
    keys: one<{ n: number }>('SELECT count(*) AS n FROM idempotency_keys').n,
    // AUTOINCREMENT remembers the highest id ever handed out, deleted ones included.
    lastId: Math.max(seq('plants'), maxId),
    feedHead: Math.max(seq('changes'), maxSeq),
    feedFloor: one<{ value: number }>("SELECT value FROM meta WHERE key = 'feed_floor'").value,
    digest: digest.hex(),
    ...sourceFiles(db),
    ...apiKeyDigest(db.prepare(`SELECT ${API_KEY_COLUMNS} FROM api_keys`).all() as ApiKeyRow[]),
    ...trashDigest(sourceTrash(db)),
    ...historyCounts(sourceHistory(db)),
    ...sourceWebhookCounts(db)
  }
}

function historyCounts (rows: Iterable<HistoryRow>): Pick<Counts, 'history' | 'historyDigest'> {
  const digest = new HistoryDigest()
  for (const r of rows) digest.add(r)
  return digest.counts()
}

function sourceFiles (db: Database.Database): Pick<Counts, 'photoFiles' | 'fileDigest'> {
  const files = new FileDigest()
  for (const f of storedPhotoFiles(db)) {
    files.add(f.name, f.refs, f.bytes)
  }
  return { photoFiles: files.count, fileDigest: files.hex() }
}

async function copy (db: Database.Database, client: pg.Client, expected: Counts, batchSize: number): Promise<void> {
  const insertPlants = `
    INSERT INTO plants (id, name, category, tags, status, version, photos, ${STORE_COLUMNS}) OVERRIDING SYSTEM VALUE
    SELECT id, name, category, tags, status, version, photos, ${STORE_COLUMNS}
    FROM json_to_recordset($1::json) AS r(id bigint, name text, category text, tags text[], status text, version int, photos text,
      description text, price bigint, sku text, barcode text, created_at bigint, updated_at bigint)`
  let batch: unknown[] = []
  const flush = async (): Promise<void> => {
    if (batch.length > 0) await client.query(insertPlants, [JSON.stringify(batch)])
    batch = []
  }
  for (const r of db.prepare(`SELECT id, name, category, tags, status, version, photos, ${STORE_COLUMNS} FROM plants ORDER BY id`).iterate() as IterableIterator<PlantRow>) {
    batch.push({
      ...r,
      name: toPostgresText(r.name),
      category: r.category === null ? null : toPostgresText(r.category),
      description: r.description === null ? null : toPostgresText(r.description),
      tags: (JSON.parse(r.tags) as string[]).map(toPostgresText)
    })
    if (batch.length >= batchSize) await flush()
  }
  await flush()
  await client.query('INSERT INTO plant_tags (tag, plant_id) SELECT DISTINCT t, id FROM plants, unnest(tags) AS t')
  // Photo files one at a time: each may be megabytes, and only one is held in memory.
  for (const f of storedPhotoFiles(db)) {
    await client.query('INSERT INTO photo_files (name, refs, bytes) VALUES ($1, $2, $3)', [f.name, f.refs, f.bytes])
  }

  // Change records and stored answers are JSON text, which escapes U+0000: they are copied as they are.
  const insertChanges = `
    INSERT INTO changes (seq, kind, plant_id, version, plant, at, actor)
    SELECT * FROM json_to_recordset($1::json) AS r(seq bigint, kind text, plant_id bigint, version int, plant text, at bigint, actor text)`
  for (const rows of pages(db, 'SELECT seq, kind, plant_id, version, plant, at, actor FROM changes ORDER BY seq', batchSize)) {
    await client.query(insertChanges, [JSON.stringify(rows)])
  }
  const insertKeys = `
    INSERT INTO idempotency_keys (key, request_hash, plant_id, response, created_at)
    SELECT * FROM json_to_recordset($1::json) AS r(key text, request_hash text, plant_id bigint, response text, created_at bigint)`
  for (const rows of pages(db, 'SELECT key, request_hash, plant_id, response, created_at FROM idempotency_keys ORDER BY key', batchSize)) {
    await client.query(insertKeys, [JSON.stringify(rows)])
  }

  // API keys by their hash, revoked ones included: clients keep their keys, a revoked one stays refused,
  // and keys stay required (a catalogue that held keys never opens up by moving).
  const ms = (column: string): string => `timestamptz 'epoch' + ${column} * interval '1 millisecond'`
  const insertApiKeys = `
    INSERT INTO api_keys (${API_KEY_COLUMNS})
    SELECT name, scope, hash, ${ms('created_at')}, ${ms('expires_at')}, ${ms('last_used_at')}, ${ms('revoked_at')}
    FROM json_to_recordset($1::json) AS r(name text, scope text, hash text, created_at bigint, expires_at bigint, last_used_at bigint, revoked_at bigint)`
  for (const rows of pages(db, `SELECT ${API_KEY_COLUMNS} FROM api_keys ORDER BY name`, batchSize)) {
    await client.query(insertApiKeys, [JSON.stringify(rows)])
  }

  // The trash, with the references its photos hold (photo_files' refs, copied above, count them).
  for (const rows of chunked(sourceTrash(db), batchSize)) {
    await client.query(`INSERT INTO trash (${TRASH_COLUMNS}) SELECT * FROM json_to_recordset($1::json) AS r(id bigint, plant text, version int, trashed_at bigint, trashed_by text)`,
      [JSON.stringify(rows)])
  }

  // The plants' history, in the order it was written (so the retention purge still meets the oldest first).
  const insertHistory = `INSERT INTO history (${HISTORY_COLUMNS})
    SELECT * FROM json_to_recordset($1::json) AS r(plant_id bigint, version int, kind smallint, at bigint, actor text, changes text)`
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'history'").get() !== undefined) {
    for (const rows of pages(db, `SELECT ${HISTORY_COLUMNS} FROM history ORDER BY seq`, batchSize)) {
      await client.query(insertHistory, [JSON.stringify(rows)])
    }
  }

  await copyWebhooks(db, client)

  if (expected.lastId > 0) await client.query("SELECT setval(pg_get_serial_sequence('plants', 'id'), $1, true)", [expected.lastId])
  // The inventory's counts were made by the migrations while plants was empty: count what was copied.
  await client.query("UPDATE meta SET value = (SELECT count(*) FROM plants WHERE status = substr(meta.key, 7)) WHERE key IN ('count_available', 'count_pending', 'count_sold')")
  await client.query("UPDATE meta SET value = $1 WHERE key = 'feed_head'", [expected.feedHead])
  await client.query("UPDATE meta SET value = $1 WHERE key = 'feed_floor'", [expected.feedFloor])
}

function * chunked<T> (items: T[], size: number): Generator<T[]> {
  for (let at = 0; at < items.length; at += size) yield items.slice(at, at + size)
}

function * pages (db: Database.Database, sql: string, size: number): Generator<unknown[]> {
  let rows: unknown[] = []
  for (const row of db.prepare(sql).iterate()) {
    rows.push(row)
    if (rows.length >= size) {
      yield rows
      rows = []
    }
  }
  if (rows.length > 0) yield rows
}

async function targetCounts (client: pg.Client): Promise<Counts> {
  const { rows: [c] } = await client.query<Record<string, string>>(`SELECT
    (SELECT count(*) FROM plants) AS plants,
    (SELECT count(*) FROM plant_tags) AS tags,
    (SELECT count(*) FROM changes) AS changes,
    (SELECT count(*) FROM idempotency_keys) AS keys,
    (SELECT value FROM meta WHERE key = 'feed_head') AS feed_head,
    (SELECT value FROM meta WHERE key = 'feed_floor') AS feed_floor`)
  const { rows: [s] } = await client.query<{ last_value: string, is_called: boolean }>(
    `SELECT last_value, is_called FROM ${await sequenceName(client)}`)
  // Read back through PostgreSQL, in id order, a page at a time.
  const digest = new PlantDigest()
  let afterId = 0
  for (;;) {
    const { rows } = await client.query<Omit<PlantRow, 'id' | 'tags'> & { id: string, tags: string[] }>(
      `SELECT id, name, category, tags, status, version, photos, ${STORE_COLUMNS} FROM plants WHERE id > $1 ORDER BY id LIMIT 5000`, [afterId])
    if (rows.length === 0) break
    for (const r of rows) {
      // BIGINT columns arrive as strings from a plain client.
      const number = (v: unknown): number | null => v === null ? null : Number(v)
      const store = storeValues({
        ...r, description: r.description === null ? null : fromPostgresText(r.description), price: number(r.price), created_at: number(r.created_at)!, updated_at: number(r.updated_at)!
      })
      digest.add(Number(r.id), fromPostgresText(r.name), r.category === null ? null : fromPostgresText(r.category), r.tags.map(fromPostgresText), r.status, r.version, r.photos, store)
    }
    afterId = Number(rows[rows.length - 1].id)
  }
  return {
    plants: Number(c.plants),
    // The counts the service reads for its inventory, kept by every write (recounted by the copy).
    inventory: inventoryOf((await client.query<{ status: string, n: string }>(
      "SELECT substr(key, 7) AS status, value AS n FROM meta WHERE key IN ('count_available', 'count_pending', 'count_sold')")).rows),
    // plant_tags holds one row per distinct tag of a plant; SQLite's lists are distinct already.
    tags: Number(c.tags),
    changes: Number(c.changes),
    keys: Number(c.keys),
    lastId: s.is_called ? Number(s.last_value) : 0,
    feedHead: Number(c.feed_head),
    feedFloor: Number(c.feed_floor),
    digest: digest.hex(),
    ...await targetFiles(client),
    ...apiKeyDigest(await targetApiKeys(client)),
    ...trashDigest((await client.query<TrashRow>(`SELECT ${TRASH_COLUMNS} FROM trash ORDER BY id`)).rows),
    ...await targetHistory(client),
    ...await targetWebhookCounts(client)
  }
}

/** The target's history read back a page at a time, in (plant, version) order. */
async function targetHistory (client: pg.Client): Promise<Pick<Counts, 'history' | 'historyDigest'>> {
  const digest = new HistoryDigest()
  let after = [0, 0]
  for (;;) {
    const { rows } = await client.query<HistoryRow>(`SELECT ${HISTORY_COLUMNS} FROM history WHERE (plant_id, version) > ($1, $2) ${HISTORY_ORDER} LIMIT 5000`, after)
    if (rows.length === 0) return digest.counts()
    for (const r of rows) digest.add(r)
    const last = rows[rows.length - 1]
    after = [Number(last.plant_id), last.version]
  }
}

async function targetApiKeys (client: pg.Client): Promise<ApiKeyRow[]> {
  const epochMs = (column: string): string => `round(extract(epoch FROM ${column}) * 1000)::float8 AS ${column}`
  const { rows } = await client.query<ApiKeyRow>(`SELECT name, scope, hash, ${['created_at', 'expires_at', 'last_used_at', 'revoked_at'].map(epochMs).join(', ')} FROM api_keys`)
  return rows
}

/** The photo files read back from PostgreSQL, one at a time, in the same (byte) order as SQLite's. */
async function targetFiles (client: pg.Client): Promise<Pick<Counts, 'photoFiles' | 'fileDigest'>> {
  const files = new FileDigest()
  let after = ''
  for (;;) {
    const { rows: [f] } = await client.query<{ name: string, refs: number, bytes: Buffer }>(
      'SELECT name, refs, bytes FROM photo_files WHERE name COLLATE "C" > $1 ORDER BY name COLLATE "C" LIMIT 1', [after])
    if (!f) break
    files.add(f.name, f.refs, f.bytes)
    after = f.name
  }
  return { photoFiles: files.count, fileDigest: files.hex() }
}

async function sequenceName (client: pg.Client): Promise<string> {
  const { rows: [r] } = await client.query<{ name: string }>("SELECT pg_get_serial_sequence('plants', 'id') AS name")
  return r.name
}
