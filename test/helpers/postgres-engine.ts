import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { openPostgresStore } from '../../src/store/postgres/postgres-plant-store.js'
import type { Engine } from './engines.js'

// PostgreSQL runs when TEST_DATABASE_URL names a database the tests may fill (.ci/run makes a fresh one).
// Each store gets a schema of its own, chosen through the connection's search_path and dropped on
// close, so tests never see each other's plants and need no database-wide cleanup.

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

export const postgresEngine: Engine = {
  name: 'postgres',
  skip: TEST_DATABASE_URL ? false : 'TEST_DATABASE_URL is not set, so the PostgreSQL engine is not tested (.ci/run sets it to a fresh database)',
  open: async (options = {}) => {
    const scratch = await freshSchema()
    const store = await openPostgresStore({
      connectionString: scratch.url,
      feedRetentionMs: options.feedRetentionMs ?? 7 * DAY,
      historyRetentionMs: options.historyRetentionMs,
      now: options.now
    })
    const close = store.close.bind(store)
    let closing: Promise<void> | undefined
    store.close = () => (closing ??= close().then(() => scratch.drop()))
    return store
  }
}
