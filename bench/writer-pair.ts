import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import type Database from 'better-sqlite3'
import type { GroupResult, WriteOp } from '../src/store/sqlite/writes.js'

// node --import tsx bench/writer-pair.ts [--ops=sale,patch] [--groups=N] [--sync=OFF|FULL] DIR_A DIR_B
//
// The SQLite writer's CPU a write, checkout against checkout, in one process: each DIR's own
// batchWriter (its writes.ts and migrations, imported from its src/) on a file of its own holding
// 1,000 plants stocked by a count each, sent the same kind of groups of 32 writes, the two
// checkouts' groups alternating, process.cpuUsage() around each group. On a shared machine the
// load moves from minute to minute by more than a change of a few µs; alternating group by group
// puts both checkouts under the same load, and two copies of one commit differ here by under 1 µs
// a write (bench/results/issue-49-stock.md, stop 61). The writer thread's share of a request: the
// event loop's is what bench/profile-pair.ts measures.
//
//   sale:  a movement of -1 with a fresh Idempotency-Key each, as the bench's tills send them
//   patch: PATCH {status} of the same plants, the sale's reference (bench/stock.ts)
//
// Each DIR is a checkout with its dependencies (a worktree of another commit, and `.`). The first
// groups of each are not counted (the statements' first runs, the JIT). synchronous=OFF by default:
// the fsync is no CPU of the writer's, and without it the run takes a fraction of the time.

type Write = (batch: WriteOp[]) => GroupResult
interface Checkout {
  dir: string
  connect: (filename: string) => Database.Database
  batchWriter: (db: Database.Database, idempotencyTtlMs: number) => Write
  migrate: (db: Database.Database, progress: (message: string) => void) => void
}

const args = process.argv.slice(2)
const option = (name: string): string | undefined => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const ops = (option('ops') ?? 'sale,patch').split(',')
const groups = Number(option('groups') ?? 2000)
const sync = option('sync') ?? 'OFF'
const dirs = args.filter((a) => !a.startsWith('--')).map((d) => resolve(d))
if (dirs.length !== 2 || ops.some((op) => op !== 'sale' && op !== 'patch')) throw new Error('usage: writer-pair.ts [--ops=sale,patch] [--groups=N] [--sync=OFF|FULL] DIR_A DIR_B')
const PLANTS = 1000
const GROUP = 32
const UNCOUNTED = 100
const DAY = 86_400_000

async function load (dir: string): Promise<Checkout> {
  const writes = await import(join(dir, 'src/store/sqlite/writes.ts')) as Pick<Checkout, 'connect' | 'batchWriter'>
  const { migrate } = await import(join(dir, 'src/store/sqlite/migrations.ts')) as Pick<Checkout, 'migrate'>
  return { dir, connect: writes.connect, batchWriter: writes.batchWriter, migrate }
}

let clock = Date.now()
const checked = (result: GroupResult): void => {
  if ('failure' in result) throw new Error(result.failure.message)
  const refused = result.outcomes.find((o) => !o.ok)
  if (refused) throw new Error(`a write was refused: ${JSON.stringify(refused)}`)
}

/** A file of the checkout's own, its plants created and stocked by its own writer. */
function stocked (checkout: Checkout, folder: string): Write {
  const db = checkout.connect(join(folder, 'catalogue.db'))
  checkout.migrate(db, () => {})
  db.pragma(`synchronous = ${sync}`)
  const write = checkout.batchWriter(db, DAY)
  for (let i = 0; i < PLANTS; i += 100) {
    checked(write(Array.from({ length: 100 }, (_, j): WriteOp => ({
      kind: 'create',
      fields: { name: `Plant ${i + j}`, category: 'indoor', tags: ['shade', 'pet safe'], status: 'available', description: 'A plant of the bench', price: '12.50', sku: null, barcode: null, lowStockAt: 5 },
      now: clock++,
      actor: 'bench'
    }))))
  }
  for (let i = 0; i < PLANTS; i += 100) {
    checked(write(Array.from({ length: 100 }, (_, j): WriteOp => ({ kind: 'stock-move', id: i + j + 1, input: { set: 1_000_000, reason: 'count' }, now: clock++, actor: 'bench' }))))
  }
  return write
}

let keys = 0
let statuses = 0
/** A group as the event loop would post it to the writer thread (a copy: postMessage's structured clone). */
function group (op: string): WriteOp[] {
  return structuredClone(Array.from({ length: GROUP }, (): WriteOp => {
    const id = 1 + Math.floor(Math.random() * PLANTS)
    return op === 'sale'
      ? { kind: 'stock-move', id, input: { delta: -1, reason: 'sale' }, idempotency: { key: `sale-${process.pid}-${keys++}`, requestHash: `request-${keys % 7}` }, now: clock++, actor: 'till' }
      : { kind: 'patch', id, patch: { status: statuses++ % 2 === 0 ? 'pending' : 'available' }, now: clock++, actor: 'till' }
  }))
}

const checkouts = await Promise.all(dirs.map(load))
const folders = dirs.map(() => mkdtempSync(join(tmpdir(), 'writer-pair-')))
try {
  const writers = checkouts.map((c, i) => stocked(c, folders[i]))
  const line = (cells: string[]): void => { process.stdout.write(`| ${cells.join(' | ')} |\n`) }
  line(['op', ...dirs.map((d) => `µs a write, ${d}`), 'second − first'])
  line(['---', ...dirs.map(() => '---:'), '---:'])
  for (const op of ops) {
    const cpu = [0, 0]
    for (let g = 0; g < 2 * (groups + UNCOUNTED); g++) {
      const which = g % 2
      const batch = group(op)
      const before = process.cpuUsage()
      const result = writers[which](batch)
      const used = process.cpuUsage(before)
      checked(result)
      if (g >= 2 * UNCOUNTED) cpu[which] += used.user + used.system
    }
    const each = cpu.map((c) => c / (groups * GROUP))
    line([op, ...each.map((c) => c.toFixed(1)), (each[1] - each[0]).toFixed(1)])
  }
} finally {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true })
}
