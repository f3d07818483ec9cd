import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PlantFields } from '../src/catalogue/plant.js'
import { openSqliteStore } from '../src/store/sqlite/sqlite-plant-store.js'
import { batchWriter, connect, type WriteOp } from '../src/store/sqlite/writes.js'
import { barcodeFor, hasBarcode, plantFor, skuFor } from './plants.js'

// What each index costs a write on SQLite (the brief: "measure which, try the cheaper layout"):
// a catalogue of PLANTS plants is made once; then, for the full schema and for the schema with each
// index of the written tables dropped in turn, a copy of it takes WRITES PUTs (a whole new body for
// a random plant, keeping its SKU and barcode, as the bench's PUTs do) and WRITES POSTs, 16 a
// transaction as the group commit makes them under load, through the writer's own code
// (writes.ts batchWriter) with its pragmas, in this process.
//
// The figure that matters is the WAL's bytes per write: every page a write dirties is written
// whole to the WAL at its commit (and fsynced), and a secondary index's entry lands on a random page
// of its own. It does not depend on the machine's load. The CPU per write is printed beside it
// (noisier), so an index's share can be read both ways.
//
//   node --import tsx bench/index-cost.ts [PLANTS] [WRITES]

const plants = Number(process.argv[2] ?? 100_000)
const writes = Number(process.argv[3] ?? 20_000)
const BATCH = 16
const TABLES = ['plants', 'plant_tags', 'changes', 'history']

const dir = mkdtempSync(join(tmpdir(), 'index-cost-'))
const source = join(dir, 'catalogue.db')

async function fill (): Promise<void> {
  const store = openSqliteStore({ dataDir: dir, feedRetentionMs: 7 * 86_400_000, progress: () => {} })
  const CHUNK = 10_000
  for (let from = 0; from < plants; from += CHUNK) {
    await Promise.all(Array.from({ length: Math.min(CHUNK, plants - from) }, (_, k) => store.create(plantFor(from + k))))
  }
  await store.close()
}

/** The body of a PUT of plant `id` (plant n's fields, the plant's own SKU and barcode), as bench/load.ts sends it. */
function updated (id: number, n: number): PlantFields {
  const body = plantFor(n)
  return { ...body, sku: body.sku === null ? null : skuFor(id), barcode: hasBarcode(id - 1) ? barcodeFor(id - 1) : null, lowStockAt: null }
}

interface Cost { walBytes: number, cpuUs: number }

/** WRITES writes of one kind on a fresh copy of the catalogue without `drop` (an index name, or none). */
function measure (drop: string | undefined, kind: 'put' | 'post'): Cost {
  const file = join(dir, 'copy.db')
  rmSync(`${file}-wal`, { force: true })
  copyFileSync(source, file)
  const db = connect(file)
  db.pragma('mmap_size = 0')
  db.pragma('cache_size = -8192')
  // No checkpoint during the run: the WAL's size at the end is every page the writes wrote.
  db.pragma('wal_autocheckpoint = 0')
  if (drop !== undefined) db.exec(`DROP INDEX ${drop}`)
  db.pragma('wal_checkpoint(TRUNCATE)')
  const write = batchWriter(db, 86_400_000)
  const job = Math.random().toString(36).slice(2, 8)
  const op = (n: number): WriteOp => {
    const now = Date.now()
    if (kind === 'post') {
      const body = plantFor(n)
      return { kind: 'create', fields: { ...body, sku: body.sku === null ? null : `NEW-${job}-${n}`, lowStockAt: null }, now, actor: 'bench' }
    }
    const id = 1 + Math.floor(Math.random() * plants)
    return { kind: 'update', id, fields: updated(id, n), now, actor: 'bench' }
  }
  const cpu = process.cpuUsage()
  for (let n = 0; n < writes; n += BATCH) {
    const result = write(Array.from({ length: BATCH }, (_, k) => op(n + k)))
    if ('failure' in result) throw new Error(`${kind} without ${drop}: ${result.failure.message}`)
    const refused = result.outcomes.find((o) => !o.ok)
    if (refused !== undefined) throw new Error(`${kind} without ${drop}: refused ${JSON.stringify(refused)}`)
  }
  const used = process.cpuUsage(cpu)
  const walBytes = statSync(`${file}-wal`).size
  db.close()
  return { walBytes: walBytes / writes, cpuUs: (used.user + used.system) / writes }
}

await fill()
const probe = connect(source)
const indexes = probe.prepare(`SELECT name, tbl_name AS tbl FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL AND tbl_name IN (${TABLES.map(() => '?').join(', ')}) ORDER BY tbl_name, name`)
  .all(...TABLES) as Array<{ name: string, tbl: string }>
probe.close()

const r = (x: number): string => String(Math.round(x))
const rows: string[] = []
const full = { put: measure(undefined, 'put'), post: measure(undefined, 'post') }
rows.push(`| every index | ${r(full.put.walBytes)} | ${r(full.put.cpuUs)} | ${r(full.post.walBytes)} | ${r(full.post.cpuUs)} |`)
for (const { name, tbl } of indexes) {
  const put = measure(name, 'put')
  const post = measure(name, 'post')
  rows.push(`| without ${name} (${tbl}) | ${r(full.put.walBytes - put.walBytes)} | ${r(full.put.cpuUs - put.cpuUs)} | ${r(full.post.walBytes - post.walBytes)} | ${r(full.post.cpuUs - post.cpuUs)} |`)
}
process.stdout.write([
  `SQLite, ${plants.toLocaleString('en')} plants, ${writes.toLocaleString('en')} writes of each kind, ${BATCH} a transaction.`,
  'First row: per write; the others: what the index costs (the full schema less the schema without it).', '',
  '| schema | PUT: WAL bytes | PUT: µs CPU | POST: WAL bytes | POST: µs CPU |', '|---|--:|--:|--:|--:|', ...rows, ''
].join('\n'))
rmSync(dir, { recursive: true, force: true })
