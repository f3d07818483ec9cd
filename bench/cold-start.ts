import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { get as httpGet } from 'node:http'
import module from 'node:module'
import { availableParallelism, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { freePort } from './free-port.js'

// node --import tsx bench/cold-start.ts [--runs=10] [--no-load] [--baseline=DIR]   (after npm run build)
//
// Cold start: from spawning the service to the first 200 from /readyz, polled every 2 ms, the
// median of N starts on the same SQLite data folder (migrated by an unmeasured first start), for
// each way the build can be run: the esbuild bundle (`npm start`, the package's command) and the
// tsc output it is built beside. The targets take turns, start by start, so a change in the
// machine's load falls on both alike. The service runs on core 0; unless --no-load, a busy
// process spins on core 1 the whole time (the target is measured
// "with another process loading the other core"). Besides wall time, each start's CPU time up to ready (user + system, every thread, from
// /proc), which moves much less with the machine's load. --baseline=DIR adds another checkout's
// bundle (built there, e.g. a git worktree of an older commit), in turn with the others, on a data
// folder of its own: "not slower than before" measured in one run.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const runs = Number(process.argv.find((a) => a.startsWith('--runs='))?.split('=')[1] ?? 10)
const withLoad = !process.argv.includes('--no-load')
const baseline = process.argv.find((a) => a.startsWith('--baseline='))?.split('=')[1]
const twoCores = availableParallelism() >= 2 && spawnSync('taskset', ['-c', '1', 'true']).status === 0
const compileCache = typeof (module as { enableCompileCache?: unknown }).enableCompileCache === 'function'

interface Target { name: string, entry: string, env: Record<string, string>, wall: number[], cpu: number[] }

const status = (url: string): Promise<number> => new Promise((resolve) => {
  const req = httpGet(url, { agent: false }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)) })
  req.on('error', () => resolve(0))
})

/** User + system CPU milliseconds of a process so far, all threads (Linux; NaN elsewhere). */
function cpuMs (pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10 // clock ticks of 10 ms (USER_HZ = 100)
  } catch {
    return Number.NaN
  }
}

/** Wall and CPU milliseconds from spawn to the first /readyz 200. */
async function start (entry: string, env: Record<string, string>): Promise<{ wall: number, cpu: number }> {
  const port = await freePort()
  const command = [process.execPath, entry]
  // taskset execs node: the pid is the service's own.
  const [bin, argv] = twoCores ? ['taskset', ['-c', '0', ...command]] : [command[0], command.slice(1)]
  const began = performance.now()
  const child = spawn(bin, argv, {
    cwd: ROOT,
    stdio: 'ignore',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', NODE_ENV: 'production', ...env }
  })
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${entry} exited with ${child.exitCode}`)
      if (await status(`http://127.0.0.1:${port}/readyz`) === 200) return { wall: performance.now() - began, cpu: cpuMs(child.pid) }
      if (performance.now() - began > 30_000) throw new Error('no /readyz 200 within 30 s')
      await new Promise((resolve) => setTimeout(resolve, 2))
    }
  } finally {
    const exited = new Promise((resolve) => child.once('exit', resolve))
    if (child.exitCode === null) child.kill('SIGTERM')
    await exited
  }
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}

/** A process that keeps core 1 busy until killed. */
function loadOtherCore (): ChildProcess {
  return spawn('taskset', ['-c', '1', process.execPath, '-e', 'for (;;) {}'], { stdio: 'ignore' })
}

for (const entry of ['dist/bundle/server.js', 'dist/src/server.js']) {
  if (!existsSync(join(ROOT, entry))) throw new Error(`${entry} is missing: run npm run build first`)
}
if (baseline !== undefined && !existsSync(join(baseline, 'dist/bundle/server.js'))) throw new Error(`${baseline}/dist/bundle/server.js is missing: build the baseline first`)
const tmp = mkdtempSync(join(tmpdir(), 'plant-cold-start-'))
const dataDir = join(tmp, 'data')
const targets: Target[] = [
  { name: 'bundle: node dist/bundle/server.js (npm start)', entry: 'dist/bundle/server.js', env: { DATA_DIR: dataDir }, wall: [], cpu: [] },
  { name: 'tsc output: node dist/src/server.js', entry: 'dist/src/server.js', env: { DATA_DIR: dataDir }, wall: [], cpu: [] }
]
if (baseline !== undefined) {
  targets.push({ name: `baseline bundle: ${baseline}/dist/bundle/server.js`, entry: join(baseline, 'dist/bundle/server.js'), env: { DATA_DIR: join(tmp, 'baseline-data') }, wall: [], cpu: [] })
}
if (compileCache) {
  targets.push({ name: 'bundle + NODE_COMPILE_CACHE', entry: 'dist/bundle/server.js', env: { DATA_DIR: dataDir, NODE_COMPILE_CACHE: join(tmp, 'compile-cache') }, wall: [], cpu: [] })
}
const load = withLoad && twoCores ? loadOtherCore() : undefined
const loadBefore = loadavg()[0]
try {
  process.stdout.write(`cold start, median of ${runs} starts each, node ${process.version}, ` +
    `${twoCores ? 'the service on core 0' : 'not pinned (taskset or a second core is missing)'}, ` +
    `${load ? 'a busy process spinning on core 1 throughout' : 'no added load'}\n`)
  for (const t of targets) await start(t.entry, t.env) // unmeasured: migrates the folder, fills a compile cache
  for (let i = 0; i < runs; i++) {
    for (const t of targets) {
      const { wall, cpu } = await start(t.entry, t.env)
      t.wall.push(wall)
      t.cpu.push(cpu)
    }
  }
  process.stdout.write(`load average ${loadBefore.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after\n\n` +
    '| how | median ms | min | max | CPU ms to ready (median) | median ÷ tsc output |\n|---|--:|--:|--:|--:|--:|\n')
  const tsc = median(targets[1].wall)
  for (const t of targets) {
    const m = median(t.wall)
    process.stdout.write(`| ${t.name} | ${Math.round(m)} | ${Math.round(Math.min(...t.wall))} | ${Math.round(Math.max(...t.wall))} | ${Math.round(median(t.cpu))} | ${(m / tsc).toFixed(2)} |\n`)
  }
  const before = targets.find((t) => t.name.startsWith('baseline'))
  if (before !== undefined) {
    process.stdout.write(`\nbundle ÷ baseline bundle: ${(median(targets[0].wall) / median(before.wall)).toFixed(2)} wall, ${(median(targets[0].cpu) / median(before.cpu)).toFixed(2)} CPU to ready\n`)
  }
  if (!compileCache) process.stdout.write(`| NODE_COMPILE_CACHE | - (Node ${process.version} has no module compile cache; it needs 22.1 or later) | | | | |\n`)
} finally {
  load?.kill()
  rmSync(tmp, { recursive: true, force: true })
}
