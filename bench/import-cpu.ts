import { spawn, spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { parse } from 'csv-parse/sync'
import type { PlantStore } from '../src/store/plant-store.js'
import { plantFor } from './plants.js'

// node --import tsx bench/import-cpu.ts [--rows=N] [--rounds=R] [--cpu-prof] [--batch-size=N] [DIR]
//
// What `plants import` of a file that updates every plant costs, in CPU rather than wall time (issue
// 27 wants 100,000 such rows at ≥ 10,000 rows/s): DIR (a checkout with node_modules, default `.`)
// is built with tsc, a catalogue of N plants (default 20,000) is preloaded through its store and
// exported afresh each round; each round gives every row the next status, as bench/bulk.ts does, and runs the
// CLI from dist/ on core 0, as the bench does. Beside wall time and rows/s it prints the CPU of the
// whole process and of its main thread alone (from /proc, polled every 10 ms: a reading or two may
// be missed at exit), per row; with --cpu-prof, each round's profile (main thread) is kept and the
// place of its files printed, for bench/profile-summary.ts. With DATABASE_URL, a database of its own
// on that server (created and dropped) instead of a data folder.

const args = process.argv.slice(2)
const option = (name: string): string | undefined => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const rows = Number(option('rows') ?? 20_000)
const rounds = Number(option('rounds') ?? 3)
const batchSize = option('batch-size')
const cpuProf = args.includes('--cpu-prof')
const dir = resolve(args.find((a) => !a.startsWith('--')) ?? '.')
const databaseUrl = process.env.DATABASE_URL
const log = (line: string): void => { process.stderr.write(`${line}\n`) }

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100
/** CPU time so far in µs (user + system): the whole process, or its main thread alone. */
function cpuUs (pid: number, mainThread = false): number | undefined {
  try {
    const fields = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 1e6 / CLOCK_TICKS
  } catch {
    return undefined
  }
}

async function preload (where: string): Promise<void> {
  const store: PlantStore = databaseUrl
    ? await (await import(join(dir, 'src/store/postgres/postgres-plant-store.ts')) as typeof import('../src/store/postgres/postgres-plant-store.js'))
      .openPostgresStore({ connectionString: where, feedRetentionMs: 7 * 86_400_000 })
    : (await import(join(dir, 'src/store/sqlite/sqlite-plant-store.ts')) as typeof import('../src/store/sqlite/sqlite-plant-store.js'))
        .openSqliteStore({ dataDir: where, feedRetentionMs: 7 * 86_400_000 })
  const CHUNK = databaseUrl ? 500 : 10_000
  for (let from = 0; from < rows; from += CHUNK) {
    await Promise.all(Array.from({ length: Math.min(CHUNK, rows - from) }, (_, k) => store.create(plantFor(from + k))))
  }
  await store.close()
  if (!databaseUrl) {
    const { default: Database } = await import('better-sqlite3')
    const db = new Database(join(where, 'catalogue.db'))
    db.exec("INSERT INTO plants_fts (plants_fts) VALUES ('optimize')")
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.close()
  }
}

async function freshPostgres (name: string, drop = false): Promise<string> {
  const { default: pg } = await import('pg')
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  if (!drop) await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(databaseUrl!)
  url.pathname = `/${name}`
  return url.toString()
}

interface Run { code: number | null, stdout: string, stderr: string, ms: number, cpuUs: number, mainUs: number, pg?: PostgresCpu }

/** PostgreSQL's CPU during a run, in µs: the backends of the run's own connections, and the whole server. */
interface PostgresCpu { backendsUs: number, serverUs: number }

/** Every PostgreSQL process's CPU so far (µs), plus what the postmaster's exited children used: the server's total. */
function postgresServerUs (): number {
  let total = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    let stat: string
    try { stat = readFileSync(`/proc/${pid}/stat`, 'utf8') } catch { continue }
    if (!stat.startsWith(`${pid} (postgres) `)) continue
    const fields = stat.split(') ')[1].split(' ')
    total += Number(fields[11]) + Number(fields[12])
    // The postmaster (its parent is no postgres process) has reaped every backend that exited: cutime + cstime.
    const parent = fields[1]
    let parentStat = ''
    try { parentStat = readFileSync(`/proc/${parent}/stat`, 'utf8') } catch {}
    if (!parentStat.startsWith(`${parent} (postgres) `)) total += Number(fields[13]) + Number(fields[14])
  }
  return total * 1e6 / CLOCK_TICKS
}

/**
 * Watches the backends of `database` (pg_stat_activity, asked every 100 ms: the run's connections, and
 * any autovacuum worker on that database) and their CPU (/proc, every 10 ms; the last 10 ms of a
 * backend that exits may be missed).
 */
async function watchBackends (database: string): Promise<() => Promise<PostgresCpu>> {
  const { default: pg } = await import('pg')
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  const serverBefore = postgresServerUs()
  const seen = new Map<number, number>()
  let asking = false
  const ask = setInterval(() => {
    if (asking) return
    asking = true
    admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [database]).then(({ rows }) => {
      for (const { pid } of rows) if (!seen.has(pid)) seen.set(pid, 0)
    }, () => {}).finally(() => { asking = false })
  }, 100)
  const read = setInterval(() => {
    for (const pid of seen.keys()) seen.set(pid, cpuUs(pid) ?? seen.get(pid)!)
  }, 10)
  return async () => {
    clearInterval(ask)
    clearInterval(read)
    await admin.end()
    return { backendsUs: [...seen.values()].reduce((a, b) => a + b, 0), serverUs: postgresServerUs() - serverBefore }
  }
}

async function cli (argv: string[], env: Record<string, string>, nodeArgs: string[] = []): Promise<Run> {
  const backends = databaseUrl ? await watchBackends(pgName) : undefined
  const run = await cliRun(argv, env, nodeArgs)
  return backends ? { ...run, pg: await backends() } : run
}

function cliRun (argv: string[], env: Record<string, string>, nodeArgs: string[] = []): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = performance.now()
    const child = spawn('taskset', ['-c', '0', process.execPath, ...nodeArgs, join(dir, 'dist/src/cli/plants.js'), ...argv],
      { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    let cpu = 0
    let main = 0
    const poll = setInterval(() => {
      cpu = cpuUs(child.pid!) ?? cpu
      main = cpuUs(child.pid!, true) ?? main
    }, 10)
    child.stdout.on('data', (c: Buffer) => { stdout += c.toString() })
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString() })
    child.on('error', reject)
    child.on('close', (code) => {
      clearInterval(poll)
      resolve({ code, stdout, stderr, ms: performance.now() - started, cpuUs: cpu, mainUs: main })
    })
  })
}

const build = spawnSync(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: dir, encoding: 'utf8' })
if (build.status !== 0) log(`warning: tsc reported errors:\n${build.stdout.trim().split('\n').slice(0, 5).join('\n')}`)
// The PostgreSQL migrations are read from beside their compiled module (scripts/build.mjs copies them
// too): without them a fresh checkout's store never becomes ready, and the CLI's first read times out.
cpSync(join(dir, 'src/store/postgres/migrations'), join(dir, 'dist/src/store/postgres/migrations'), { recursive: true })
const tmp = mkdtempSync(join(tmpdir(), 'import-cpu-'))
const pgName = `plant_import_cpu_${process.pid}`
const where = databaseUrl ? await freshPostgres(pgName) : join(tmp, 'data')
const env: Record<string, string> = databaseUrl ? { DATABASE_URL: where } : { DATA_DIR: where }
try {
  log(`preloading ${rows} plants (${databaseUrl ? 'PostgreSQL' : 'SQLite'})…`)
  await preload(where)
  const exported = join(tmp, 'export.csv')
  const STATUSES = ['available', 'pending', 'sold']
  const csvCell = (cell: string): string => /[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell
  const file = join(tmp, 'import.csv')
  const profiles = join(tmp, 'profiles')
  mkdirSync(profiles)
  console.log(`import of ${rows} updating rows, ${dir}, load ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`)
  console.log(`round    wall s    rows/s   CPU µs/row (all threads)   main thread µs/row${databaseUrl ? '   PG backends µs/row   PG server µs/row' : ''}`)
  for (let r = 0; r < rounds; r++) {
    // Exported afresh each round: a row of a plant changed since its export (by the round before) is refused.
    const out = await cli(['export', '--output', exported], env)
    if (out.code !== 0) throw new Error(`plants export failed: ${out.stderr}`)
    const header = readFileSync(exported, 'utf8').split('\n', 1)[0].split(',')
    const table = parse(readFileSync(exported), { from_line: 2 }) as string[][]
    const status = header.indexOf('status')
    for (const row of table) row[status] = STATUSES[(STATUSES.indexOf(row[status]) + 1) % STATUSES.length]
    writeFileSync(file, [header.join(','), ...table.map((row) => row.map(csvCell).join(','))].join('\n') + '\n')
    const run = await cli(['import', file, '--quiet', ...(batchSize ? ['--batch-size', batchSize] : [])], env,
      cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : [])
    const updated = Number(/updated\s+([\d,]+)/.exec(run.stdout)?.[1].replace(/,/g, '') ?? NaN)
    if (run.code !== 0 || updated !== rows) throw new Error(`import exited ${run.code}, updated ${updated}:\n${run.stdout}${run.stderr.slice(0, 2000)}`)
    console.log(`${String(r + 1).padStart(5)} ${(run.ms / 1000).toFixed(2).padStart(9)} ${Math.round(rows / (run.ms / 1000)).toString().padStart(9)} ` +
      `${(run.cpuUs / rows).toFixed(1).padStart(26)} ${(run.mainUs / rows).toFixed(1).padStart(20)}` +
      (run.pg ? `${(run.pg.backendsUs / rows).toFixed(1).padStart(21)} ${(run.pg.serverUs / rows).toFixed(1).padStart(18)}` : ''))
  }
  console.log(`load after ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`)
  if (cpuProf) for (const f of readdirSync(profiles)) console.log(`profile ${join(profiles, f)}`)
} finally {
  if (databaseUrl) await freshPostgres(pgName, true)
}
