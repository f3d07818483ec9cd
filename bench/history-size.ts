import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { HISTORY_FIELDS } from '../src/catalogue/history.js'
import type { PlantStore } from '../src/store/plant-store.js'
import { openPostgresStore } from '../src/store/postgres/postgres-plant-store.js'
import { openSqliteStore } from '../src/store/sqlite/sqlite-plant-store.js'
import { plantFor } from './plants.js'

// What the plants' history costs on disk (the target: at most 300 bytes a version beyond the changed
// values): PLANTS plants created through the store (a first version listing their fields), then
// given VERSIONS - 1 more versions each, a status change at a time (a till's sale and its undoing),
// PLANTS writes at once a round as a shop's traffic would group them. The history's bytes (table and
// indexes: SQLite's dbstat, PostgreSQL's pg_total_relation_size) less the bytes of the changed values
// themselves (each before and after as JSON), over the number of versions.
//
//   node --import tsx bench/history-size.ts [PLANTS] [VERSIONS]              # SQLite, in a folder of its own
//   DATABASE_URL=postgres://… node --import tsx bench/history-size.ts …      # PostgreSQL, in a database of its own

const plants = Number(process.argv[2] ?? 10_000)
const versions = Number(process.argv[3] ?? 5)
const STATUSES = ['available', 'pending', 'sold']
const CHUNK = 500

async function fill (store: PlantStore): Promise<void> {
  for (let from = 0; from < plants; from += CHUNK) {
    await Promise.all(Array.from({ length: Math.min(CHUNK, plants - from) }, (_, k) => store.create(plantFor(from + k))))
  }
  for (let v = 2; v <= versions; v++) {
    for (let from = 1; from <= plants; from += CHUNK) {
      await Promise.all(Array.from({ length: Math.min(CHUNK, plants + 1 - from) }, (_, k) => store.patch(from + k, { status: STATUSES[(from + k + v) % 3] as 'sold' })))
    }
  }
}

/** The bytes of the changed values alone (JSON of each before and after), over every row's changes. */
function valueBytes (changes: Iterable<string>): { rows: number, bytes: number, json: number } {
  let rows = 0
  let bytes = 0
  let json = 0
  for (const text of changes) {
    rows++
    json += Buffer.byteLength(text)
    const parsed = JSON.parse(text) as Record<string, [unknown, unknown]>
    for (const field of HISTORY_FIELDS) {
      const pair = parsed[field]
      if (pair) bytes += Buffer.byteLength(JSON.stringify(pair[0])) + Buffer.byteLength(JSON.stringify(pair[1]))
    }
  }
  return { rows, bytes, json }
}

function report (engine: string, total: number, values: { rows: number, bytes: number, json: number }, parts: string): void {
  const per = (total - values.bytes) / values.rows
  process.stdout.write(`${engine}: ${plants} plants × ${versions} versions = ${values.rows} rows; history ${total} bytes (${parts}); ` +
    `changed values ${values.bytes} bytes (changes JSON ${values.json} bytes); beyond the changed values ${per.toFixed(1)} bytes a version\n`)
}

async function sqlite (): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'history-size-'))
  try {
    const store = openSqliteStore({ dataDir: dir, feedRetentionMs: 7 * 86_400_000 })
    await fill(store)
    await store.close()
    const db = new Database(join(dir, 'catalogue.db'))
    db.pragma('wal_checkpoint(TRUNCATE)')
    const sizes = db.prepare<[], { name: string, bytes: number }>("SELECT name, sum(pgsize) AS bytes FROM dbstat WHERE name IN ('history', 'history_plant') GROUP BY name").all()
    const values = valueBytes(db.prepare<[], string>('SELECT changes FROM history').pluck().iterate())
    db.close()
    report('sqlite', sizes.reduce((n, s) => n + s.bytes, 0), values, sizes.map((s) => `${s.name} ${s.bytes}`).join(', '))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

async function postgres (url: string): Promise<void> {
  const name = `history_size_${process.pid}`
  const admin = new pg.Client({ connectionString: url })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  const own = new URL(url)
  own.pathname = `/${name}`
  try {
    const store = await openPostgresStore({ connectionString: own.toString(), feedRetentionMs: 7 * 86_400_000 })
    await fill(store)
    await store.close()
    const client = new pg.Client({ connectionString: own.toString() })
    await client.connect()
    await client.query('VACUUM ANALYZE history')
    const { rows: [s] } = await client.query<{ total: string, heap: string, plant: string, at: string }>(
      "SELECT pg_total_relation_size('history') AS total, pg_relation_size('history') AS heap, pg_relation_size('history_plant') AS plant, pg_relation_size('history_at') AS at")
    const { rows } = await client.query<{ changes: string }>('SELECT changes FROM history')
    await client.end()
    report('postgres', Number(s.total), valueBytes(rows.map((r) => r.changes)), `heap ${s.heap}, history_plant ${s.plant}, history_at (BRIN) ${s.at}`)
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.end()
  }
}

const url = process.env.DATABASE_URL
await (url ? postgres(url) : sqlite())
