import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { createWriteStream } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { once } from 'node:events'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs, promisify } from 'node:util'
import Database from 'better-sqlite3'
import { verifyBackup } from '../src/store/sqlite/backup.js'
import { listenOn } from './lib/listening-service.js'

// The tools' figures at scale (run by hand: npm run tools:measure). The tests check the same
// behaviour on small inputs; this shows it holds at 100,000 and 1,000,000 rows, and says how fast.

const { values } = parseArgs({
  options: {
    'import-rows': { type: 'string', default: '100000' },
    'export-rows': { type: 'string', default: '1000000' },
    keep: { type: 'boolean', default: false },
    tsx: { type: 'boolean', default: false }
  }
})
const IMPORT_ROWS = Number(values['import-rows'])
const EXPORT_ROWS = Number(values['export-rows'])
const run = promisify(execFile)
const BUILD = new URL('../test-output/build/', import.meta.url).pathname

// The figures are for the command as installed (compiled JavaScript); --tsx measures the dev mode,
// whose loader alone takes memory of its own. Built apart from dist/ so no one else's build is touched.
let CLI = [new URL('../src/cli/plants.ts', import.meta.url).pathname]
if (values.tsx) {
  CLI = ['--import', 'tsx', ...CLI]
} else {
  await run(process.execPath, [new URL('../node_modules/typescript/bin/tsc', import.meta.url).pathname, '-p', 'tsconfig.build.json', '--outDir', BUILD],
    { cwd: new URL('..', import.meta.url).pathname }).catch((err: { stdout: string }) => {
    // Type errors elsewhere still emit JavaScript; the measurement only needs that.
    process.stderr.write(`tsc reported errors (JavaScript emitted anyway):\n${err.stdout.slice(0, 2000)}\n`)
  })
  CLI = [join(BUILD, 'src/cli/plants.js')]
}

interface Run { ms: number, maxRssMb: number, stdout: string, stderr: string, code: number }

/** Runs the CLI as its own process under /usr/bin/time, for its wall time and peak resident memory. */
async function plants (args: string[], stdoutFile?: string): Promise<Run> {
  const started = Date.now()
  const shell = `/usr/bin/time -f 'MAXRSS_KB=%M' ${[process.execPath, ...CLI, ...args].map(quote).join(' ')}${stdoutFile ? ` > ${quote(stdoutFile)}` : ''}`
  const result = await run('/bin/sh', ['-c', shell], { maxBuffer: 256 * 1024 * 1024 }).then(
    ({ stdout, stderr }) => ({ stdout, stderr, code: 0 }),
    (err: { stdout: string, stderr: string, code: number }) => ({ stdout: err.stdout, stderr: err.stderr, code: err.code }))
  const rss = /MAXRSS_KB=(\d+)/.exec(result.stderr)
  return { ...result, ms: Date.now() - started, maxRssMb: rss ? Number(rss[1]) / 1024 : NaN }
}
const quote = (s: string): string => `'${s.replace(/'/g, "'\\''")}'`
const figure = (stdout: string, what: string): number => Number(new RegExp(`${what}\\s+([\\d,]+)`).exec(stdout)?.[1].replace(/,/g, ''))
const count = (dataDir: string): number => {
  const db = new Database(join(dataDir, 'catalogue.db'), { readonly: true })
  try { return (db.prepare('SELECT count(*) AS n FROM plants').get() as { n: number }).n } finally { db.close() }
}

const BAD = ['   ,x,,', 'Bad status,,,gone', `${'n'.repeat(201)},,,`, 'Dup tags,,a|a,', 'Empty tag,,a||b,', 'Extra cell,,,,x', `Long category,${'c'.repeat(101)},,`]

/** A catalogue CSV: every hundredth row (from line 51) is bad in one of several ways. */
async function writeCsv (file: string, rows: number, badEvery: number): Promise<number[]> {
  const out = createWriteStream(file)
  const badLines: number[] = []
  let chunk = 'name,category,tags,status\n'
  for (let i = 0; i < rows; i++) {
    const line = i + 2
    if (badEvery > 0 && i % badEvery === 49) {
      chunk += `${BAD[badLines.length % BAD.length]}\n`
      badLines.push(line)
    } else {
      chunk += `Plant ${i},${['indoor', 'outdoor', '', 'succulent'][i % 4]},${['green', 'large|green', '', 'rare|small|gift'][i % 4]},${['available', 'pending', 'sold', ''][i % 4]}\n`
    }
    if (chunk.length > 1 << 16) {
      if (!out.write(chunk)) await once(out, 'drain')
      chunk = ''
    }
  }
  out.end(chunk)
  await once(out, 'finish')
  return badLines
}

const work = await mkdtemp(join(tmpdir(), 'plants-measure-'))
const report: Record<string, unknown> = { date: new Date().toISOString(), node: process.version, cli: CLI.join(' ') }
const say = (line: string): void => { process.stdout.write(`${line}\n`) }
try {
  // 1. Import: 100,000 rows, 1% bad; then the same file again.
  {
    const file = join(work, 'import.csv')
    const dataDir = join(work, 'import-data')
    const badLines = await writeCsv(file, IMPORT_ROWS, 100)
    const first = await plants(['import', '--create', file, '--data-dir', dataDir])
    const reported = first.stderr.split('\n').filter((l) => l.startsWith(`${file}:`)).map((l) => Number(l.slice(file.length + 1).split(':')[0]))
    assert.deepEqual(reported, badLines, 'every bad row is reported, by its line')
    assert.equal(figure(first.stdout, 'added'), IMPORT_ROWS - badLines.length)
    assert.equal(count(dataDir), IMPORT_ROWS - badLines.length, 'every good row is stored')
    const second = await plants(['import', '--create', file, '--data-dir', dataDir])
    assert.equal(figure(second.stdout, 'added'), 0, 'a second run adds nothing')
    assert.equal(count(dataDir), IMPORT_ROWS - badLines.length)
    report.import = {
      rows: IMPORT_ROWS,
      bad: badLines.length,
      firstRun: { seconds: first.ms / 1000, rowsPerSecond: Math.round(IMPORT_ROWS / (first.ms / 1000)), maxRssMb: first.maxRssMb, summary: first.stdout.trim() },
      secondRun: { seconds: second.ms / 1000, rowsPerSecond: Math.round(IMPORT_ROWS / (second.ms / 1000)), maxRssMb: second.maxRssMb, summary: second.stdout.trim() }
    }
    say(`import: ${IMPORT_ROWS.toLocaleString('en')} rows (${badLines.length} bad, all reported by line): ` +
      `${(first.ms / 1000).toFixed(1)} s, ${Math.round(IMPORT_ROWS / (first.ms / 1000)).toLocaleString('en')} rows/s, peak RSS ${first.maxRssMb.toFixed(0)} MB; ` +
      `second run added 0 in ${(second.ms / 1000).toFixed(1)} s`)
  }

  // 2. Export: a catalogue of 1,000,000 plants (loaded with the import), streamed in both formats.
  const bigDir = join(work, 'export-data')
  {
    const file = join(work, 'export-source.csv')
    await writeCsv(file, EXPORT_ROWS, 0)
    const load = await plants(['import', '--create', file, '--data-dir', bigDir, '--quiet'])
    assert.equal(load.code, 0, load.stderr)
    await rm(file)
    report.load = { rows: EXPORT_ROWS, seconds: load.ms / 1000, rowsPerSecond: Math.round(EXPORT_ROWS / (load.ms / 1000)), maxRssMb: load.maxRssMb }
    say(`load for export: ${EXPORT_ROWS.toLocaleString('en')} rows imported in ${(load.ms / 1000).toFixed(1)} s (${Math.round(EXPORT_ROWS / (load.ms / 1000)).toLocaleString('en')} rows/s), peak RSS ${load.maxRssMb.toFixed(0)} MB`)
    const exports: Record<string, unknown> = {}
    for (const format of ['csv', 'jsonl']) {
      const out = join(work, `export.${format}`)
      const result = await plants(['export', '--data-dir', bigDir, '--format', format], out)
      assert.equal(result.code, 0, result.stderr)
      const { stdout: wc } = await run('wc', ['-l', out])
      const lines = Number(wc.trim().split(' ')[0])
      assert.equal(lines, EXPORT_ROWS + (format === 'csv' ? 1 : 0))
      exports[format] = { seconds: result.ms / 1000, maxRssMb: result.maxRssMb, lines }
      say(`export --format ${format}: ${EXPORT_ROWS.toLocaleString('en')} plants in ${(result.ms / 1000).toFixed(1)} s, peak RSS ${result.maxRssMb.toFixed(0)} MB${result.maxRssMb < 100 ? ' (< 100 MB)' : ' (OVER 100 MB)'}`)
      await rm(out)
    }
    report.export = exports
  }

  // 3. Backup of that catalogue while a service on it takes a steady write load.
  {
    const service = await listenOn(bigDir)
    const acknowledged: number[] = []
    let writing = true
    let failures = 0
    const writer = async (w: number): Promise<void> => {
      for (let i = 0; writing; i++) {
        const res = await fetch(`${service.url}/v3/plant`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: `load ${w}.${i}` }) })
        if (res.status !== 200) { failures++; continue }
        acknowledged.push(((await res.json()) as { id: number }).id)
      }
    }
    const writers = Array.from({ length: 16 }, (_, w) => writer(w))
    while (acknowledged.length < 2000) await new Promise((resolve) => setTimeout(resolve, 20))
    const before = [...acknowledged]
    const file = join(work, 'backup.db')
    const backup = await plants(['backup', file, '--data-dir', bigDir])
    const during = acknowledged.length - before.length
    writing = false
    await Promise.all(writers)
    await service.close()
    assert.equal(backup.code, 0, backup.stderr)
    const check = verifyBackup(file)
    const db = new Database(file, { readonly: true })
    const has = db.prepare<[number], { id: number }>('SELECT id FROM plants WHERE id = ?')
    const missing = before.filter((id) => !has.get(id))
    db.close()
    assert.deepEqual(missing, [], 'every write acknowledged before the backup began is in it')
    report.backup = { seconds: backup.ms / 1000, plants: check.plants, integrity: 'ok', ackedBefore: before.length, ackedWhileBackingUp: during, missing: missing.length, writeFailures: failures, summary: backup.stdout.trim() }
    say(`backup under write load: ${check.plants.toLocaleString('en')} plants in ${(backup.ms / 1000).toFixed(1)} s; integrity_check ok; ` +
      `all ${before.length.toLocaleString('en')} writes acknowledged before it are in it; ${during.toLocaleString('en')} more writes acknowledged while it ran; ${failures} failed writes`)
  }

  const output = new URL('../test-output/', import.meta.url)
  await mkdir(output, { recursive: true })
  await writeFile(new URL('tools-measure.json', output), JSON.stringify(report, null, 2) + '\n')
  say('details: test-output/tools-measure.json')
} finally {
  if (values.keep) say(`kept ${work}`)
  else await rm(work, { recursive: true, force: true })
}
