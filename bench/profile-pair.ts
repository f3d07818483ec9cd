import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { Client } from 'undici'
import { encodeCursor } from '../src/plants/query.js'
import type { PlantStore } from '../src/store/plant-store.js'
import { plantFor, seedPlantFor, storeFieldsIn } from './plants.js'
import { freePort } from './free-port.js'

// node --import tsx bench/profile-pair.ts [--ops=get,list,put,post,patch,sale] [--requests=N] [--turns=K] [--seed-only] DIR [DIR…]
//
// Where a request's CPU goes, checkout against checkout: each DIR (a checkout with node_modules,
// e.g. a worktree of an older commit, and this one as `.`) is built with tsc, preloaded with 1,000
// plants through its own store, and its service run under `node --cpu-prof` on one core. After
// start-up's background compiles have settled, each operation is sent exactly N times (16
// connections), and the profile's samples inside each operation's window are divided by N: µs of
// CPU per request, by function and by package, side by side. A fixed number of requests, not a
// fixed time, so the figures do not move with the machine's load the way req/s does; only the
// event loop is profiled (the SQLite writer thread's commits are not in it).
// Store fields are sent to a checkout that has them, unless --seed-only. `patch` is PATCH {status},
// `sale` a till's sale (a movement of -1 with an Idempotency-Key of its own each): with `sale` among
// the ops every plant is first counted to plenty at main, so no sale runs out.

const args = process.argv.slice(2)
const option = (name: string): string | undefined => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const ops = (option('ops') ?? 'get,list,put,post').split(',')
const requests = Number(option('requests') ?? 20_000)
const seedOnly = args.includes('--seed-only')
/** Measured passes of each operation, the checkouts and the operations taking turns: a drift in the machine's load falls on each alike. */
const turns = Number(option('turns') ?? 1)
/** --no-profile: /proc's CPU figures alone, without the profiler's own cost in them (its thread and its samples' interruptions). */
const profiled = !args.includes('--no-profile')
const dirs = args.filter((a) => !a.startsWith('--')).map((d) => resolve(d))
const PLANTS = 1000
const CONNECTIONS = 16
/** Pots counted at main on every plant before `sale`: more than any run sells. */
const PLENTY = 100_000_000
/** A pass's number, in each sale's Idempotency-Key: a key of an earlier pass would be a replay, not a sale. */
let pass = 0
if (dirs.length === 0) throw new Error('usage: profile-pair.ts [--ops=…] [--requests=N] [--seed-only] DIR [DIR…]')
const log = (line: string): void => { process.stderr.write(`${line}\n`) }

const hasStoreFields = (dir: string): boolean => !seedOnly && storeFieldsIn(dir)

async function preload (dir: string, dataDir: string, full: boolean): Promise<void> {
  const { openSqliteStore } = await import(join(dir, 'src/store/sqlite/sqlite-plant-store.ts')) as { openSqliteStore: (o: object) => Promise<PlantStore> }
  const store = await openSqliteStore({ dataDir, feedRetentionMs: 7 * 86_400_000 })
  await Promise.all(Array.from({ length: PLANTS }, (_, i) => store.create(full ? plantFor(i) : seedPlantFor(i))))
  if (ops.includes('sale')) await Promise.all(Array.from({ length: PLANTS }, (_, i) => store.stock.move(i + 1, { set: PLENTY, reason: 'count' })))
  await store.close()
}

/** CPU time of the process so far, in µs (user + system): all threads, or the main thread alone (the event loop). */
function cpuUs (pid: number, mainThread = false): number {
  const fields = readFileSync(mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 1e6 / CLOCK_TICKS
}
/** CPU time so far of each of the process's threads, in µs, by thread id, with the thread's name. */
function threadsUs (pid: number): Map<string, { name: string, us: number }> {
  const out = new Map<string, { name: string, us: number }>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      const fields = stat.split(') ')[1].split(' ')
      out.set(tid, { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), us: (Number(fields[11]) + Number(fields[12])) * 1e6 / CLOCK_TICKS })
    } catch { /* the thread ended */ }
  }
  return out
}
const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100

/** Waits until the process has used under 5 % of a core for a second: start-up's background compiles are done. */
async function settled (pid: number): Promise<void> {
  let before = cpuUs(pid)
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const now = cpuUs(pid)
    if (now - before < 50_000) return
    before = now
  }
}

const json = { 'content-type': 'application/json' }
const SALE = JSON.stringify({ delta: -1, reason: 'sale' })
const STATUSES = ['available', 'pending', 'sold']
function request (op: string, n: number, full: boolean): { method: 'GET' | 'PUT' | 'POST' | 'PATCH', path: string, headers?: Record<string, string>, body?: string } {
  const id = 1 + ((n * 7919) % PLANTS)
  const fields = (i: number): object => full ? { ...plantFor(i), sku: null } : seedPlantFor(i)
  switch (op) {
    case 'get': return { method: 'GET', path: `/v3/plant/${id}` }
    case 'list': return { method: 'GET', path: `/v3/plant?limit=20&cursor=${encodeCursor({ statuses: [], tags: [], terms: [], sort: 'id' }, { id: Math.max(1, id - 21) })}` }
    // The SKU is left out (null): a PUT of another plant's SKU would be a 409; the other store fields are sent.
    case 'put': return { method: 'PUT', path: '/v3/plant', headers: json, body: JSON.stringify({ id, ...fields(n) }) }
    case 'post': return { method: 'POST', path: '/v3/plant', headers: json, body: JSON.stringify(fields(n)) }
    case 'patch': return { method: 'PATCH', path: `/v3/plant/${id}`, headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ status: STATUSES[n % 3] }) }
    case 'sale': return { method: 'POST', path: `/v3/plant/${id}/stock/movements`, headers: { ...json, 'idempotency-key': `profile-${pass}-${n}` }, body: SALE }
    default: throw new Error(`unknown op ${op}`)
  }
}

/** Sends `requests` of op over CONNECTIONS keep-alive connections; the window is in CLOCK_MONOTONIC µs, as V8's profile times are. */
async function drive (url: string, op: string, full: boolean, pid: number): Promise<Window> {
  let next = 0
  let failed = 0
  pass++
  const [cpuBefore, loopBefore, threadsBefore] = [cpuUs(pid), cpuUs(pid, true), threadsUs(pid)]
  const from = Number(process.hrtime.bigint() / 1000n)
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    const client = new Client(url)
    while (next < requests) {
      const r = request(op, next++, full)
      const res = await client.request(r)
      await res.body.dump()
      if (res.statusCode >= 300) failed++
    }
    await client.close()
  }))
  const to = Number(process.hrtime.bigint() / 1000n)
  // Each thread's CPU but the event loop's: the writer's, the readers', the compiler's, the GC's.
  const threads = new Map<string, number>()
  for (const [tid, { name, us }] of threadsUs(pid)) {
    if (tid === String(pid)) continue
    const used = (us - (threadsBefore.get(tid)?.us ?? 0)) / requests
    // One checkout: each thread apart (its id is the same through the run); several: by name, as ids differ between them.
    const key = dirs.length === 1 ? `${name} ${tid}` : name
    threads.set(key, (threads.get(key) ?? 0) + used)
  }
  return { from, to, failed, cpuUs: (cpuUs(pid) - cpuBefore) / requests, loopUs: (cpuUs(pid, true) - loopBefore) / requests, threads }
}
interface Window { from: number, to: number, failed: number, cpuUs: number, loopUs: number, threads: Map<string, number> }

interface Node { id: number, callFrame: { functionName: string, url: string, lineNumber: number } }
interface Profile { nodes: Node[], samples: number[], timeDeltas: number[], startTime: number }
const place = (url: string): string => url.includes('/node_modules/')
  ? url.replace(/.*\/node_modules\/((@[^/]+\/)?[^/]+).*/, '$1')
  : url.includes('/dist/') ? url.replace(/.*\/dist\//, '') : url.startsWith('node:') ? 'node:internals' : url === '' ? '(native/vm)' : url

/**
 * µs per request by function and by place, from the samples inside the window. Each sample counts
 * as one sampling interval (the median gap), not its own gap: a gap holds the time the thread was
 * not running at all (on a loaded machine, up to tens of ms), which would be charged to whatever
 * was on the stack when it was taken off the core (often a write).
 */
function perRequest (profile: Profile, windows: Window[]): Result {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const interval = [...profile.timeDeltas].sort((a, b) => a - b)[profile.timeDeltas.length >> 1]
  const fn = new Map<string, number>()
  const places = new Map<string, number>()
  let t = profile.startTime
  let total = 0
  profile.samples.forEach((id, i) => {
    t += profile.timeDeltas[i] ?? 0
    if (!windows.some((w) => t >= w.from && t <= w.to)) return
    const f = byId.get(id)!.callFrame
    if (f.functionName === '(idle)') return
    const d = interval / requests / windows.length
    total += d
    const key = `${f.functionName || '(anonymous)'} ${place(f.url)}:${f.lineNumber + 1}`
    fn.set(key, (fn.get(key) ?? 0) + d)
    places.set(place(f.url), (places.get(place(f.url)) ?? 0) + d)
  })
  const mean = (of: (w: Window) => number): number => windows.reduce((sum, w) => sum + of(w), 0) / windows.length
  const threads = new Map([...new Set(windows.flatMap((w) => [...w.threads.keys()]))].map((name) => [name, mean((w) => w.threads.get(name) ?? 0)]))
  return { total, fn, place: places, cpuUs: mean((w) => w.cpuUs), loopUs: mean((w) => w.loopUs), threads }
}
interface Result { total: number, fn: Map<string, number>, place: Map<string, number>, cpuUs: number, loopUs: number, threads: Map<string, number> }

interface Running { dir: string, url: string, full: boolean, child: ChildProcess, profiles: string, windows: Map<string, Window[]> }

/** Builds and preloads a checkout and starts its service; answers once start-up's compiles have settled. */
async function start (dir: string, tmp: string): Promise<Running> {
  const build = spawnSync(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: dir, encoding: 'utf8' })
  if (build.status !== 0) log(`warning: ${dir}: tsc reported errors:\n${build.stdout.trim().split('\n').slice(0, 5).join('\n')}`)
  const full = hasStoreFields(dir)
  const dataDir = join(tmp, `data-${readdirSync(tmp).length}`)
  mkdirSync(dataDir)
  await preload(dir, dataDir, full)
  const profiles = join(tmp, `profiles-${readdirSync(tmp).length}`)
  const port = await freePort()
  const child: ChildProcess = spawn('taskset', ['-c', '0', process.execPath, ...(profiled ? ['--cpu-prof', `--cpu-prof-dir=${profiles}`] : []), join(dir, 'dist/src/server.js')], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'info', NODE_ENV: 'production' },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  const url = `http://127.0.0.1:${port}`
  for (let i = 0; ; i++) {
    try {
      const res = await fetch(`${url}/v3/plant/1`)
      if (res.ok) break
    } catch { /* not listening yet */ }
    if (i > 600) throw new Error(`${dir}: the service did not start`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await settled(child.pid!)
  return { dir, url, full, child, profiles, windows: new Map(ops.map((op) => [op, []])) }
}

/** One measured pass of each operation on a running service. */
async function measuredPass ({ dir, url, full, child, windows }: Running): Promise<void> {
  for (const op of ops) {
    const w = await drive(url, op, full, child.pid!)
    if (w.failed > 0) log(`warning: ${dir} ${op}: ${w.failed} of ${requests} answers were not 2xx`)
    windows.get(op)!.push(w)
  }
}

/** Stops a service and reads its profiles: µs a request by operation. */
async function finish ({ dir, full, child, profiles, windows }: Running): Promise<Map<string, Result>> {
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  await exited
  // CPU.<date>.<time>.<pid>.<thread>.<n>.cpuprofile: thread 0 is the event loop, the others worker threads (the SQLite writer, readers).
  const empty: Profile = { nodes: [], samples: [], timeDeltas: [], startTime: 0 }
  if (!profiled) return new Map(ops.map((op) => [op, perRequest(empty, windows.get(op)!)]))
  const files = readdirSync(profiles).filter((f) => f.endsWith('.cpuprofile')).sort()
  const threadOf = (f: string): string => f.split('.').at(-3) ?? '?'
  const main = files.find((f) => threadOf(f) === '0')!
  const load = (f: string): Profile => JSON.parse(readFileSync(join(profiles, f), 'utf8')) as Profile
  const profile = load(main)
  const workers = files.filter((f) => f !== main).map((f) => ({ thread: threadOf(f), profile: load(f) }))
  log(`${dir}: ${full ? 'store fields sent' : 'the seed\'s fields only'}; profiles ${files.map((f) => join(profiles, f)).join(', ')}`)
  return new Map(ops.map((op) => {
    const result = perRequest(profile, windows.get(op)!)
    // A worker's samples join the tables under its thread's name; its total is a row of its own.
    for (const { thread, profile: p } of workers) {
      const w = perRequest(p, windows.get(op)!)
      result.fn.set(`[worker ${thread}] (all)`, w.total)
      for (const [name, us] of w.fn) result.fn.set(`[worker ${thread}] ${name}`, us)
      for (const [name, us] of w.place) result.place.set(`[worker ${thread}] ${name}`, us)
    }
    return [op, result]
  }))
}

const tmp = mkdtempSync(join(tmpdir(), 'profile-pair-'))
// Every checkout's service runs through the whole measurement, the checkouts taking turns pass by
// pass, so a change in the machine's load falls on each alike (measured one after the other, the
// one measured while another job ran paid for it: 18 µs a sale of the event loop's CPU at load 15).
const running: Running[] = []
for (const dir of dirs) running.push(await start(dir, tmp))
// A first pass warms the JIT and each route's lazily compiled schemas; the later ones are measured.
for (const r of running) for (const op of ops) await drive(r.url, op, r.full, r.child.pid!)
for (let turn = 0; turn < turns; turn++) for (const r of running) await measuredPass(r)
const results: Array<Map<string, Result>> = []
for (const r of running) results.push(await finish(r))
const us = (x: number | undefined): string => (x ?? 0).toFixed(1).padStart(7)
/** Figures of several results side by side: the threads' CPU, then the rows that differ most between the first and the last. */
function sideBySide (title: string, of: Result[], places: number, fns: number): void {
  console.log(`\n## ${title}`)
  console.log(`${of.map((r) => us(r.cpuUs)).join(' ')}  CPU per request, all threads (/proc)`)
  console.log(`${of.map((r) => us(r.loopUs)).join(' ')}  CPU per request, the event loop (/proc)`)
  console.log(`${of.map((r) => us(r.total)).join(' ')}  the event loop, from the profile's samples`)
  for (const name of [...new Set(of.flatMap((r) => [...r.threads.keys()]))].sort()) {
    console.log(`${of.map((r) => us(r.threads.get(name))).join(' ')}  CPU per request, thread ${name} (/proc)`)
  }
  for (const key of ['place', 'fn'] as const) {
    const names = [...new Set(of.flatMap((r) => [...r[key].keys()]))]
    // The rows that differ most between the first and the last, then the largest.
    const rows = names.map((name) => ({ name, values: of.map((r) => r[key].get(name) ?? 0) }))
      .sort((a, b) => Math.abs(b.values[0] - b.values[b.values.length - 1]) - Math.abs(a.values[0] - a.values[a.values.length - 1]))
      .slice(0, key === 'place' ? places : fns)
    console.log(`\nby ${key === 'fn' ? 'function' : 'package or file'}, largest differences first:`)
    for (const row of rows) console.log(`${row.values.map(us).join(' ')}  ${row.name}`)
  }
}
for (const op of ops) {
  sideBySide(`${op}: µs of event-loop CPU per request, ${requests} requests (${dirs.join(' | ')})`, results.map((r) => r.get(op)!), 15, 30)
}
// One checkout and several operations: the operations side by side.
if (dirs.length === 1 && ops.length > 1) {
  sideBySide(`${ops.join(' | ')}: µs of event-loop CPU per request, side by side (${dirs[0]})`, ops.map((op) => results[0].get(op)!), 30, 70)
}
log(`profiles kept in ${tmp}`)
