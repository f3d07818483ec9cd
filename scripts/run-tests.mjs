// `npm test`: every tier of the suite, one after the other; the summary at the end names each
// tier's time and outcome. `npm run test:fast` runs the app tier alone, while working. `npm test`
// builds once before (its pretest): tests use that build and never make one of their own.
//  - app: the app in the test's own process, through inject or an in-process socket. Loading tsx
//    and the service's modules costs a process more CPU than most of these files take to run:
//    the files are dealt into a few processes (shards), which run side by side;
//  - process: the service, the CLI and the deploy recipes as processes of their own;
//  - browser: the staff page and the docs page in Chromium, every file in one process with one
//    Chromium (a process and a Chromium a file cost seconds of CPU each), one test at a time: two
//    at once loaded the machine so that a scanner's keys (told apart from typing by their timing)
//    came too far apart;
//  - faults: kill -9 under load, SIGTERM, disk errors (`npm run test:faults`; CI runs it too).
// TEST_CONCURRENCY sets how many processes run at once (the cores by default, at least 2).
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'

const CONCURRENCY = Number(process.env.TEST_CONCURRENCY) || Math.max(2, availableParallelism())
/** concurrency: processes at once; shards: files dealt into this many processes (0: a process a file). */
const TIERS = {
  app: { concurrency: CONCURRENCY * 2, shards: CONCURRENCY * 4 },
  process: { concurrency: CONCURRENCY, shards: 0 },
  browser: { concurrency: 1, shards: 1 },
  faults: { concurrency: 2, shards: 0 }
}

const asked = process.argv.slice(2)
const tiers = asked.length > 0 ? asked : ['app', 'process', 'browser']
const unknown = tiers.filter((t) => !(t in TIERS))
if (unknown.length > 0) {
  process.stderr.write(`unknown tier ${unknown.join(', ')}: the tiers are ${Object.keys(TIERS).join(', ')}\n`)
  process.exit(2)
}

/**
 * `files` dealt into `count` entry files, each importing its share: the largest first, each to the
 * lightest shard so far (by bytes, a rough measure of a file's work).
 */
function shard (files, count, dir) {
  const shards = Array.from({ length: Math.min(count, files.length) }, () => ({ bytes: 0, files: [] }))
  for (const file of [...files].sort((a, b) => statSync(b).size - statSync(a).size)) {
    const lightest = shards.reduce((a, b) => (b.bytes < a.bytes ? b : a))
    lightest.files.push(file)
    lightest.bytes += statSync(file).size
  }
  return shards.map((s, i) => {
    const entry = join(dir, `shard-${i + 1}.test.mjs`)
    writeFileSync(entry, s.files.sort().map((f) => `import ${JSON.stringify(pathToFileURL(resolve(f)).href)}\n`).join(''))
    return entry
  })
}

const results = []
for (const tier of tiers) {
  const { concurrency, shards } = TIERS[tier]
  const folder = join('test', tier)
  const files = readdirSync(folder).filter((name) => name.endsWith('.test.ts')).sort().map((name) => join(folder, name))
  const dir = mkdtempSync(join(tmpdir(), `plants-${tier}-`))
  const entries = shards > 0 ? shard(files, shards, dir) : files
  const started = Date.now()
  const code = await new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${concurrency}`, ...entries], { stdio: 'inherit' })
    child.on('exit', (c, signal) => resolve(c ?? signal))
  })
  rmSync(dir, { recursive: true, force: true })
  results.push({ tier, files: files.length, processes: entries.length, seconds: (Date.now() - started) / 1000, code })
}
// The tiers run one after the other: run at once, the process and browser tiers took longer than
// in turn (both need the CPU more than they wait), and timing-bound tests failed.
process.stdout.write('\n# tiers\n')
for (const r of results) {
  process.stdout.write(`# ${r.tier}: ${r.files} files in ${r.processes} processes, ${r.seconds.toFixed(1)} s, ${r.code === 0 ? 'passed' : `FAILED (${r.code})`}\n`)
}
process.exit(results.every((r) => r.code === 0) ? 0 : 1)
