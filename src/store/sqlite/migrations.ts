import type Database from 'better-sqlite3'
import { nameKey } from '../../catalogue/name-key.js'
import { nameOrderKey } from '../../catalogue/name-order.js'
import { UNPRICED } from '../../catalogue/query.js'
import { inIdBatches } from './id-batches.js'
import { chunksOf } from './photo-writes.js'
import { compatibilityFoldMigration, searchTextMigration } from './search-backlog.js'
import { WEBHOOK_EVENTS_MIGRATION, WEBHOOK_RESPONSES_MIGRATION, WEBHOOKS_MIGRATION } from './webhook-store.js'
import { API_KEYS_MIGRATION } from './sqlite-key-store.js'
import { TRASH_MIGRATION } from './trash.js'
import { HISTORY_KINDS_MIGRATION, HISTORY_MIGRATION } from './history.js'
import { mainLevelMigration, NO_INSERT_TRIGGER_MIGRATION, STOCK_EVENTS_MIGRATION, STOCK_MIGRATION, stockStateMigration, THRESHOLD_TRIGGER_MIGRATION } from './stock-migration.js'
import { RESERVATIONS_MIGRATION } from './reservation-writes.js'
import { ledgerChainMigration } from './stock-ledger.js'
import { RECENT_KEYS_MIGRATION } from './key-book.js'
import { CATEGORY_NAME_BOUNDS_MIGRATION } from './category-name-bounds.js'

// Versioned by PRAGMA user_version; each step runs in its own transaction. Append, never edit.
const MIGRATIONS: Array<string | ((db: Database.Database, progress: (message: string) => void) => void)> = [
  `
  -- AUTOINCREMENT: an id is never handed out again, not even after the highest plant is deleted.
  CREATE TABLE plants (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    category TEXT,
    tags TEXT NOT NULL,
    status TEXT NOT NULL,
    version INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX plants_status ON plants (status, id);
  CREATE INDEX plants_category ON plants (category, id);
  -- One row per tag so a tag filter walks an index instead of the catalogue.
  CREATE TABLE plant_tags (
    tag TEXT NOT NULL,
    plant_id INTEGER NOT NULL,
    PRIMARY KEY (tag, plant_id)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE idempotency_keys (
    key TEXT PRIMARY KEY,
    request_hash TEXT NOT NULL,
    plant_id INTEGER NOT NULL,
    response TEXT NOT NULL,
    created_at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
  -- The change feed's outbox: written in the same transaction as the change it records.
  CREATE TABLE changes (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL,
    plant_id INTEGER NOT NULL,
    version INTEGER NOT NULL,
    plant TEXT,
    at INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX changes_at ON changes (at);
  CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL) STRICT;
  INSERT INTO meta (key, value) VALUES ('feed_floor', 0);
  `,
  `
  -- PUT and DELETE replace a plant's tags by plant_id; the primary key leads with tag, so without
  -- this index each of them scanned every tag row of the catalogue.
  CREATE INDEX plant_tags_plant ON plant_tags (plant_id);
  `,
  `
  -- Every write paid for this index in the outbox; the hourly purge now walks the oldest changes
  -- in seq order instead (times follow seq), so it is not needed.
  DROP INDEX changes_at;
  `,
  `
  -- A plant's tag rows are exactly its tags column, so an update or delete names each row by
  -- (tag, plant_id), the primary key. This index cost every write a B-tree insert per tag, and a
  -- random page per changed tag on a large catalogue.
  DROP INDEX plant_tags_plant;
  `,
  findingPlants,
  `
  -- Photos. A plant's photo records ride in its row (JSON, in the order added), so reads
  -- need no join. The files live here too, as BLOBs in the same database: they commit, back up and
  -- restore with the record that names them. refs counts the photos naming a file; a file whose
  -- count reaches 0 is deleted in that same transaction.
  ALTER TABLE plants ADD COLUMN photos TEXT NOT NULL DEFAULT '[]';
  CREATE TABLE photo_files (
    name TEXT PRIMARY KEY,
    refs INTEGER NOT NULL,
    bytes BLOB NOT NULL
  ) STRICT;
  -- Every stored record gains photos, so the feed and idempotent replays serve the record's one shape.
  UPDATE changes SET plant = substr(plant, 1, length(plant) - 1) || ',"photos":[]}' WHERE plant IS NOT NULL;
  UPDATE idempotency_keys SET response = substr(response, 1, length(response) - 1) || ',"photos":[]}';
  `,
  `
  -- The name search index is written behind (search-backlog.ts): a change row names what its write
  -- changes in the index, and search_indexed is the last change the index has taken.
  ALTER TABLE changes ADD COLUMN index_remove TEXT;
  ALTER TABLE changes ADD COLUMN index_add TEXT;
  INSERT INTO meta (key, value) VALUES ('search_indexed', (SELECT coalesce(max(seq), 0) FROM changes));
  `,
  `
  -- The status counts move to sqlite_sequence, whose page every commit writes anyway (the change
  -- outbox's AUTOINCREMENT): in a table of their own they cost every commit that changed a status
  -- one more WAL page. A row named 'status:…' names no table, so AUTOINCREMENT never reads it.
  -- status_counts stays, unused, for a rollback to the release before.
  INSERT INTO sqlite_sequence (name, seq) SELECT 'status:' || status, n FROM status_counts;
  `,
  photoFileChunks,
  storeFields,
  WEBHOOKS_MIGRATION,
  API_KEYS_MIGRATION,
  searchTextMigration,
  filterKeys,
  `
  -- Who made each change: the key's name, 'anonymous' without one, 'cli' for the command line.
  ALTER TABLE changes ADD COLUMN actor TEXT NOT NULL DEFAULT 'anonymous';
  `,
  TRASH_MIGRATION,
  gtinKeys,
  compatibilityFoldMigration,
  HISTORY_MIGRATION,
  tagKeys,
  nameOrderKeys,
  WEBHOOK_RESPONSES_MIGRATION,
  HISTORY_KINDS_MIGRATION,
  STOCK_MIGRATION,
  RESERVATIONS_MIGRATION,
  STOCK_EVENTS_MIGRATION,
  ledgerChainMigration,
  webhookEventsAndMainTime,
  saleWrites,
  NO_INSERT_TRIGGER_MIGRATION,
  CATEGORY_NAME_BOUNDS_MIGRATION,
  THRESHOLD_TRIGGER_MIGRATION,
  mainLevelMigration
]

/**
 * Migration 28: what each webhook attempt sent (webhook-store.ts), and a time for `main`, which the
 * stock's migration made with 0 (listed as 1970): the stock part's first set-up, as near as the
 * file tells: the earliest of this migration's time and what stock has recorded since (a movement,
 * another location, a reservation), none of which can predate it. A new catalogue runs every
 * migration at once: its main is as old as it is.
 */
function webhookEventsAndMainTime (db: Database.Database): void {
  if (db.prepare("SELECT 1 FROM pragma_table_info('webhook_deliveries') WHERE name = 'event'").get() === undefined) db.exec(WEBHOOK_EVENTS_MIGRATION)
  db.prepare(`UPDATE locations SET created_at = min(@now,
    coalesce((SELECT min(at) FROM stock_movements), @now),
    coalesce((SELECT min(created_at) FROM locations WHERE name <> 'main'), @now),
    coalesce((SELECT min(created_at) FROM reservations), @now))
  WHERE name = 'main' AND created_at = 0`).run({ now: Date.now() })
}

/**
 * Migration 29: what a sale writes beyond a PATCH, made smaller. New Idempotency-Keys are appended
 * (key-book.ts), and the stock filters' indexes follow the plant's state rather than its count
 * (stock-migration.ts). One pass over the tracked plants and three index builds.
 */
function saleWrites (db: Database.Database, progress: (message: string) => void): void {
  const tracked = db.prepare('SELECT count(*) FROM plants WHERE available IS NOT NULL').pluck().get() as number
  if (tracked > 100_000) progress(`migration 29: the stock filters' indexes over ${tracked} tracked plants`)
  db.exec(RECENT_KEYS_MIGRATION)
  stockStateMigration(db)
}

/** Migration 5 fills the name key for every plant already there, in batches, saying how far it got. */
function findingPlants (db: Database.Database, progress: (message: string) => void): void {
  db.exec(`
  -- The lower-cased name (JavaScript's toLowerCase, computed by the writer): sort=name walks this
  -- index, and q searches its trigrams, so both engines order and match the same strings.
  ALTER TABLE plants ADD COLUMN name_key TEXT NOT NULL DEFAULT '';
  -- The number of plants of each status, kept by every write in its transaction: the inventory reads three rows.
  CREATE TABLE status_counts (status TEXT PRIMARY KEY, n INTEGER NOT NULL) STRICT, WITHOUT ROWID;
  INSERT INTO status_counts (status, n) VALUES ('available', 0), ('pending', 0), ('sold', 0);
  UPDATE status_counts SET n = (SELECT count(*) FROM plants p WHERE p.status = status_counts.status);
  `)
  const total = (db.prepare('SELECT count(*) AS n FROM plants').get() as { n: number }).n
  db.function('js_lower', { deterministic: true }, (name: unknown) => nameKey(String(name)))
  const batch = db.prepare('UPDATE plants SET name_key = js_lower(name) WHERE id IN (SELECT id FROM plants WHERE id > ? ORDER BY id LIMIT 50000) RETURNING id')
  let done = 0
  let after = 0
  for (;;) {
    const ids = batch.pluck().all(after) as number[]
    if (ids.length === 0) break
    after = Math.max(...ids)
    done += ids.length
    if (total > 50_000) progress(`migration 5: name keys ${done} of ${total} plants`)
  }
  if (total > 50_000) progress('migration 5: indexing names for sort=name and q')
  db.exec(`
  CREATE INDEX plants_name ON plants (name_key, id);
  -- Trigrams of the name key, case-sensitive because the key is already lower-cased: a term's
  -- trigrams, all required, find a superset of the names holding it, which instr() then narrows
  -- (the writer keeps the index in step with plants). detail='none' keeps no positions (a write
  -- costs less, and phrases are not needed for that), and automerge 16 merges segments less often:
  -- the index had halved the rate of creates; with both it costs about a tenth.
  CREATE VIRTUAL TABLE plants_fts USING fts5(name_key, content='plants', content_rowid='id', tokenize='trigram case_sensitive 1', detail='none');
  INSERT INTO plants_fts (plants_fts) VALUES ('rebuild');
  INSERT INTO plants_fts (plants_fts, rank) VALUES ('automerge', 16);
  `)
}

/**
 * Migration 9 stores each photo file's bytes as chunks (photo-writes.ts says why) and its
 * size beside its name, so a HEAD, a 304 or a chunk reads nothing else of it. Each file is read
 * once and split (a SQL split would read the whole BLOB once per chunk).
 */
function photoFileChunks (db: Database.Database, progress: (message: string) => void): void {
  db.exec(`
  CREATE TABLE photo_file_chunks (
    name TEXT NOT NULL,
    n INTEGER NOT NULL,
    bytes BLOB NOT NULL,
    PRIMARY KEY (name, n)
  ) STRICT;
  ALTER TABLE photo_files ADD COLUMN size INTEGER NOT NULL DEFAULT 0;
  `)
  const names = db.prepare('SELECT name FROM photo_files ORDER BY name').pluck().all() as string[]
  const bytesOf = db.prepare<[string], Buffer>('SELECT bytes FROM photo_files WHERE name = ?').pluck()
  const setSize = db.prepare('UPDATE photo_files SET size = ? WHERE name = ?')
  const insert = db.prepare('INSERT INTO photo_file_chunks (name, n, bytes) VALUES (?, ?, ?)')
  names.forEach((name, i) => {
    const bytes = bytesOf.get(name)!
    setSize.run(bytes.length, name)
    chunksOf(bytes).forEach((chunk, n) => insert.run(name, n, chunk))
    if (names.length > 1000 && (i + 1) % 1000 === 0) progress(`migration 9: photo files ${i + 1} of ${names.length} in chunks`)
  })
  db.exec('ALTER TABLE photo_files DROP COLUMN bytes')
}

/**
 * Migration 10: the store fields. Nullable columns, so adding them rewrites no row; the
 * indexes are built once each (SQLite reads the table once an index). Plants keep the times their
 * rows have always held (created_at and updated_at date from the first release). Records already
 * in the feed and in Idempotency-Key answers gain the new members, so each keeps the record's one shape.
 */
function storeFields (db: Database.Database, progress: (message: string) => void): void {
  const total = (db.prepare('SELECT count(*) AS n FROM plants').get() as { n: number }).n
  const say = (message: string): void => { if (total > 50_000) progress(`migration 10: ${message} (${total} plants)`) }
  db.exec(`
  ALTER TABLE plants ADD COLUMN description TEXT;
  -- Integer cents: no binary float ever holds a price.
  ALTER TABLE plants ADD COLUMN price INTEGER;
  ALTER TABLE plants ADD COLUMN sku TEXT;
  ALTER TABLE plants ADD COLUMN barcode TEXT;
  `)
  say('indexing SKUs and barcodes')
  db.exec(`
  -- One plant a SKU, ignoring case; the writer checks first to name the holder, this settles it.
  CREATE UNIQUE INDEX plants_sku ON plants (lower(sku)) WHERE sku IS NOT NULL;
  CREATE INDEX plants_barcode ON plants (barcode) WHERE barcode IS NOT NULL;
  `)
  say('indexing prices and update times for sort=price and sort=updated')
  db.exec(`
  -- sort=price: unpriced plants order after every price (catalogue/query.ts UNPRICED; list-query.ts writes the same expression).
  CREATE INDEX plants_price ON plants (coalesce(price, ${UNPRICED}), id);
  CREATE INDEX plants_updated ON plants (updated_at, id);
  `)
  say('adding the new members to the records in the feed')
  const members = (at: string, created: string): string =>
    `',"description":null,"price":null,"sku":null,"barcode":null,"createdAt":"' || ${iso(created)} || '","updatedAt":"' || ${iso(at)} || '"}'`
  db.exec(`
  UPDATE changes SET plant = substr(plant, 1, length(plant) - 1) || ${members('at', 'coalesce((SELECT created_at FROM plants WHERE id = plant_id), at)')} WHERE plant IS NOT NULL;
  UPDATE idempotency_keys SET response = substr(response, 1, length(response) - 1) ||
    ${members('coalesce((SELECT updated_at FROM plants WHERE id = plant_id), created_at)', 'coalesce((SELECT created_at FROM plants WHERE id = plant_id), created_at)')};
  `)
}

/**
 * Category and tag filters ignore the case of A–Z (catalogue/query.ts filterKey, which SQLite's
 * lower() matches): the category index by its key replaces the one by its value, and tag rows gain
 * an index by key. Index builds only (each reads its table once), said on a large catalogue.
 */
function filterKeys (db: Database.Database, progress: (message: string) => void): void {
  const total = db.prepare('SELECT count(*) FROM plants').pluck().get() as number
  if (total > 50_000) progress(`migration: indexing categories and tags ignoring case (${total} plants)`)
  db.exec(`
  CREATE INDEX plants_category_key ON plants (lower(category), id);
  DROP INDEX plants_category;
  CREATE INDEX plant_tags_key ON plant_tags (lower(tag), plant_id);
  `)
}

/**
 * barcode= finds a GTIN at any length (catalogue/price-sku-barcode.ts gtinKey): the barcode index by its
 * GTIN-14 key (zeros on the left; list-query.ts GTIN_KEY writes the same expression) replaces the
 * one by the code as written. An index build only (one read of the table), said on a large catalogue.
 */
function gtinKeys (db: Database.Database, progress: (message: string) => void): void {
  const total = db.prepare('SELECT count(*) FROM plants').pluck().get() as number
  if (total > 50_000) progress(`migration: indexing barcodes as GTIN-14 (${total} plants)`)
  db.exec(`
  CREATE INDEX plants_gtin ON plants (substr('0000000000000' || barcode, -14)) WHERE barcode IS NOT NULL;
  DROP INDEX plants_barcode;
  `)
  if (total > 50_000) progress('migration: barcodes indexed')
}

/**
 * A cheaper layout for the tag rows: plant_tags becomes one B-tree keyed by the tag's key
 * (catalogue/query.ts filterKey, which SQLite's lower() matches) instead of a table by tag and an
 * index plant_tags_key by key sorted almost the same way, which cost a PUT a fifth of its WAL bytes.
 * `tag` stays in the primary key: a plant may hold two tags of one key from before such tags were
 * refused. One copy in the new key's order (the old key index gives it), said on a large catalogue.
 */
function tagKeys (db: Database.Database, progress: (message: string) => void): void {
  const step = MIGRATIONS.indexOf(tagKeys) + 1
  const total = db.prepare('SELECT count(*) FROM plants').pluck().get() as number
  const say = (message: string): void => { if (total > 50_000) progress(`migration ${step}: ${message} (${total} plants)`) }
  say('keying the tag rows by the tag ignoring case')
  db.exec(`
  CREATE TABLE plant_tags_by_key (
    tag_key TEXT NOT NULL,
    plant_id INTEGER NOT NULL,
    tag TEXT NOT NULL,
    PRIMARY KEY (tag_key, plant_id, tag)
  ) STRICT, WITHOUT ROWID;
  INSERT INTO plant_tags_by_key (tag_key, plant_id, tag) SELECT lower(tag), plant_id, tag FROM plant_tags ORDER BY lower(tag), plant_id, tag;
  `)
  say('dropping the tag rows by tag and their key index')
  db.exec(`
  DROP TABLE plant_tags;
  ALTER TABLE plant_tags_by_key RENAME TO plant_tags;
  `)
  say('tags keyed')
}

/**
 * sort=name reads names as people do (catalogue/name-order.ts: accents and case folded, numbers by
 * value): every plant gains its order key, computed in JavaScript as every write computes it, in
 * batches with a progress line on a large catalogue; the name index then follows the new key.
 * name_key stays, for q (the search index and its backlog are built from it).
 */
function nameOrderKeys (db: Database.Database, progress: (message: string) => void): void {
  const step = MIGRATIONS.indexOf(nameOrderKeys) + 1
  const total = db.prepare('SELECT count(*) FROM plants').pluck().get() as number
  const say = (message: string): void => { if (total > 50_000) progress(`migration ${step}: ${message}`) }
  db.exec("ALTER TABLE plants ADD COLUMN name_order_key TEXT NOT NULL DEFAULT ''")
  db.function('js_name_order_key', { deterministic: true }, (name: unknown) => nameOrderKey(name as string))
  const fill = db.prepare('UPDATE plants SET name_order_key = js_name_order_key(name) WHERE id > ? AND id <= ?')
  inIdBatches(db, (after, last) => fill.run(after, last), (done) => say(`name order keys ${done} of ${total} plants`))
  say('indexing names for sort=name')
  db.exec(`
  DROP INDEX plants_name;
  CREATE INDEX plants_name ON plants (name_order_key, id);
  `)
}

/** SQL for epoch milliseconds as RFC 3339 UTC with milliseconds (as Date.toISOString writes them). */
const iso = (ms: string): string => `strftime('%Y-%m-%dT%H:%M:%fZ', (${ms}) / 1000.0, 'unixepoch')`

/** The user_version the store fields' migration brings a file to (tests build the catalogue before it). */
export const STORE_FIELDS_VERSION = MIGRATIONS.indexOf(storeFields) + 1
/** The user_version the GTIN keys' migration brings a file to. */
export const GTIN_KEYS_VERSION = MIGRATIONS.indexOf(gtinKeys) + 1
/** The user_version before the migration that folds compatibility forms in the search texts. */
export const COMPATIBILITY_FOLD_VERSION = MIGRATIONS.indexOf(compatibilityFoldMigration)
/** The user_version before the migration that keys the tag rows by the tag's key. */
export const TAG_KEYS_VERSION = MIGRATIONS.indexOf(tagKeys)
/** The user_version before the migration that orders names by their order keys. */
export const NAME_ORDER_VERSION = MIGRATIONS.indexOf(nameOrderKeys)
/** The user_version before the migration that keeps receivers' answers with webhook attempts. */
export const WEBHOOK_RESPONSES_VERSION = MIGRATIONS.indexOf(WEBHOOK_RESPONSES_MIGRATION)
/** The user_version before the migration that gives reverts and restores history kinds of their own. */
export const HISTORY_KINDS_VERSION = MIGRATIONS.indexOf(HISTORY_KINDS_MIGRATION)
/** The user_version before stock (totals on the plant, locations, levels, the ledger). */
export const STOCK_VERSION = MIGRATIONS.indexOf(STOCK_MIGRATION)
/** The user_version before the ledger became a chain per plant (migration 27, stock-ledger.ts). */
export const LEDGER_CHAIN_VERSION = MIGRATIONS.indexOf(ledgerChainMigration)
/** The user_version before migration 29: new Idempotency-Keys appended to recent_keys (key-book.ts), the stock filters' indexes over stock_state. */
export const SALE_WRITES_VERSION = MIGRATIONS.indexOf(saleWrites)
/** The user_version before the migration that takes the trigger off a plant's INSERT (stock-migration.ts). */
export const NO_INSERT_TRIGGER_VERSION = MIGRATIONS.indexOf(NO_INSERT_TRIGGER_MIGRATION)
/** The user_version before the migration that keeps what each webhook attempt sent and gives main a time. */
export const MAIN_TIME_VERSION = MIGRATIONS.indexOf(webhookEventsAndMainTime)
/** The user_version before the migration that keeps each category's name order bounds (category-name-bounds.ts). */
export const CATEGORY_NAME_BOUNDS_VERSION = MIGRATIONS.indexOf(CATEGORY_NAME_BOUNDS_MIGRATION)
/** The user_version before the migration that leaves the stock state of a movement's plant to the movement (stock-migration.ts). */
export const THRESHOLD_TRIGGER_VERSION = MIGRATIONS.indexOf(THRESHOLD_TRIGGER_MIGRATION)
/** The user_version before the migration that keeps main's level on the plant's row (stock-migration.ts mainLevelMigration). */
export const MAIN_LEVEL_VERSION = MIGRATIONS.indexOf(mainLevelMigration)
/** The user_version before the search texts' migration (accents, word starts). */
export const SEARCH_TEXT_VERSION = MIGRATIONS.indexOf(searchTextMigration)

/** Applies the pending migrations (up to `upTo`: tests build an older catalogue with it). */
export function migrate (db: Database.Database, progress: (message: string) => void = () => {}, upTo = MIGRATIONS.length): void {
  // BEGIN IMMEDIATE takes the write lock first, so processes starting together apply each step once.
  for (;;) {
    const step = db.transaction(() => {
      const current = db.pragma('user_version', { simple: true }) as number
      if (current >= upTo) return false
      const migration = MIGRATIONS[current]
      if (typeof migration === 'string') db.exec(migration)
      else migration(db, progress)
      db.pragma(`user_version = ${current + 1}`)
      return true
    })
    if (!step.immediate()) return
  }
}
