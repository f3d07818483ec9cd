import { spawn, spawnSync } from 'node:child_process'
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parse } from 'csv-parse/sync'
import { plantFor } from './plants.js'

// node --import tsx bench/import-memory.ts [--rows=200000,1000000] [--steps=dry,import,again,update] [DIR …]
//
// The peak memory of `plants import` as its file grows (a dry run's memory once grew with
// its file). For each size N a CSV of N new plants is written once (bench/plants.ts: every
// store field, a SKU on 4 in 5), then each step is run from each DIR's dist/ in turn (a checkout
// with node_modules, default `.`, built with tsc first), on a data folder of the DIR's own:
//   dry     plants import FILE --dry-run, the folder holding no catalogue yet
//   import  plants import FILE --create: N plants added to a new catalogue
//   again   plants import FILE --dry-run: every row unchanged (its record held by the catalogue)
//   update  plants export, every row's status moved on, plants import of that: N plants updated by id
// Each under /usr/bin/time -v, whose "Maximum resident set size" is the figure, printed with the
// wall time and the load average just before the step; and, from /proc every 200 ms, the peaks of
// RssAnon (the process's own memory) and RssFile (mostly the store's memory map of the catalogue,
// which a step that reads the catalogue fills: it grows with the catalogue, not the file), and the
// most SQLite's temporary files held on disk (the import's working file, import-scratch.ts, and any
// of the store's own, which go to the same folder).

const args = process.argv.slice(2)
const option = (name: string): string | undefined => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1]
const sizes = (option('rows') ?? '200000,1000000').split(',').map(Number)
const steps = (option('steps') ?? 'dry,import').split(',')
const dirs = args.filter((a) => !a.startsWith('--')).map((d) => resolve(d))
if (dirs.length === 0) dirs.push(resolve('.'))
const load = (): string => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
const log = (line: string): void => { process.stderr.write(`${line}\n`) }

for (const dir of dirs) {
  const build = spawnSync(process.execPath, [join(dir, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: dir, encoding: 'utf8' })
  if (build.status !== 0) log(`warning: tsc reported errors in ${dir}:\n${build.stdout.trim().split('\n').slice(0, 5).join('\n')}`)
}

const csvCell = (cell: string | null): string => cell === null ? '' : /[",\r\n]/.test(cell) ? `"${cell.replace(/"/g, '""')}"` : cell

async function generate (file: string, n: number): Promise<void> {
  const out = createWriteStream(file)
  out.write('name,category,tags,status,description,price,sku,barcode\n')
  let text = ''
  for (let i = 0; i < n; i++) {
    const p = plantFor(i)
    text += [p.name, p.category, p.tags.join('|'), p.status, p.description, p.price, p.sku, p.barcode].map(csvCell).join(',') + '\n'
    if (text.length < 1 << 20) continue
    if (!out.write(text)) await new Promise<void>((resolve) => out.once('drain', () => resolve()))
    text = ''
  }
  await new Promise<void>((resolve) => out.end(text, () => resolve()))
}

/** The CLI under /usr/bin/time, now: SQLite's temporary files among its open files (their size), and its RssAnon and RssFile (kB). */
function sample (timePid: number): { scratch: number, anonKb: number, fileKb: number } {
  const now = { scratch: 0, anonKb: 0, fileKb: 0 }
  try {
    for (const child of readFileSync(`/proc/${timePid}/task/${timePid}/children`, 'utf8').trim().split(' ').filter(Boolean)) {
      const status = readFileSync(`/proc/${child}/status`, 'utf8')
      now.anonKb += Number(/RssAnon:\s+(\d+)/.exec(status)?.[1] ?? 0)
      now.fileKb += Number(/RssFile:\s+(\d+)/.exec(status)?.[1] ?? 0)
      for (const fd of readdirSync(`/proc/${child}/fd`)) {
        try {
          if (readlinkSync(`/proc/${child}/fd/${fd}`).includes('etilqs_')) now.scratch += statSync(`/proc/${child}/fd/${fd}`).size
        } catch {}
      }
    }
  } catch {}
  return now
}

interface Step { code: number | null, wall: string, rssMb: number, anonMb: number, fileMb: number, scratchMb: number, stdout: string, stderr: string }

function measured (dir: string, argv: string[]): Promise<Step> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/time', ['-v', process.execPath, join(dir, 'dist/src/cli/plants.js'), ...argv],
      { cwd: dir, env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...(process.env.TMPDIR ? { TMPDIR: process.env.TMPDIR } : {}) }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    const most = { scratch: 0, anonKb: 0, fileKb: 0 }
    const poll = setInterval(() => {
      const now = sample(child.pid!)
      for (const k of ['scratch', 'anonKb', 'fileKb'] as const) most[k] = Math.max(most[k], now[k])
    }, 200)
    // A dry run prints a line a row: only the summary is kept.
    child.stdout.on('data', (c: Buffer) => { stdout = (stdout + c.toString()).slice(-4000) })
    child.stderr.on('data', (c: Buffer) => { stderr = (stderr + c.toString()).slice(-8000) })
    child.on('error', reject)
    child.on('close', (code) => {
      clearInterval(poll)
      const rss = Number(/Maximum resident set size \(kbytes\): (\d+)/.exec(stderr)?.[1])
      const wall = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)/.exec(stderr)?.[1] ?? '?'
      resolve({ code, wall, rssMb: rss / 1024, anonMb: most.anonKb / 1024, fileMb: most.fileKb / 1024, scratchMb: most.scratch / 2 ** 20, stdout, stderr })
    })
  })
}

const tmp = mkdtempSync(join(tmpdir(), 'import-memory-'))
try {
  console.log(`plants import's peak RSS; load ${load()}`)
  console.log('rows       step    dir                              exit   wall       max RSS MB   RssAnon MB   RssFile MB   temp files MB   load before')
  for (const n of sizes) {
    const file = join(tmp, `plants-${n}.csv`)
    await generate(file, n)
    for (const [k, dir] of dirs.entries()) {
      const dataDir = join(tmp, `data-${n}-${k}`)
      for (const step of steps) {
        const before = load()
        let argv = ['import', file, '--data-dir', dataDir, '--quiet']
        if (step === 'dry' || step === 'again') argv.push('--dry-run')
        if (step === 'import') argv.push('--create')
        if (step === 'update') {
          const exported = join(tmp, 'export.csv')
          const out = spawnSync(process.execPath, [join(dir, 'dist/src/cli/plants.js'), 'export', '--data-dir', dataDir, '--output', exported], { cwd: dir, encoding: 'utf8' })
          if (out.status !== 0) throw new Error(`plants export failed: ${out.stderr}`)
          const table = parse(readFileSync(exported)) as string[][]
          const status = table[0].indexOf('status')
          const STATUSES = ['available', 'pending', 'sold']
          for (const row of table.slice(1)) row[status] = STATUSES[(STATUSES.indexOf(row[status]) + 1) % STATUSES.length]
          writeFileSync(exported, table.map((row) => row.map(csvCell).join(',')).join('\n') + '\n')
          argv = ['import', exported, '--data-dir', dataDir, '--quiet']
        }
        const run = await measured(dir, argv)
        if (run.code !== 0) log(`${step} in ${dir} exited ${run.code}:\n${run.stdout.slice(-1000)}${run.stderr.slice(0, 2000)}`)
        console.log(`${String(n).padEnd(10)} ${step.padEnd(7)} ${dir.slice(-32).padEnd(32)} ${String(run.code).padEnd(6)} ${run.wall.padEnd(10)} ` +
          `${run.rssMb.toFixed(0).padStart(10)} ${run.anonMb.toFixed(0).padStart(12)} ${run.fileMb.toFixed(0).padStart(12)} ${run.scratchMb.toFixed(0).padStart(15)}   ${before}`)
      }
      rmSync(dataDir, { recursive: true, force: true })
    }
    rmSync(file, { force: true })
  }
  console.log(`load after ${load()}`)
} finally {
  rmSync(tmp, { recursive: true, force: true })
}
