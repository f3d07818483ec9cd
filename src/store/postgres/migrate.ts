import { readdirSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import pg from 'pg'

// Numbered SQL files next to this module (copied beside the compiled one by `npm run build`).
// Append a new file for each change; never edit one that has shipped.
const DIR = fileURLToPath(new URL('./migrations/', import.meta.url))
const FILE = /^(\d+)_[\w-]+\.sql$/

/** Any constant works; it only has to differ from other applications' advisory locks on the same database. */
const MIGRATION_LOCK = 7_023_118_001

export interface Migration { version: number, name: string, sql: string }

export function loadMigrations (dir = DIR): Migration[] {
  const migrations = readdirSync(dir)
    .filter((name) => FILE.test(name))
    .map((name) => ({ version: Number(FILE.exec(name)![1]), name, sql: readFileSync(`${dir}/${name}`, 'utf8') }))
    .sort((a, b) => a.version - b.version)
  if (migrations.length === 0) throw new Error(`no migrations found in ${dir}`)
  migrations.forEach((m, i) => {
    if (i > 0 && m.version === migrations[i - 1].version) throw new Error(`two migrations numbered ${m.version}`)
  })
  return migrations
}

/**
 * Applies the migrations not yet recorded in schema_migrations, each in its own transaction.
 * A session advisory lock makes instances that start together take turns: the first applies,
 * the others wait, then find nothing left to do. The lock goes with the connection if we die.
 */
export async function migrate (config: pg.ClientConfig, migrations = loadMigrations(), progress: (message: string) => void = (m) => { process.stderr.write(`${m}\n`) }): Promise<number[]> {
  // No statement timeout here: waiting for another instance's migration, or a long one, is legitimate.
  const client = new pg.Client({ ...config, statement_timeout: undefined, idle_in_transaction_session_timeout: undefined })
  client.on('error', () => {}) // a broken connection fails the query in progress; that is reported
  await client.connect()
  const applied: number[] = []
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK])
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version INTEGER PRIMARY KEY,
      name TEXT NOT NULL,
      applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
    )`)
    const { rows } = await client.query<{ version: number }>('SELECT version FROM schema_migrations')
    const done = new Set(rows.map((r) => r.version))
    // On a large catalogue a migration that builds an index takes a while: say which, and when it is done.
    const plants = migrations.some((m) => !done.has(m.version)) ? await plantCount(client) : 0
    for (const m of migrations) {
      if (done.has(m.version)) continue
      const started = Date.now()
      if (plants > LARGE) progress(`migration ${m.name}: applying on ${plants} plants`)
      await client.query('BEGIN')
      try {
        await client.query(m.sql)
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name])
        await client.query('COMMIT')
        if (plants > LARGE) progress(`migration ${m.name}: done in ${((Date.now() - started) / 1000).toFixed(1)} s`)
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {})
        if (err instanceof Error) err.message = extensionHint(err) ?? `migration ${m.name} failed: ${err.message}`
        throw err
      }
      applied.push(m.version)
    }
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK])
  } finally {
    await client.end().catch(() => {})
  }
  return applied
}

/** Above this many plants a migration says when it starts and ends. */
const LARGE = 50_000

/** The plants a catalogue holds (0 before the first migration); counted only when a migration is pending. */
async function plantCount (client: pg.Client): Promise<number> {
  const { rows: [table] } = await client.query<{ found: boolean }>("SELECT to_regclass('plants') IS NOT NULL AS found")
  if (!table.found) return 0
  const { rows: [{ n }] } = await client.query<{ n: string }>('SELECT count(*) AS n FROM plants')
  return Number(n)
}

/** An extension that cannot be created says what to install or grant, in one line. */
function extensionHint (err: Error): string | undefined {
  const code = (err as { code?: unknown }).code
  const extension = /extension "?(\w+)"?/.exec(err.message)?.[1]
  if (extension === undefined) return undefined
  if (code === '42501') {
    return `PostgreSQL refused to create the extension ${extension} (${err.message}): have a superuser run ` +
      `CREATE EXTENSION ${extension}; in this database, or grant this role CREATE on it (PostgreSQL 13+ lets it create trusted extensions)`
  }
  if (code === '58P01' || code === '0A000' || /not available|could not open extension control file/.test(err.message)) {
    return `PostgreSQL has no extension ${extension} (${err.message}): install the PostgreSQL contrib package (postgresql-contrib, or postgresql-15-contrib on Debian)`
  }
  return undefined
}
