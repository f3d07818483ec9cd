import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { commitSizes } from '../../src/store/commit-sizes.js'
import { migrate } from '../../src/store/postgres/migrate.js'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import type { Engine } from './engines.js'

// PostgreSQL runs when TEST_DATABASE_URL names a database the tests may fill (.ci/run makes a fresh one).
// Each store gets a schema of its own, chosen through the connection's search_path, so tests never see
// each other's plants, in this file or in another running beside it. Creating and migrating a schema
// costs far more than emptying one: a closed store's schema is emptied (TRUNCATE … RESTART IDENTITY,
// then the rows the migrations wrote put back) and handed to the next store this process opens, and
// the schemas left are dropped when the process ends.

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined
const DAY = 86_400_000

/** Runs one statement on a short-lived connection (no pool is left to keep the test process alive). */
export async function adminQuery<R extends pg.QueryResultRow = any> (sql: string, values: unknown[] = [], url = TEST_DATABASE_URL): Promise<R[]> {
  if (!url) throw new Error('TEST_DATABASE_URL is not set')
  const client = new pg.Client({ connectionString: url })
  client.on('error', () => {})
  await client.connect()
  try {
    return (await client.query<R>(sql, values)).rows
  } finally {
    await client.end()
  }
}

/** `url` with its connections' search_path set to `schema`. */
export function withSearchPath (url: string, schema: string): string {
  const u = new URL(url)
  u.searchParams.set('options', `-c search_path=${schema}`)
  return u.toString()
}

export interface Scratch { url: string, name: string, drop (): Promise<void> }

/** A new, empty schema in the test database, and a URL whose connections use it. */
export async function freshSchema (): Promise<Scratch> {
  const name = `t_${randomBytes(6).toString('hex')}`
  await adminQuery(`CREATE SCHEMA ${name}`)
  return {
    url: withSearchPath(TEST_DATABASE_URL!, name),
    name,
    drop: async () => { await adminQuery(`DROP SCHEMA IF EXISTS ${name} CASCADE`) }
  }
}

/** A new, empty database next to the test database (for what a schema cannot show, like first-time migrations). */
export async function freshDatabase (): Promise<Scratch> {
  const name = `t_${randomBytes(6).toString('hex')}`
  await adminQuery(`CREATE DATABASE ${name}`)
  const url = new URL(TEST_DATABASE_URL!)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    name,
    drop: async () => { await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
  }
}

/** What a freshly migrated schema holds: its shape (to tell a schema a test altered) and the rows the migrations wrote. */
interface Migrated { shape: string, tables: string[], sequences: string[], rows: Map<string, unknown[]> }

/** A digest of the columns, indexes and triggers of the schema named `schema` (an SQL text). */
const shapeOf = (schema: string): string => `md5(
  coalesce((SELECT string_agg(c.relname || '.' || a.attname || ':' || a.atttypid::regtype::text || ':' || a.attnotnull, ',' ORDER BY c.relname, a.attname)
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = ${schema} AND a.attnum > 0 AND NOT a.attisdropped), '') ||
  coalesce((SELECT string_agg(indexdef, ',' ORDER BY indexdef) FROM pg_indexes WHERE schemaname = ${schema}), '') ||
  coalesce((SELECT string_agg(t.tgname, ',' ORDER BY t.tgname) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = ${schema}), ''))`

let migrated: Promise<Migrated> | undefined
/** Schemas emptied and ready for the next store. */
const idle: Scratch[] = []
/** Every schema this process made for stores, dropped when it ends. */
const made = new Set<Scratch>()

/** Reads what the migrations left in `name`, the first time a schema is migrated. */
async function readMigrated (name: string): Promise<Migrated> {
  const [{ shape }] = await adminQuery<{ shape: string }>(`SELECT ${shapeOf('$1')} AS shape`, [name])
  // Tables that others reference come after them, so that deleting in this order breaks no foreign key.
  const found = (await adminQuery<{ t: string }>("SELECT tablename AS t FROM pg_tables WHERE schemaname = $1 AND tablename <> 'schema_migrations' ORDER BY 1", [name])).map((r) => r.t)
  const references = await adminQuery<{ from: string, to: string }>(`SELECT c.conrelid::regclass::text AS from, c.confrelid::regclass::text AS to
    FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1 AND c.contype = 'f'`, [name])
  const unqualified = (table: string): string => table.split('.').pop()!
  const tables: string[] = []
  const visit = (table: string): void => {
    if (tables.includes(table)) return
    for (const r of references) if (unqualified(r.to) === table && unqualified(r.from) !== table) visit(unqualified(r.from))
    tables.push(table)
  }
  found.forEach(visit)
  const sequences = (await adminQuery<{ s: string }>('SELECT sequencename AS s FROM pg_sequences WHERE schemaname = $1', [name])).map((r) => r.s)
  const rows = new Map<string, unknown[]>()
  for (const table of tables) {
    const list = (await adminQuery<{ rows: unknown[] | null }>(`SELECT json_agg(t) AS rows FROM ${name}.${table} t`))[0].rows
    if (list) rows.set(table, list)
  }
  return { shape, tables, sequences, rows }
}

/** A migrated schema that no store uses: an emptied one, else a new one. */
async function migratedSchema (): Promise<Scratch> {
  const reused = idle.pop()
  if (reused) return reused
  const scratch = await freshSchema()
  made.add(scratch)
  await migrate({ connectionString: scratch.url }, undefined, () => {})
  migrated ??= readMigrated(scratch.name)
  await migrated
  return scratch
}

/**
 * Empties `scratch` back to what the migrations left, for the next store, in one round trip (DELETE:
 * TRUNCATE of a dozen tables takes ten times as long); drops it instead when a test changed its shape.
 */
async function release (scratch: Scratch): Promise<void> {
  const { shape, tables, sequences, rows } = await migrated!
  const s = scratch.name
  const refill = [...rows].map(([table, list]) =>
    `INSERT INTO ${s}.${table} SELECT * FROM json_populate_recordset(NULL::${s}.${table}, ${pg.escapeLiteral(JSON.stringify(list))});`)
  try {
    await adminQuery(`SET lock_timeout = '5s'; DO $reset$ BEGIN
      IF ${shapeOf(`'${s}'`)} <> '${shape}' THEN RAISE EXCEPTION 'the schema was altered'; END IF;
      ${tables.map((t) => `DELETE FROM ${s}.${t};`).join(' ')}
      ${sequences.map((q) => `ALTER SEQUENCE ${s}.${q} RESTART;`).join(' ')}
      ${refill.join(' ')}
    END $reset$`)
    idle.push(scratch)
  } catch {
    made.delete(scratch)
    await scratch.drop()
  }
}

// The schemas left are dropped once the tests are done (beforeExit comes when nothing is left to run).
let dropped = false
process.on('beforeExit', () => {
  if (dropped || made.size === 0) return
  dropped = true
  idle.length = 0
  void Promise.all([...made].map((s) => s.drop().catch(() => {})))
})

export const postgresEngine: Engine = {
  name: 'postgres',
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set, so the PostgreSQL engine is not tested (.ci/run sets it to a fresh database)',
  open: async (options = {}) => {
    const scratch = await migratedSchema()
    const store = await openPostgresStore({
      connectionString: scratch.url,
      feedRetentionMs: options.feedRetentionMs ?? 7 * DAY,
      trashRetentionMs: options.trashRetentionMs,
      historyRetentionMs: options.historyRetentionMs,
      now: options.now,
      // As the SQLite engine's query timeout here: the production deadline (1.5 s, for a server that
      // froze) is not what these tests ask about, and a loaded machine running the suite's shards
      // side by side took 200 concurrent creates past it (plants-create, keys-scopes answered 503).
      operationTimeoutMs: 10_000
    })
    const close = store.close.bind(store)
    let closing: Promise<void> | undefined
    store.close = () => (closing ??= close().then(() => release(scratch)))
    return store
  }
}

/** Runs `writes` (started in one turn of the event loop: one group) and counts the commits and statements they took. */
export async function inOneGroup<T> (writes: () => Array<Promise<T>>): Promise<{ settled: Array<PromiseSettledResult<T>>, commits: number, statements: number }> {
  const query = pg.Client.prototype.query
  let statements = 0
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    // Pooled clients only: the change watcher's own connection (LISTEN, its first poll) is set up
    // in the background after the store opens and, on a loaded machine, can land inside a group.
    if (typeof (this as Partial<pg.PoolClient>).release === 'function') statements++
    return (query as (...a: unknown[]) => unknown).apply(this, args)
  } as typeof query
  const before = commitSizes.postgres.count
  try {
    const settled = await Promise.allSettled(writes())
    return { settled, commits: commitSizes.postgres.count - before, statements }
  } finally {
    pg.Client.prototype.query = query
  }
}
