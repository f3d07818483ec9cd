import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

// The bench's event-loop probe (bench/loop-probe.mjs) is preloaded with --import, which worker
// threads inherit. It must report the main thread's loop only: the SQLite writer's thread holds its
// own loop through each write by design, and was once read as the service's (the bulk phase's figures).

const PROBE = join(import.meta.dirname, '../..', 'bench', 'loop-probe.mjs')

// A worker holds its own loop 400 ms; then the main thread holds its loop 150 ms. The worker is a
// file, as the writer thread is when the service runs from dist (an eval'd worker runs no --import).
const WORKER = 'const end = Date.now() + 400; while (Date.now() < end); setTimeout(() => {}, 300)'
const SCRIPT = `
import { Worker } from 'node:worker_threads'
const hold = (ms) => { const end = Date.now() + ms; while (Date.now() < end); }
const worker = new Worker(new URL('./worker.mjs', import.meta.url))
await new Promise((resolve) => worker.once('exit', resolve))
setTimeout(() => { hold(150); setTimeout(() => {}, 300) }, 200)
`

test('the bench loop probe measures the main thread, not the worker threads that inherit it', () => {
  const dir = mkdtempSync(join(tmpdir(), 'loop-probe-'))
  try {
    const script = join(dir, 'script.mjs')
    const out = join(dir, 'loop.txt')
    writeFileSync(script, SCRIPT)
    writeFileSync(join(dir, 'worker.mjs'), WORKER)
    const run = spawnSync(process.execPath, ['--import', PROBE, script], { env: { ...process.env, LOOP_PROBE_FILE: out }, encoding: 'utf8', timeout: 20_000 })
    assert.equal(run.status, 0, run.stderr)
    const longest = readFileSync(out, 'utf8').trim().split('\n').map((line) => Number(line.split(' ')[1]))
    assert.ok(longest.length >= 5, `windows written: ${longest.length}`)
    const max = Math.max(...longest)
    assert.ok(max >= 140, `the main thread's 150 ms hold is seen (longest ${max} ms)`)
    assert.ok(max < 400, `the worker's 400 ms hold is not counted (longest ${max} ms)`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
