import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { closeSync, cpSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { get as httpGet } from 'node:http'
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import type { PlantStore } from '../src/store/plant-store.js'
import { BATCH_PLANTS, FINDING_OPS, SERVICE_ONLY, type Figures, type Job, type Op } from './load.js'
import { plantFor, seedPlantFor, storeFieldsIn } from './plants.js'
import { measurePhotos, PHOTO_OPS, photoTable, type PhotoFigures } from './photos.js'
import { BULK_OPS, bulkTable, measureBatches, measureImport, type BulkFigures } from './bulk.js'
import { loopProbeReader, type PhaseContext } from './phase.js'
import { charged, cpuMicros } from './process-cpu.js'
import { measureWebhooks, WEBHOOK_OPS, webhookTable } from './webhooks.js'
import { HISTORY_OPS, historyTable, measureHistory } from './history.js'
import { KEY_OPS, keyTable, measureKeys } from './keys.js'
import { holdTable, measureReadsHold, READS_HOLD_OPS } from './reads-hold.js'
import { measureReservations, RESERVATION_OPS, reservationTable } from './stock-reservations.js'
import { measureStock, STOCK_OPS, stockParts, stockTable } from './stock.js'
import { freePort } from './free-port.js'

// npm run bench [-- --quick] [--tsx] [--rounds=N] [--seconds=N] [--big=N] [--ops=get,list,put,post,search,search-rare,sorted,inventory,patch,batch,
//                search-short,search-accent,sku,barcode,sort-price,sort-updated,count,upload,photo,batches,import,webhooks,history-1,history-1000,keys,reservations]
//                [--import-rows=N] [--cpu-prof] [--seed-only] [--hold-sizes=100000,1000000]
//                [--keep-catalogues=DIR]  (SQLite: the phases' catalogues are made in DIR and kept; one already
//                                          there is used again as it is, writes of earlier runs included)
//                [--baseline=DIR]  (another checkout, e.g. a git worktree of an older commit: measured as one
//                                   more target on the small catalogue, for a before/after ratio in one run)
//
// One run measures the reference servers (the Map ceiling, the Fastify floor, the durable ceilings)
// and the real service on a small and a large catalogue, interleaved round by round, so every figure
// is compared with figures taken under the same noise. Servers run on one core, the load generator
// on another. bench/README.md says what each target and ratio means.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const args = process.argv.slice(2)
const flag = (name: string): boolean => args.includes(`--${name}`)
const option = (name: string, fallback: number): number => {
  const given = args.find((a) => a.startsWith(`--${name}=`))
  return given ? Number(given.split('=')[1]) : fallback
}
const quick = flag('quick')
const isPhotoOp = (op: string): boolean => (PHOTO_OPS as readonly string[]).includes(op)
// Phases of their own, each on services of its own: photos, batches and import, webhooks, history, keys and reads that hold.
const PHASE_OPS: readonly string[] = [...PHOTO_OPS, ...BULK_OPS, ...WEBHOOK_OPS, ...HISTORY_OPS, ...KEY_OPS, ...READS_HOLD_OPS, ...RESERVATION_OPS, ...STOCK_OPS]
const opsGiven = args.find((a) => a.startsWith('--ops='))?.split('=')[1].split(',') ?? ['get', 'list', 'put', 'post', ...SERVICE_ONLY, ...PHASE_OPS]
const settings = {
  warmSeconds: option('warm', quick ? 1 : 3),
  seconds: option('seconds', quick ? 2 : 5),
  rounds: option('rounds', quick ? 1 : 5),
  small: option('small', 1000),
  // --quick shrinks the large catalogue so the whole run takes a few minutes.
  big: option('big', quick ? 20_000 : 1_000_000),
  connections: option('connections', 32),
  ops: opsGiven.filter((op) => !PHASE_OPS.includes(op)) as Op[],
  // upload and photo are one phase of their own (bench/photos.ts), on a service of their own.
  photos: opsGiven.some(isPhotoOp),
  // The bulk phase (bench/bulk.ts): batches against single POSTs, and an import's rows/s.
  batches: opsGiven.includes('batches'),
  importRows: opsGiven.includes('import') ? option('import-rows', quick ? 10_000 : 100_000) : 0,
  // The webhooks phase (bench/webhooks.ts).
  webhooks: opsGiven.includes('webhooks'),
  // The history phase (bench/history.ts): history-1 and history-1000 are measured together.
  history: opsGiven.some((op) => (HISTORY_OPS as readonly string[]).includes(op)),
  // The keys phase (bench/keys.ts): GET with a read key of the database against an API_KEYS key.
  keys: opsGiven.includes('keys'),
  // The reservations phase (bench/stock-reservations.ts): a checkout's CPU against a sale's.
  reservations: opsGiven.includes('reservations'),
  // The reads-hold phase (bench/reads-hold.ts), on catalogues of these sizes.
  hold: opsGiven.includes('reads-hold'),
  // The stock phase (bench/stock.ts): `stock` runs every part, stock-sale, stock-hot and stock-count one each.
  stock: stockParts(opsGiven),
  stockBig: option('stock-big', quick ? 20_000 : 1_000_000),
  holdSizes: (args.find((a) => a.startsWith('--hold-sizes='))?.split('=')[1].split(',').map(Number)) ?? (quick ? [20_000] : [100_000, 1_000_000]),
  runtime: flag('tsx') ? 'tsx' : 'dist',
  cpuProf: flag('cpu-prof'),
  // Every target preloaded and written with the seed's fields alone: the other shape of a before/after
  // against a baseline from before the store fields (which is never sent them).
  seedOnly: flag('seed-only'),
  baseline: args.find((a) => a.startsWith('--baseline='))?.split('=')[1],
  keepCatalogues: args.find((a) => a.startsWith('--keep-catalogues='))?.split('=')[1]
}
// The two catalogues are told apart by size, so equal sizes would overwrite each other's figures.
if (settings.big <= settings.small) throw new Error(`--big (${settings.big}) must be larger than --small (${settings.small})`)
const databaseUrl = process.env.DATABASE_URL
const engine = databaseUrl ? 'postgres' : 'sqlite'

const pinned = availableParallelism() >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0
const onCore = (core: number, command: string[]): [string, string[]] =>
  pinned ? ['taskset', ['-c', String(core), ...command]] : [command[0], command.slice(1)]
const SERVER_CORE = 0
const LOAD_CORE = 1

const log = (line: string): void => { process.stderr.write(`${line}\n`) }

/** Resolves with the status of GET url, or rejects when nothing answers. */
function probe (url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpGet(url, { agent: false }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)) })
    req.on('error', reject)
  })
}

async function waitForAnswer (url: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const until = performance.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${url}: the server exited with ${child.exitCode}`)
    try {
      const status = await probe(url)
      if (status === 200) return
      throw new Error(`${url} answered ${status}`)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ECONNREFUSED') throw err
    }
    if (performance.now() > until) throw new Error(`${url}: no answer within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 2))
  }
}

/** `seedOnly`: the target knows only the seed's fields (a --baseline from before the store fields): its write bodies leave the store fields out. */
interface Target { name: string, url: string, child: ChildProcess, idMax: number, coldStartMs?: number, seedOnly?: boolean, hasHistory?: boolean }

async function startServer (name: string, command: string[], env: Record<string, string>, logFile: string, idMax: number,
  core: number | 'all' = SERVER_CORE): Promise<Target> {
  const port = await freePort()
  const out = openSync(logFile, 'a')
  const [bin, argv] = core === 'all' ? [command[0], command.slice(1)] : onCore(core, command)
  const started = performance.now()
  const child = spawn(bin, argv, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: String(port), ...env },
    stdio: ['ignore', out, out]
  })
  closeSync(out)
  const url = `http://127.0.0.1:${port}`
  // Cold start: from spawning the process to the first answered request for a stored plant.
  try {
    await waitForAnswer(`${url}/v3/plant/1`, child, 30_000)
  } catch (err) {
    await stop(child)
    throw new Error(`${name} did not start (see ${logFile}): ${(err as Error).message}`)
  }
  return { name, url, child, idMax, coldStartMs: Math.round(performance.now() - started) }
}

type Memory = { peakMb: number, rssMb: number, peakAnonMb: number, peakFileMb: number }

/**
 * Memory of the services. The kernel keeps a peak only for the whole RSS (VmHWM), which counts
 * SQLite's file pages the kernel can drop; the process's own memory is RssAnon, sampled here
 * every 100 ms through the whole run so its peak is not missed (the memory target judges RssAnon).
 */
function memorySampler (): { watch: (child: ChildProcess) => void, read: (child: ChildProcess) => Memory, stop: () => void } {
  const peaks = new Map<ChildProcess, { anon: number, file: number }>()
  const status = (child: ChildProcess): string => readFileSync(`/proc/${child.pid}/status`, 'utf8')
  const kb = (text: string, field: string): number => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(text)?.[1] ?? NaN)
  const sample = (): void => {
    for (const [child, peak] of peaks) {
      if (child.exitCode !== null) continue
      try {
        const text = status(child)
        peak.anon = Math.max(peak.anon, kb(text, 'RssAnon'))
        peak.file = Math.max(peak.file, kb(text, 'RssFile'))
      } catch { /* the process is exiting */ }
    }
  }
  const timer = setInterval(sample, 100)
  timer.unref()
  return {
    // taskset execs node in place, so the pid is the server's own.
    watch: (child) => { peaks.set(child, { anon: 0, file: 0 }) },
    read: (child) => {
      sample()
      const text = status(child)
      const peak = peaks.get(child) ?? { anon: NaN, file: NaN }
      const mb = (k: number): number => Math.round(k / 1024)
      return { peakMb: mb(kb(text, 'VmHWM')), rssMb: mb(kb(text, 'VmRSS')), peakAnonMb: mb(peak.anon), peakFileMb: mb(peak.file) }
    },
    stop: () => { clearInterval(timer) }
  }
}

async function stop (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  // A server still waiting on the load generator's idle connections past its grace would keep the
  // run (and its memory) alive after the results are written; it is measured, not tested, here.
  const late = setTimeout(() => child.kill('SIGKILL'), 15_000)
  await exited
  clearTimeout(late)
}

async function openBenchStore (where: string, root = ROOT): Promise<PlantStore> {
  if (databaseUrl) {
    // The root's own store: a --baseline's migrations are its own, in a database of its own.
    const { openPostgresStore } = await import(join(root, 'src/store/postgres/postgres-plant-store.ts')) as typeof import('../src/store/postgres/postgres-plant-store.js')
    // A minute before a commit is called unavailable (1.5 s in the service): on a loaded machine a
    // group of the stock phase's movements (bench/stock.ts) took longer, when a group still wrote
    // its movements one after another.
    return openPostgresStore({ connectionString: where, feedRetentionMs: 7 * 86_400_000, operationTimeoutMs: 60_000 })
  }
  const { openSqliteStore } = await import(join(root, 'src/store/sqlite/sqlite-plant-store.ts')) as typeof import('../src/store/sqlite/sqlite-plant-store.js')
  return openSqliteStore({ dataDir: where, feedRetentionMs: 7 * 86_400_000 })
}

/**
 * A preload of 10,000 creates a commit leaves FTS5 in the middle of merging its large segments, and
 * automerge makes the next writes finish that work: the first thousands of random PUTs on a large
 * catalogue paid for it. A catalogue grown by the API's small commits has no such backlog; merging
 * it once here measures that steady state rather than the preload's wake.
 */
async function settleSearchIndex (file: string): Promise<void> {
  const { default: Database } = await import('better-sqlite3')
  const db = new Database(file)
  try {
    // A --baseline from before the search index has none to settle.
    const hasIndex = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'plants_fts'").get() !== undefined
    if (hasIndex) db.exec("INSERT INTO plants_fts (plants_fts) VALUES ('optimize')")
    db.pragma('wal_checkpoint(TRUNCATE)')
  } finally {
    db.close()
  }
}

/**
 * Fills a fresh catalogue through the store API; each chunk arrives together, so it shares one group
 * commit. `seedOnly`: the seed's fields alone, for a --baseline whose store has no others (or --seed-only).
 */
async function preload (where: string, count: number, root = ROOT, seedOnly = settings.seedOnly, fields?: (i: number) => object): Promise<number> {
  const store = await openBenchStore(where, root)
  const started = performance.now()
  // PostgreSQL's store gives a commit 1.5 s before it calls the storage unavailable: smaller chunks there.
  const CHUNK = databaseUrl ? 500 : 10_000
  for (let from = 0; from < count; from += CHUNK) {
    const creates: Array<Promise<unknown>> = []
    for (let i = from; i < Math.min(count, from + CHUNK); i++) creates.push(store.create(seedOnly ? seedPlantFor(i) : { ...plantFor(i), ...fields?.(i) }))
    await Promise.all(creates)
  }
  const seconds = (performance.now() - started) / 1000
  // The load generator's PUTs and lookups take plant i for id i + 1 (bench/plants.ts: a PUT keeps its plant's SKU).
  const last = await store.get(count)
  if (!seedOnly && (last?.name !== plantFor(count - 1).name || last.sku !== plantFor(count - 1).sku)) {
    throw new Error(`preload: plant ${count} is not the ${count}th body (${last?.name}): ids are not in creation order`)
  }
  await store.close()
  if (!databaseUrl) await settleSearchIndex(join(where, 'catalogue.db'))
  return Math.round(count / seconds)
}

/** A fresh PostgreSQL database per catalogue size, on the server DATABASE_URL names. */
async function freshPostgres (name: string): Promise<string> {
  const { default: pg } = await import('pg')
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(databaseUrl!)
  url.pathname = `/${name}`
  return url.toString()
}

async function dropPostgres (name: string): Promise<void> {
  const { default: pg } = await import('pg')
  const admin = new pg.Client({ connectionString: databaseUrl })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  await admin.end()
}

function startLoad (): { run: (job: Job) => Promise<Figures>, close: () => void } {
  const [bin, argv] = onCore(LOAD_CORE, [process.execPath, '--import', 'tsx', join(ROOT, 'bench/load.ts')])
  const child = spawn(bin, argv, { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
  return {
    run: (job) => new Promise((resolve, reject) => {
      child.once('message', (m: { ok: boolean, figures?: Figures, error?: string }) => {
        if (m.ok) resolve(m.figures!)
        else reject(new Error(m.error))
      })
      child.send(job)
    }),
    close: () => child.disconnect()
  }
}

/**
 * The photos phase: a service of its own on a fresh catalogue of the small size, NOT pinned (a
 * picture may use both cores, as it would in production; the load generator stays on core 1).
 */
async function photoPhase (tmp: string, load: ReturnType<typeof startLoad>, pgDatabases: string[]): Promise<PhotoFigures> {
  let env: Record<string, string>
  if (databaseUrl) {
    const name = `plant_bench_photos_${process.pid}`
    pgDatabases.push(name)
    env = { DATABASE_URL: await freshPostgres(name) }
  } else {
    env = { DATA_DIR: join(tmp, 'photos') }
  }
  await preload(env.DATABASE_URL ?? env.DATA_DIR, settings.small)
  const command = settings.runtime === 'dist' ? [process.execPath, 'dist/src/server.js'] : [process.execPath, '--import', 'tsx', 'src/server.ts']
  const t = await startServer('service@photos', command, { ...env, LOG_LEVEL: 'info', NODE_ENV: 'production' },
    join(tmp, 'service-photos.log'), settings.small, 'all')
  try {
    return await measurePhotos({
      url: t.url,
      pid: t.child.pid!,
      idMax: t.idMax,
      rounds: settings.rounds,
      seconds: settings.seconds,
      warmSeconds: settings.warmSeconds,
      connections: settings.connections,
      runLoad: load.run
    }, log)
  } finally {
    await stop(t.child)
  }
}

/** CPU per answer of every thread but the main one. */
const otherCpuUs = (f: Figures): number => (f.cpuUs ?? NaN) - (f.loopCpuUs ?? NaN)
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  const mid = s.length >> 1
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2
}
const round2 = (x: number): number => Math.round(x * 100) / 100

interface Judged { op: Op, small: { p99: number }, big: { p99: number }, scaling: { p99: number }, overBaseline?: { rps: number } }
/**
 * Finding and writes: each finding operation's p99 on the large catalogue at most 3× its p99 on
 * the small one (the median of per-round ratios), and POST and PUT with every store field at least
 * 0.8× the baseline's req/s (a baseline without store fields is sent the seed's fields alone).
 * Against a baseline from before history (139f5ea): POST, PUT and PATCH with history at least 0.85×
 * its req/s, the same rows judged against that bound.
 */
function findingAndWritesTable (summary: Judged[], baseline: Target | undefined): string[] {
  const finding = summary.filter((s) => (FINDING_OPS as Op[]).includes(s.op))
  const writes = summary.filter((s) => (s.op === 'put' || s.op === 'post' || s.op === 'patch') && s.overBaseline !== undefined)
  if (finding.length === 0 && writes.length === 0) return []
  // A baseline with the store fields but no history table is the "before" of history.
  const history = baseline !== undefined && !baseline.seedOnly && !baseline.hasHistory
  const bound = history ? 0.85 : 0.8
  // A round with no answers has no p99 (null): its ratio is 0 or NaN, and says nothing.
  const verdict = (ok: boolean, x: number): string => Number.isFinite(x) && x > 0 ? (ok ? 'met' : 'not met') : '-'
  const rows = [
    ...finding.map((s) => `| ${s.op} p99 ${settings.big}/${settings.small} | ≤ 3 | ${s.small.p99} → ${s.big.p99} ms | ${s.scaling.p99} | ${verdict(s.scaling.p99 <= 3, s.scaling.p99)} |`),
    ...writes.map((s) => `| ${s.op} req/s service/baseline${baseline?.seedOnly ? ' (baseline sent the seed\'s fields)' : ''} | ≥ ${bound} | | ${s.overBaseline!.rps} | ${verdict(s.overBaseline!.rps >= bound, s.overBaseline!.rps)} |`)
  ]
  return ['', `| finding and writes${history ? ' (with history)' : ''} | wanted | figures | ratio | |`, '|---|--:|--:|--:|---|', ...rows]
}

/**
 * Waits until the service has used under 5 % of a core for a second (at most a minute). Once
 * listening, it compiles every route's schemas in the background (src/http/schemas/lazy-schemas.ts
 * compileRest): seconds of CPU, on the core every server shares. Measured straight away, the first
 * operation's rounds paid for it, the service's CPU per request most of all.
 */
async function settle (child: ChildProcess): Promise<number> {
  const started = performance.now()
  let before = cpuMicros(child)
  while (performance.now() - started < 60_000) {
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const now = cpuMicros(child)
    if (now - before < 50_000) break
    before = now
  }
  return Math.round((performance.now() - started) / 1000)
}

/** The service's command line, with `nodeArgs` (e.g. a module to preload) before its script. */
const serviceCommandWith = (nodeArgs: string[]): string[] => settings.runtime === 'dist'
  ? [process.execPath, ...(settings.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(ROOT, 'bench/results/profiles')}`] : []), ...nodeArgs, 'dist/src/server.js']
  : [process.execPath, '--import', 'tsx', ...nodeArgs, 'src/server.ts']

/** The plants CLI's command line, from the same build as the service. */
const cliCommand = (args: string[]): string[] => settings.runtime === 'dist'
  ? [process.execPath, 'dist/src/cli/plants.js', ...args]
  : [process.execPath, '--import', 'tsx', 'src/cli/plants.ts', ...args]

/**
 * What the phases of issues 27 and 28 are given: fresh catalogues, services on the servers' core
 * with the event-loop probe preloaded (bench/loop-probe.mjs) and their memory sampled, the plants CLI.
 */
/** Marks a kept catalogue (--keep-catalogues) whose preload finished. */
const PRELOADED = 'preloaded'

function phaseContext (tmp: string, load: ReturnType<typeof startLoad>, memorySamples: ReturnType<typeof memorySampler>,
  pgDatabases: string[], targets: Target[]): PhaseContext {
  const safe = (name: string): string => name.replace(/[^a-z0-9]+/gi, '_')
  return {
    engine,
    rounds: settings.rounds,
    seconds: settings.seconds,
    warmSeconds: settings.warmSeconds,
    connections: settings.connections,
    small: settings.small,
    quick,
    runLoad: load.run,
    log,
    onLoadCore: () => {
      if (!pinned) return () => {}
      const all = `0-${availableParallelism() - 1}`
      spawnSync('taskset', ['-a', '-p', '-c', String(LOAD_CORE), String(process.pid)], { stdio: 'ignore' })
      return () => { spawnSync('taskset', ['-a', '-p', '-c', all, String(process.pid)], { stdio: 'ignore' }) }
    },
    catalogue: async (name, plants, fields) => {
      let env: Record<string, string>
      if (databaseUrl) {
        const db = `plant_bench_${safe(name)}_${process.pid}`
        pgDatabases.push(db)
        env = { DATABASE_URL: await freshPostgres(db) }
      } else {
        env = { DATA_DIR: settings.keepCatalogues !== undefined ? join(settings.keepCatalogues, `${safe(name)}-${plants}`) : join(tmp, safe(name)) }
        // Building 1,000,000 plants takes minutes: a kept one of this name and size is used again,
        // once its preload has finished (the mark); one left half-built is made again.
        if (settings.keepCatalogues !== undefined) {
          if (existsSync(join(env.DATA_DIR, PRELOADED))) {
            log(`using the kept catalogue ${env.DATA_DIR} for ${name}`)
            return env
          }
          rmSync(env.DATA_DIR, { recursive: true, force: true })
        }
      }
      log(`preloading ${plants} plants for ${name}…`)
      await preload(env.DATABASE_URL ?? env.DATA_DIR, plants, ROOT, settings.seedOnly, fields)
      if (env.DATA_DIR !== undefined) writeFileSync(join(env.DATA_DIR, PRELOADED), '')
      return env
    },
    openStore: async (catalogue) => await openBenchStore(catalogue.DATABASE_URL ?? catalogue.DATA_DIR),
    startService: async (name, catalogue, env = {}) => {
      const probeFile = join(tmp, `${safe(name)}.loop.json`)
      const t = await startServer(name, serviceCommandWith(['--import', join(ROOT, 'bench/loop-probe.mjs')]),
        { ...catalogue, ...env, LOG_LEVEL: 'info', NODE_ENV: 'production', LOOP_PROBE_FILE: probeFile }, join(tmp, `${safe(name)}.log`), settings.small)
      targets.push(t)
      memorySamples.watch(t.child)
      log(`${name}: cold start to the first answer ${t.coldStartMs} ms`)
      // As the other services: start-up's background compiles (up to a few hundred ms each, on the
      // event loop) are over before any warm-up or round, so the loop's delays measured are the phase's.
      log(`${name}: start-up's background work settled after ${await settle(t.child)} s`)
      const loopDelay = loopProbeReader(probeFile)
      return {
        name,
        url: t.url,
        child: t.child,
        loopDelay,
        memory: () => {
          const m = memorySamples.read(t.child)
          return { peakMb: m.peakMb, peakAnonMb: m.peakAnonMb }
        },
        stop: () => stop(t.child)
      }
    },
    cli: (args, catalogue) => new Promise((resolve, reject) => {
      const [bin, argv] = onCore(SERVER_CORE, cliCommand(args))
      const started = performance.now()
      const child = spawn(bin, argv, { cwd: ROOT, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...catalogue }, stdio: ['ignore', 'pipe', 'pipe'] })
      let stdout = ''
      let stderr = ''
      child.stdout.on('data', (c: Buffer) => { stdout += c.toString() })
      child.stderr.on('data', (c: Buffer) => { stderr += c.toString() })
      child.on('error', reject)
      child.on('close', (code) => resolve({ code, stdout, stderr, ms: Math.round(performance.now() - started) }))
    })
  }
}

/**
 * The reference servers and the services on the small and the large catalogue, measured on the
 * operations of --ops round by round: the tables and the figures the JSON keeps.
 */
async function measureTargets (tmp: string, load: ReturnType<typeof startLoad>, memorySamples: ReturnType<typeof memorySampler>,
  pgDatabases: string[], targets: Target[]): Promise<{ lines: string[], result: Record<string, unknown> }> {
  const sizes = [settings.small, settings.big]
  let baselineTarget: { command: string[], env: Record<string, string>, seedOnly: boolean, hasHistory: boolean } | undefined
  const serviceCommand = serviceCommandWith([])
  const preloadRate: Record<number, number> = {}
  const stores: Record<number, Record<string, string>> = {}
  // The durable ceiling gets its own catalogue of the small size, filled by the service's store (the same schema).
  let durableEnv: Record<string, string>
  if (databaseUrl) {
    const name = `plant_bench_durable_${process.pid}`
    pgDatabases.push(name)
    durableEnv = { DATABASE_URL: await freshPostgres(name) }
  } else {
    durableEnv = { DATA_DIR: join(tmp, 'durable') }
  }
  log(`preloading ${settings.small} plants for the durable ceiling…`)
  await preload(durableEnv.DATABASE_URL ?? durableEnv.DATA_DIR, settings.small)
  // On SQLite a second one commits in a writer thread, as the service does (WRITER=thread).
  const threadEnv = { DATA_DIR: join(tmp, 'durable-thread'), WRITER: 'thread' }
  if (!databaseUrl) await preload(threadEnv.DATA_DIR, settings.small)
  for (const size of sizes) {
    let env: Record<string, string>
    if (databaseUrl) {
      const name = `plant_bench_${size}_${process.pid}`
      pgDatabases.push(name)
      env = { DATABASE_URL: await freshPostgres(name) }
    } else {
      env = { DATA_DIR: join(tmp, `catalogue-${size}`) }
    }
    log(`preloading ${size} plants through the store…`)
    preloadRate[size] = await preload(env.DATABASE_URL ?? env.DATA_DIR, size)
    log(`  ${preloadRate[size]} plants/s`)
    stores[size] = env
  }

  if (settings.baseline) {
    const dir = settings.baseline
    const build = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: dir, encoding: 'utf8' })
    if (build.status !== 0) log(`warning: the baseline build reported errors:\n${build.stdout.trim().split('\n').slice(0, 5).join('\n')}`)
    // tsc leaves the PostgreSQL migrations (SQL files read beside their module at run time) behind.
    const migrations = 'src/store/postgres/migrations'
    if (databaseUrl && existsSync(join(dir, migrations))) cpSync(join(dir, migrations), join(dir, 'dist', migrations), { recursive: true })
    let env: Record<string, string>
    if (databaseUrl) {
      const name = `plant_bench_baseline_${process.pid}`
      pgDatabases.push(name)
      env = { DATABASE_URL: await freshPostgres(name) }
    } else {
      env = { DATA_DIR: join(tmp, 'baseline') }
    }
    // A baseline from before the store fields refuses them as unknown: it is preloaded and
    // written with the seed's fields alone (the service with every field, unless --seed-only).
    const seedOnly = settings.seedOnly || !storeFieldsIn(dir)
    log(`preloading ${settings.small} plants through the baseline's store${seedOnly ? ' (the seed\'s fields alone)' : ''}…`)
    await preload(env.DATABASE_URL ?? env.DATA_DIR, settings.small, dir, seedOnly)
    const profiled = settings.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${join(ROOT, 'bench/results/profiles')}`] : []
    baselineTarget = { command: [process.execPath, ...profiled, join(dir, 'dist/src/server.js')], env, seedOnly, hasHistory: existsSync(join(dir, 'src/plants/history-routes.ts')) }
  }

  targets.push(await startServer('ceiling', [process.execPath, '--import', 'tsx', 'bench/ceiling-server.ts'],
    { PRELOAD: String(settings.small) }, join(tmp, 'ceiling.log'), settings.small))
  targets.push(await startServer('floor', [process.execPath, '--import', 'tsx', 'bench/fastify-floor.ts'],
    { PRELOAD: String(settings.small) }, join(tmp, 'floor.log'), settings.small))
  targets.push(await startServer('durable', [process.execPath, '--import', 'tsx', 'bench/durable-ceiling.ts'],
    durableEnv, join(tmp, 'durable.log'), settings.small))
  if (!databaseUrl) {
    targets.push(await startServer('durable-thread', [process.execPath, '--import', 'tsx', 'bench/durable-ceiling.ts'],
      threadEnv, join(tmp, 'durable-thread.log'), settings.small))
  }
  for (const size of sizes) {
    // The generator's connections all come from one address but stand for as many clients: the
    // budget of expensive reads an address may have at once (READ_BUDGET, 4) is raised to match.
    const t = await startServer(`service@${size}`, serviceCommand, { ...stores[size], LOG_LEVEL: 'info', NODE_ENV: 'production', READ_BUDGET: String(settings.connections) },
      join(tmp, `service-${size}.log`), size)
    log(`${t.name}: cold start to the first answer ${t.coldStartMs} ms${settings.cpuProf ? ` (pid ${t.child.pid}, in its profile's name)` : ''}`)
    memorySamples.watch(t.child)
    targets.push(t)
  }
  if (baselineTarget) {
    const t = await startServer('baseline', baselineTarget.command, { ...baselineTarget.env, LOG_LEVEL: 'info', NODE_ENV: 'production' },
      join(tmp, 'baseline.log'), settings.small)
    log(`baseline: cold start to the first answer ${t.coldStartMs} ms${settings.cpuProf ? ` (pid ${t.child.pid}, in its profile's name)` : ''}`)
    memorySamples.watch(t.child)
    targets.push({ ...t, seedOnly: baselineTarget.seedOnly, hasHistory: baselineTarget.hasHistory })
  }
  for (const t of targets.filter((t) => t.name.startsWith('service@') || t.name === 'baseline')) {
    log(`${t.name}: start-up's background work settled after ${await settle(t.child)} s`)
  }

  const figures: Record<string, Record<string, Figures[]>> = {}
  for (const op of settings.ops) {
    figures[op] = {}
    // The ceiling, the floor and the baseline do not serve what only the service has: they are left out
    // of those (a baseline has had PATCH long enough that history's target sets the service's against it).
    const measured = SERVICE_ONLY.includes(op) ? targets.filter((t) => t.name.startsWith('service@') || (t.name === 'baseline' && op === 'patch')) : targets
    for (const t of targets) figures[op][t.name] = []
    for (const t of measured) {
      await load.run({ url: t.url, op, seconds: settings.warmSeconds, connections: settings.connections, idMax: t.idMax, seedOnly: settings.seedOnly || t.seedOnly })
    }
    for (let r = 0; r < settings.rounds; r++) {
      for (const t of measured) {
        const f = await charged(t.child, () => load.run({ url: t.url, op, seconds: settings.seconds, connections: settings.connections, idMax: t.idMax, seedOnly: settings.seedOnly || t.seedOnly }))
        figures[op][t.name].push(f)
        log(`${op.padEnd(4)} round ${r + 1} ${t.name.padEnd(16)} ${String(f.rps).padStart(6)} req/s  p50 ${f.p50} ms  p99 ${f.p99} ms  cpu ${f.cpuUs} µs/req` +
          (op === 'batch' ? `  (${f.rps * BATCH_PLANTS} plants/s)` : '') +
          (f.non2xx || f.errors ? `  non-2xx ${f.non2xx} errors ${f.errors}` : ''))
      }
    }
  }

  const byName = (name: string): Target | undefined => targets.find((t) => t.name === name)
  const [ceiling, floor, durable] = targets
  // Without a thread variant (PostgreSQL) the in-loop durable ceiling stands in for it.
  const durableThread = byName('durable-thread') ?? durable
  const services = targets.filter((t) => t.name.startsWith('service@') || t.name === 'baseline')
  const [small, big] = services
  const baseline = byName('baseline')
  const memory = Object.fromEntries(services.map((t) => [t.name, memorySamples.read(t.child)]))
  const summary = settings.ops.map((op) => {
    const of = (t: Target) => {
      const rounds = figures[op][t.name]
      return {
        rps: median(rounds.map((f) => f.rps)),
        p50: median(rounds.map((f) => f.p50)),
        p99: median(rounds.map((f) => f.p99)),
        cpuUs: median(rounds.map((f) => f.cpuUs ?? NaN)),
        loopCpuUs: median(rounds.map((f) => f.loopCpuUs ?? NaN)),
        otherCpuUs: median(rounds.map(otherCpuUs)),
        failures: rounds.reduce((n, f) => n + f.non2xx + f.errors, 0)
      }
    }
    // Ratios pair each round with the base's round next to it, then take the median: drift cancels out.
    // Rounds whose base figure is below `least` are left out (a CPU share of a few µs is within a
    // clock tick's rounding: 10 ms over a round's requests).
    const roundRatio = (t: Target, base: Target, part: (f: Figures) => number, least = -Infinity): number => {
      const bases = figures[op][base.name]
      const ratios = figures[op][t.name].flatMap((f, i) => (bases[i] !== undefined && part(bases[i]) >= least ? [part(f) / part(bases[i])] : []))
      return ratios.length === 0 ? NaN : round2(median(ratios))
    }
    const pairRatio = (t: Target, key: 'rps' | 'p99', base: Target) => roundRatio(t, base, (f) => f[key])
    // Event loop and other threads against the durable ceiling's.
    const split = (t: Target) => ({
      loop: roundRatio(t, durableThread, (f) => f.loopCpuUs ?? NaN, 5),
      other: roundRatio(t, durableThread, otherCpuUs, 5)
    })
    return {
      op,
      split: Object.fromEntries(services.concat(durableThread).map((t) => [t.name, split(t)])),
      ceiling: of(ceiling),
      floor: of(floor),
      durable: of(durable),
      durableThread: of(durableThread),
      small: of(small),
      big: of(big),
      ratio: { rps: pairRatio(small, 'rps', ceiling), p99: pairRatio(small, 'p99', ceiling) },
      cpuRatio: round2(of(ceiling).cpuUs / of(small).cpuUs),
      // The gap split in two: the framework's share (floor/ceiling) and the service's own (service/floor).
      floorRatio: { rps: pairRatio(floor, 'rps', ceiling), p99: pairRatio(floor, 'p99', ceiling) },
      overFloor: { rps: pairRatio(small, 'rps', floor), cpu: round2(of(small).cpuUs / of(floor).cpuUs) },
      // Against the durable ceiling: the same storage work and durability with nothing else.
      durableRatio: { rps: pairRatio(durable, 'rps', ceiling), p99: pairRatio(durable, 'p99', ceiling) },
      overDurable: { rps: pairRatio(small, 'rps', durable), p99: pairRatio(small, 'p99', durable), cpu: round2(of(small).cpuUs / of(durable).cpuUs) },
      bigOverDurable: { rps: pairRatio(big, 'rps', durable), p99: pairRatio(big, 'p99', durable) },
      overDurableThread: { rps: pairRatio(small, 'rps', durableThread), p99: pairRatio(small, 'p99', durableThread), cpu: round2(of(small).cpuUs / of(durableThread).cpuUs) },
      bigRatio: { rps: pairRatio(big, 'rps', ceiling), p99: pairRatio(big, 'p99', ceiling) },
      scaling: { rps: pairRatio(big, 'rps', small), p99: pairRatio(big, 'p99', small) },
      ...(baseline ? { baseline: of(baseline), overBaseline: { rps: pairRatio(small, 'rps', baseline), p99: pairRatio(small, 'p99', baseline) } } : {})
    }
  })

  const n = (x: number): string => Number.isFinite(x) ? (x >= 100 ? String(Math.round(x)) : String(round2(x))) : '-'
  const lines = [
    '',
    `| op | ceiling req/s | p50 | p99 | µs CPU/req | service@${settings.small} req/s | p50 | p99 | µs CPU/req | ×ceiling req/s | ×ceiling p99 | ceiling/service CPU | ` +
      `service@${settings.big} req/s | p50 | p99 | ×ceiling req/s | ${settings.big}/${settings.small} req/s | ${settings.big}/${settings.small} p99 |`,
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...summary.map((s) => `| ${s.op} | ${n(s.ceiling.rps)} | ${n(s.ceiling.p50)} | ${n(s.ceiling.p99)} | ${n(s.ceiling.cpuUs)} | ` +
      `${n(s.small.rps)} | ${n(s.small.p50)} | ${n(s.small.p99)} | ${n(s.small.cpuUs)} | ${s.ratio.rps} | ${s.ratio.p99} | ${s.cpuRatio} | ` +
      `${n(s.big.rps)} | ${n(s.big.p50)} | ${n(s.big.p99)} | ${s.bigRatio.rps} | ${s.scaling.rps} | ${s.scaling.p99} |`),
    '',
    '| op | Fastify floor req/s | p99 | µs CPU/req | floor ×ceiling req/s | floor ×ceiling p99 | service ×floor req/s | service/floor CPU |',
    '|---|--:|--:|--:|--:|--:|--:|--:|',
    ...summary.map((s) => `| ${s.op} | ${n(s.floor.rps)} | ${n(s.floor.p99)} | ${n(s.floor.cpuUs)} | ${s.floorRatio.rps} | ${s.floorRatio.p99} | ` +
      `${s.overFloor.rps} | ${s.overFloor.cpu} |`),
    '',
    `| op | durable ceiling req/s | p50 | p99 | µs CPU/req | durable ×ceiling req/s | service@${settings.small} ×durable req/s | ×durable p99 | service/durable CPU | ` +
      `service@${settings.big} ×durable req/s | ×durable p99 |`,
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...summary.map((s) => `| ${s.op} | ${n(s.durable.rps)} | ${n(s.durable.p50)} | ${n(s.durable.p99)} | ${n(s.durable.cpuUs)} | ${s.durableRatio.rps} | ` +
      `${s.overDurable.rps} | ${s.overDurable.p99} | ${s.overDurable.cpu} | ${s.bigOverDurable.rps} | ${s.bigOverDurable.p99} |`),
    ...(durableThread !== durable
      ? ['',
          `| op | durable ceiling, writer thread, req/s | p50 | p99 | µs CPU/req | service@${settings.small} ×durable-thread req/s | ×durable-thread p99 | service/durable-thread CPU |`,
          '|---|--:|--:|--:|--:|--:|--:|--:|',
          ...summary.map((s) => `| ${s.op} | ${n(s.durableThread.rps)} | ${n(s.durableThread.p50)} | ${n(s.durableThread.p99)} | ${n(s.durableThread.cpuUs)} | ` +
            `${s.overDurableThread.rps} | ${s.overDurableThread.p99} | ${s.overDurableThread.cpu} |`)]
      : []),
    '',
    // Where the CPU of a request goes: the event loop (HTTP, the framework, the service's own work)
    // and every other thread (the SQLite writer thread's commits, V8's GC helpers, libuv's pool),
    // each beside the durable ceiling's. Not for the operations only the service serves.
    `| op | target | µs CPU/req: event loop | other threads | event loop ÷ ${durableThread.name} | other threads ÷ ${durableThread.name} |`,
    '|---|---|--:|--:|--:|--:|',
    ...summary.filter((s) => figures[s.op][durableThread.name].length > 0).flatMap((s) => {
      const row = (name: string, t: typeof s.small, target: Target): string => `| ${s.op} | ${name} | ${n(t.loopCpuUs)} | ${n(t.otherCpuUs)} | ` +
        `${n(s.split[target.name].loop)} | ${n(s.split[target.name].other)} |`
      return [row(durableThread.name, s.durableThread, durableThread), row(small.name, s.small, small), ...(baseline ? [row('baseline', s.baseline!, baseline)] : [])]
    }),
    ...(baseline
      ? ['', ...summary.filter((s) => figures[s.op].baseline.length > 0).map((s) => `${s.op}: baseline ${n(s.baseline!.rps)} req/s, p99 ${n(s.baseline!.p99)} ms, ${n(s.baseline!.cpuUs)} µs CPU/req; ` +
      `service/baseline: req/s ${s.overBaseline!.rps}, p99 ${s.overBaseline!.p99}, CPU/req ${round2(s.small.cpuUs / s.baseline!.cpuUs)}`)]
      : []),
    ...findingAndWritesTable(summary, baseline),
    '',
    `latency in ms; ratios are medians of per-round ratios; failures (non-2xx + errors): ${summary.map((s) => `${s.op} ${s.small.failures + s.big.failures + s.ceiling.failures + s.floor.failures + s.durable.failures + s.durableThread.failures}`).join(', ')}`,
    ...services.map((t) => `${t.name}: cold start ${t.coldStartMs} ms, peak RssAnon ${memory[t.name].peakAnonMb} MB (the process's own), peak RssFile ${memory[t.name].peakFileMb} MB, peak RSS ${memory[t.name].peakMb} MB, RSS at the end ${memory[t.name].rssMb} MB`),
    `preload through the store: ${sizes.map((s) => `${s} at ${preloadRate[s]} plants/s`).join(', ')}`
  ]
  return {
    lines,
    result: { summary, memory, coldStartMs: Object.fromEntries(targets.map((t) => [t.name, t.coldStartMs])), preloadRate, rounds: figures }
  }
}

async function main (): Promise<void> {
  log(`bench: ${engine}, ${settings.runtime}, ${settings.rounds} round(s) of ${settings.seconds}s after ${settings.warmSeconds}s warm-up, ` +
    `${settings.connections} connections, catalogues of ${settings.small} and ${settings.big}, ${pinned ? 'servers on core 0, load on core 1' : 'NOT pinned (no taskset or one core)'}, ` +
    (settings.seedOnly ? 'the seed\'s fields only (--seed-only)' : 'writes carry the store fields where a target has them'))
  if (settings.runtime === 'dist') {
    // tsc emits despite type errors; a type error elsewhere in a shared tree should not stop a
    // measurement, but it is reported, and a build that emitted nothing is fatal.
    const before = Date.now()
    const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' })
    if (build.status !== 0) {
      if (!existsSync(join(ROOT, 'dist/src/server.js')) || statSync(join(ROOT, 'dist/src/server.js')).mtimeMs < before - 1000) {
        throw new Error(`npm run build failed:\n${build.stdout}${build.stderr}`)
      }
      log(`warning: the build reported type errors (measuring what it emitted):\n${build.stdout.trim().split('\n').slice(0, 5).join('\n')}`)
    }
  }
  const tmp = mkdtempSync(join(tmpdir(), 'plant-bench-'))
  const targets: Target[] = []
  const load = startLoad()
  const memorySamples = memorySampler()
  const pgDatabases: string[] = []
  let failed = true
  try {
    const measured = settings.ops.length > 0 ? await measureTargets(tmp, load, memorySamples, pgDatabases, targets) : undefined
    const photos = settings.photos ? await photoPhase(tmp, load, pgDatabases) : undefined
    const phase = phaseContext(tmp, load, memorySamples, pgDatabases, targets)
    let bulk: BulkFigures | undefined
    if (settings.batches || settings.importRows > 0) {
      bulk = { connections: settings.connections, importRows: settings.importRows }
      if (settings.batches) bulk.batches = await measureBatches(phase)
      if (settings.importRows > 0) bulk.imports = await measureImport(phase, settings.importRows, tmp)
    }
    const hooks = settings.webhooks ? await measureWebhooks(phase) : undefined
    const history = settings.history ? await measureHistory(phase) : undefined
    const keys = settings.keys ? await measureKeys(phase) : undefined
    const hold = settings.hold ? await measureReadsHold(phase, settings.holdSizes, loadavg) : undefined
    const reservations = settings.reservations ? await measureReservations(phase, loadavg) : undefined
    const stock = settings.stock.length > 0 ? await measureStock(phase, settings.stock, settings.stockBig, loadavg) : undefined
    const lines = [...measured?.lines ?? [], ...(photos ? photoTable(photos) : []), ...(bulk ? bulkTable(bulk) : []), ...(hooks ? webhookTable(hooks) : []),
      ...(history ? historyTable(history) : []), ...(keys ? keyTable(keys) : []), ...(hold ? holdTable(hold) : []),
      ...(reservations ? reservationTable(reservations) : []), ...(stock ? stockTable(stock) : [])]
    process.stdout.write(`${lines.join('\n')}\n`)

    const result = {
      at: new Date().toISOString(),
      engine,
      settings: { ...settings, pinned, cpus: cpus().map((c) => c.model)[0], node: process.version },
      ...measured?.result,
      photos,
      bulk,
      webhooks: hooks,
      history,
      keys,
      hold,
      reservations,
      stock
    }
    const dir = join(ROOT, 'bench/results')
    mkdirSync(dir, { recursive: true })
    const file = join(dir, `${result.at.replace(/[:.]/g, '-')}-${engine}${quick ? '-quick' : ''}.json`)
    writeFileSync(file, JSON.stringify(result, null, 2))
    writeFileSync(join(dir, 'latest.json'), JSON.stringify(result, null, 2))
    log(`written ${file}`)
    failed = false
  } finally {
    load.close()
    memorySamples.stop()
    for (const t of targets) await stop(t.child)
    for (const name of pgDatabases) await dropPostgres(name).catch(() => {})
    // Kept after a failure: the servers' logs are in it.
    if (failed) log(`logs kept in ${tmp}`)
    else rmSync(tmp, { recursive: true, force: true })
  }
}

main().catch((err) => {
  log(`bench failed: ${err instanceof Error ? err.stack : String(err)}`)
  process.exit(1)
})
