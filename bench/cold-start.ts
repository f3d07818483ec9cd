import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { get as httpGet } from 'node:http'
import module from 'node:module'
import { createServer } from 'node:net'
import { availableParallelism, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'

// node --import tsx bench/cold-start.ts [--runs=10]   (after npm run build)
//
// Cold start: from spawning `node dist/src/server.js` to the first 200 from /readyz, polled every
// 2 ms, the median of N starts on the same SQLite data folder (migrated by an unmeasured first start).
// Measured plain, and with Node's module compile cache (NODE_COMPILE_CACHE, Node 22.1 and later;
// the cache is filled by an unmeasured start first). On an older Node the second row says so.

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..')
const runs = Number(process.argv.find((a) => a.startsWith('--runs='))?.split('=')[1] ?? 10)
const pinned = availableParallelism() >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0
const compileCache = typeof (module as { enableCompileCache?: unknown }).enableCompileCache === 'function'

async function freePort (): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })
}

const status = (url: string): Promise<number> => new Promise((resolve) => {
  const req = httpGet(url, { agent: false }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode ?? 0)) })
  req.on('error', () => resolve(0))
})

/** Milliseconds from spawn to the first /readyz 200. */
async function start (env: Record<string, string>): Promise<number> {
  const port = await freePort()
  const command = [process.execPath, 'dist/src/server.js']
  const [bin, argv] = pinned ? ['taskset', ['-c', '0', ...command]] : [command[0], command.slice(1)]
  const began = performance.now()
  const child = spawn(bin, argv, {
    cwd: ROOT,
    stdio: 'ignore',
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'warn', NODE_ENV: 'production', ...env }
  })
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
      if (await status(`http://127.0.0.1:${port}/readyz`) === 200) return performance.now() - began
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

async function measure (name: string, env: Record<string, string>): Promise<void> {
  await start(env) // unmeasured: migrates the folder, fills the compile cache
  const times: number[] = []
  for (let i = 0; i < runs; i++) times.push(await start(env))
  process.stdout.write(`| ${name} | ${Math.round(median(times))} | ${Math.round(Math.min(...times))} | ${Math.round(Math.max(...times))} |\n`)
}

const tmp = mkdtempSync(join(tmpdir(), 'plant-cold-start-'))
try {
  process.stdout.write(`cold start, ${runs} starts each, node ${process.version}, ${pinned ? 'on core 0' : 'not pinned'}\n\n| how | median ms | min | max |\n|---|--:|--:|--:|\n`)
  const dataDir = join(tmp, 'data')
  await measure('node dist/src/server.js', { DATA_DIR: dataDir })
  if (compileCache) await measure('with NODE_COMPILE_CACHE', { DATA_DIR: dataDir, NODE_COMPILE_CACHE: join(tmp, 'compile-cache') })
  else process.stdout.write(`| with NODE_COMPILE_CACHE | - (Node ${process.version} has no module compile cache; it needs 22.1 or later) | | |\n`)
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
