// `npm test`: every tier of the suite, one after the other, each file a process of its own; the
// summary at the end names each tier's time and outcome. `npm run test:fast` runs the first tier
// alone, while working. `npm test` builds once before (its pretest): tests use that build and never
// make one of their own. A tier's files run side by side where they can:
//  - app: the app in this process, through inject or an in-process socket (CONCURRENCY files at once);
//  - process: the service, the CLI and the deploy recipes as processes of their own;
//  - browser: the staff page in Chromium.
// The fault runs (kill -9 under load, disk errors) are `npm run test:faults`, which CI runs too.
import { spawn } from 'node:child_process'
import { availableParallelism } from 'node:os'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

const CONCURRENCY = Number(process.env.TEST_CONCURRENCY) || Math.max(2, availableParallelism())
const TIERS = {
  app: { concurrency: CONCURRENCY * 2 },
  process: { concurrency: CONCURRENCY },
  browser: { concurrency: CONCURRENCY },
  faults: { concurrency: 1 }
}

const asked = process.argv.slice(2)
const tiers = asked.length > 0 ? asked : ['app', 'process', 'browser']
const unknown = tiers.filter((t) => !(t in TIERS))
if (unknown.length > 0) {
  process.stderr.write(`unknown tier ${unknown.join(', ')}: the tiers are ${Object.keys(TIERS).join(', ')}\n`)
  process.exit(2)
}

const results = []
for (const tier of tiers) {
  const dir = join('test', tier)
  const files = readdirSync(dir).filter((name) => name.endsWith('.test.ts')).sort().map((name) => join(dir, name))
  const started = Date.now()
  const code = await new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', `--test-concurrency=${TIERS[tier].concurrency}`, ...files], { stdio: 'inherit' })
    child.on('exit', (c, signal) => resolve(c ?? signal))
  })
  results.push({ tier, files: files.length, seconds: (Date.now() - started) / 1000, code })
}
process.stdout.write('\n# tiers\n')
for (const r of results) process.stdout.write(`# ${r.tier}: ${r.files} files in ${r.seconds.toFixed(1)} s, ${r.code === 0 ? 'passed' : `FAILED (${r.code})`}\n`)
process.exit(results.every((r) => r.code === 0) ? 0 : 1)
